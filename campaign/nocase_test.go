package campaign_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/reference"
	"github.com/chaoskit/chaoskit/sim"
	"github.com/spf13/afero"
)

// smallWrites fsyncs every write, and each fits in one sector: no write can tear otherwise than a
// plain power cut would leave it, so an exhaustive campaign lists no torn case.
var smallWrites = harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
	fsys := env.FS()
	f, err := fsys.Create("log")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	for _, step := range []string{"a", "b", "c"} {
		if _, err := f.WriteString(step); err != nil {
			return nil, err
		}
		if err := f.Sync(); err != nil {
			return nil, err
		}
		env.Mark(step)
	}
	return nil, nil
}}

// What a campaign decides nothing about: torn with no case is decided by the power cases of a
// whole exhaustive campaign, which are what torn's would be; not by those of one capped with
// Cases, which may have left torn cases out, nor without power; callback-dup without an
// asynchronous tool never is.
func TestNoCase(t *testing.T) {
	rn, err := sim.NewRunner(harness.Fresh(smallWrites), sim.Options{Name: "small"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		faults []faults.Kind
		cases  int
		want   []string
	}{
		{[]faults.Kind{faults.Power, faults.Torn}, 0, nil},
		{[]faults.Kind{faults.Power, faults.Torn}, 2, []string{"torn"}},
		{[]faults.Kind{faults.Torn}, 0, []string{"torn"}},
		{[]faults.Kind{faults.Kill, faults.CallbackDup}, 0, []string{"callback-dup"}},
	} {
		got, err := campaign.NoCase(rn, campaign.Options{Faults: tc.faults, Cases: tc.cases})
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("NoCase(%v, cases %d) = %v, %v; want %v", tc.faults, tc.cases, got, err, tc.want)
		}
	}
}

// A random schedule of many faults whose kinds fire only at some beats is placed fault by fault,
// each moved to a beat where it fires; the faults after it stay in order meanwhile, for each
// placement probes a run of the schedule so far. Four such faults used to leave a later fault
// before an earlier one and panic.
func TestRandomPlacementKeepsManyFaultsInOrder(t *testing.T) {
	rn, err := sim.NewRunner(agent(reference.Correct), sim.Options{Name: "reference"})
	if err != nil {
		t.Fatal(err)
	}
	kinds := []faults.Kind{faults.ToolTransient, faults.FsyncFail, faults.ModelError, faults.DiskFull}
	for seed := range uint64(4) {
		o := campaign.Options{Faults: kinds, Mode: campaign.Random, Cases: 300, MaxFaults: 4, Options: sim.Options{Seed: seed}}
		scheds, err := campaign.Schedules(rn, o)
		if err != nil {
			t.Fatal(err)
		}
		long := 0
		for _, s := range scheds {
			if err := s.Validate(); err != nil {
				t.Fatalf("seed %d: %s: %v", seed, s, err)
			}
			if len(s) == 4 {
				long++
			}
		}
		if long == 0 {
			t.Errorf("seed %d: no schedule of four faults among %d", seed, len(scheds))
		}
	}
}

// lastWriter publishes its worker's name as the run's result file, unless one is there already:
// crash-safe as one instance, but two workers race for the name.
var lastWriter = harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
	fsys := env.FS()
	if done, _ := afero.Exists(fsys, "result"); done {
		return nil, nil
	}
	if err := afero.WriteFile(fsys, "result.tmp", []byte(fmt.Sprint("w", env.Worker())), 0o644); err != nil {
		return nil, err
	}
	return nil, fsys.Rename("result.tmp", "result")
}}

// A fleet fault that never fired still made its case run a fleet's workers, so shrinking keeps it
// unless a run without it fails too: the shrunk schedule replays the failure, where a kill alone
// would run one worker, which never fails.
func TestShrinkKeepsAnUnfiredFleetFault(t *testing.T) {
	rn, err := sim.NewRunner(harness.Fresh(lastWriter), sim.Options{Name: "last-writer"})
	if err != nil {
		t.Fatal(err)
	}
	for k := range 12 {
		if c := rn.Run(faults.Schedule{{Kind: faults.Kill, Beat: k}}); c.Failed() {
			t.Fatalf("one worker fails: %s", c)
		}
	}
	for k := range 12 {
		c := rn.Run(faults.Schedule{{Kind: faults.Kill, Beat: k}, {Kind: faults.Deploy, Beat: 500}})
		if !c.Failed() {
			continue
		}
		shrunk := campaign.Shrink(rn, c, campaign.Options{})
		if again := rn.Run(shrunk); !again.Failed() {
			t.Fatalf("%s shrunk to %s, which does not fail:\n%s", c.Schedule, shrunk, again)
		}
		return
	}
	t.Fatal("no kill fails with two workers")
}
