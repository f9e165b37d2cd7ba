package campaign

import (
	"fmt"
	"runtime"
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/chaoskit/chaoskit/sim"
)

// Mode says how a campaign chooses its schedules.
type Mode int

// The modes.
const (
	// Exhaustive runs every fault kind at every beat of the golden run where it applies: a
	// single fault per case, every case.
	Exhaustive Mode = iota
	// Random runs Options.Cases schedules of up to Options.MaxFaults faults each, drawn from
	// the seed, so that faults also land in recoveries, and shrinks each failure to the smallest
	// schedule that still fails.
	Random
)

// String returns "exhaustive" or "random".
func (m Mode) String() string {
	if m == Random {
		return "random"
	}
	return "exhaustive"
}

// parseMode parses "exhaustive" or "random".
func parseMode(s string) (Mode, error) {
	switch s {
	case "exhaustive":
		return Exhaustive, nil
	case "random":
		return Random, nil
	}
	return 0, fmt.Errorf("unknown mode %q (want exhaustive or random)", s)
}

// Options configure a campaign over one target. The zero value is valid: every storage fault
// at every beat, seed 0.
type Options struct {
	// Options say how each case runs: its seed (which also seeds the random schedules), the
	// target's workers, restarts, timeouts.
	sim.Options
	// Faults lists the fault kinds to explore; the default is every storage kind.
	Faults []faults.Kind
	// Mode chooses the schedules; the default is Exhaustive.
	Mode Mode
	// Cases is, in Random mode, how many schedules to run (default 100); in Exhaustive mode, at
	// most how many cases to run, taken evenly across the whole list (default all).
	Cases int
	// MaxFaults is, in Random mode, the most faults in one schedule (default 3).
	MaxFaults int
	// Depth is, in Exhaustive mode, how deep faults nest (default 1: one fault per case). At
	// depth 2 the campaign also lists, after every single-fault case, a kill at each beat of the
	// golden run followed by a power cut (each power mode Faults asks for) at each beat of the
	// recovery, from the restarted process's first beat to its first mark and the beat after
	// it (see sim.Runner.Recovery): a recovery that builds on records the killed process left in the
	// page cache without fsyncing them first loses them to that power cut. It needs kill and
	// power among Faults.
	Depth int
	// LeasePauses are the durations a lease fault freezes a worker for (default 15s, 45s and
	// 2h: shorter than a typical lease, longer, and longer than the time tools remember
	// idempotency keys).
	LeasePauses []time.Duration
	// DiskFullFor is how long the disk stays full in the diskfull faults a campaign lists and
	// draws, diskfull@K:BYTES+DiskFullFor (default 1m of virtual time): a full disk stays full for
	// every process and across restarts, so without space returning no harness that must write
	// could complete. A harness that waits and retries survives it; one that crash-loops or spins
	// on ENOSPC does not. Negative lists and draws them without a duration: the disk stays full to
	// the end of the run.
	DiskFullFor time.Duration
	// NoShrink turns off shrinking of failures in Random mode.
	NoShrink bool
	// Shard, if set, runs only the cases whose index in the list of schedules is Shard.I-1
	// modulo Shard.N.
	Shard reports.Shard
	// Parallel is how many cases run at once (default GOMAXPROCS; the command line's --parallel),
	// not to be confused with the target's workers (Options.Workers). Results do not depend on it.
	Parallel int
	// OnCase, if set, is called with each case as it finishes (after shrinking), in the order
	// cases finish, from one goroutine at a time, with the case's index in the list of
	// schedules.
	OnCase func(index int, c *sim.Case)
}

// DefaultCases is the number of schedules a Random campaign runs when Options.Cases is 0.
const DefaultCases = 100

// DefaultDiskFullFor is how long the disk stays full in a campaign's diskfull faults when
// Options.DiskFullFor is 0.
const DefaultDiskFullFor = time.Minute

// diskFullDur is the duration a campaign gives its diskfull faults: 0 (none) for a negative
// Options.DiskFullFor. o has its defaults.
func (o Options) diskFullDur() time.Duration { return max(0, o.DiskFullFor) }

// withDefaults fills in the defaults. It panics on an unknown fault kind, a misuse.
func (o Options) withDefaults() Options {
	if len(o.Faults) == 0 {
		o.Faults = faults.StorageKinds()
	}
	for _, k := range o.Faults {
		if _, ok := k.Info(); !ok {
			panic(fmt.Sprintf("campaign: Options.Faults holds unknown kind %q", k))
		}
	}
	if o.Mode == Random && o.Cases == 0 {
		o.Cases = DefaultCases
	}
	if o.MaxFaults <= 0 {
		o.MaxFaults = 3
	}
	if o.DiskFullFor == 0 {
		o.DiskFullFor = DefaultDiskFullFor
	}
	if len(o.LeasePauses) == 0 {
		o.LeasePauses = []time.Duration{15 * time.Second, 45 * time.Second, 2 * time.Hour}
	}
	if o.Parallel <= 0 {
		o.Parallel = runtime.GOMAXPROCS(0)
	}
	return o
}
