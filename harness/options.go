package harness

import (
	"fmt"
	"runtime"
	"time"

	"github.com/chaoskit/chaoskit/faults"
)

// Mode says how a campaign chooses its schedules.
type Mode int

// The modes.
const (
	// Exhaustive runs every fault kind at every beat of the golden run where it applies: a
	// single fault per case, every case.
	Exhaustive Mode = iota
	// Random runs schedules of up to MaxFaults faults drawn from the seed, so that faults also
	// land in recoveries, and shrinks each failure to the smallest schedule that still fails.
	Random
)

func (m Mode) String() string {
	if m == Random {
		return "random"
	}
	return "exhaustive"
}

// ParseMode parses "exhaustive" or "random".
func ParseMode(s string) (Mode, error) {
	switch s {
	case "exhaustive":
		return Exhaustive, nil
	case "random":
		return Random, nil
	}
	return 0, fmt.Errorf("unknown mode %q (want exhaustive or random)", s)
}

// Options configure a campaign. The zero value is valid: every storage fault at every beat,
// seed 0.
type Options struct {
	// Name names the target in reports and replay commands; the default is "target".
	Name string
	// Faults lists the fault kinds to explore; the default is every storage kind.
	Faults []faults.Kind
	// Mode chooses the schedules; the default is Exhaustive.
	Mode Mode
	// Cases is, in Random mode, how many schedules to run (default 100); in Exhaustive mode, at
	// most how many cases to run, taken evenly across the whole list (default all).
	Cases int
	// MaxFaults is, in Random mode, the most faults in one schedule (default 3).
	MaxFaults int
	// Seed seeds everything random: the processes' random sources, torn garbage, the choice of
	// a corrupted byte, the random schedules.
	Seed uint64
	// Workers is how many cases run at once (default GOMAXPROCS). Results do not depend on it.
	Workers int
	// Replicas is how many workers of the target run at once against the one disk and world,
	// as a fleet does (default 1): they take turns under a seeded cooperative scheduler,
	// switching only at beats, so every interleaving is reproducible.
	Replicas int
	// FleetReplicas is how many workers run the cases with a fleet fault (lease, deploy,
	// switch), which take several to mean anything (default 2, and at least Replicas).
	FleetReplicas int
	// LeasePauses are the durations a lease fault freezes a worker for in a campaign (default
	// 15s, 45s and 2h: shorter than a typical lease, longer, and longer than the time tools
	// remember idempotency keys).
	LeasePauses []time.Duration
	// MaxRestarts is how many restarts a case may take before its run counts as not
	// completing (default 10).
	MaxRestarts int
	// Timeout is how long, in wall-clock time, a process may go without a beat before it counts
	// as hung and its case as unknown (default 10s).
	Timeout time.Duration
	// RestartDelay is the virtual time a restart takes (default 1s).
	RestartDelay time.Duration
	// WorkLostSlack is how many beats beyond the work in flight a restart may redo (default 0).
	WorkLostSlack int
	// Sector is the unit at which writes tear (default 512 bytes).
	Sector int
	// NoShrink turns off shrinking of failures in Random mode.
	NoShrink bool
	// NoDerive makes every case re-run the golden prefix instead of deriving its crash state
	// from the recorded golden run. Results are the same, only slower; it exists to check that.
	NoDerive bool
	// Repro returns the command that replays a case; the default is a chaoskit replay command.
	Repro func(schedule faults.Schedule) string
	// Progress, if set, is called after each case with the cases done, the total, and the
	// failures so far. It is called from one goroutine at a time.
	Progress func(done, total, failed int)
	// OnCase, if set, is called with each case as it finishes (after shrinking), in the order
	// cases finish, from one goroutine at a time: to journal a campaign as it runs.
	OnCase func(c *Case)
}

func (o Options) withDefaults() Options {
	if o.Name == "" {
		o.Name = "target"
	}
	if len(o.Faults) == 0 {
		o.Faults = faults.StorageKinds()
	}
	for _, k := range o.Faults {
		if _, ok := k.Info(); !ok {
			panic(fmt.Sprintf("harness: Options.Faults holds unknown kind %q", k))
		}
	}
	if o.Mode == Random && o.Cases == 0 {
		o.Cases = 100
	}
	if o.MaxFaults <= 0 {
		o.MaxFaults = 3
	}
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if o.Replicas <= 0 {
		o.Replicas = 1
	}
	if o.FleetReplicas <= 0 {
		o.FleetReplicas = 2
	}
	if len(o.LeasePauses) == 0 {
		o.LeasePauses = []time.Duration{15 * time.Second, 45 * time.Second, 2 * time.Hour}
	}
	if o.MaxRestarts <= 0 {
		o.MaxRestarts = 10
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.RestartDelay <= 0 {
		o.RestartDelay = time.Second
	}
	if o.Sector <= 0 {
		o.Sector = 512
	}
	if o.Repro == nil {
		name, seed := o.Name, o.Seed
		o.Repro = func(s faults.Schedule) string {
			return fmt.Sprintf("chaoskit replay --target %s --seed %d --schedule '%s'", name, seed, s)
		}
	}
	return o
}
