package process_test

import (
	"testing"

	"github.com/chaoskit/chaoskit/adapters/process"
	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/chaoskit/chaoskit/sim"
	"github.com/google/go-cmp/cmp"
)

// A process target's crash state derived from the golden recording (the disk, the world and the
// clock at the crash beat, and only the recovery run) is the state a re-run of the prefix up to
// the crash reaches: every case of an exhaustive campaign gives the same report either way, on a
// plain disk (copied back before each beat) and on a FUSE disk, for a correct child and for one
// whose recovery takes another path.
func TestDerivedCrashStatesEqualReRuns(t *testing.T) {
	kill := []faults.Kind{faults.Kill, faults.ToolAmbiguous}
	storage := []faults.Kind{faults.Kill, faults.Power, faults.Torn}
	for _, tc := range []struct {
		name  string
		fuse  bool
		mode  string
		kinds []faults.Kind
	}{
		{"correct", false, "correct", kill},
		{"act-then-save", false, "act-then-save", kill},
		{"correct on fuse", true, "correct", storage},
		{"no-fsync on fuse", true, "no-fsync", storage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := child(tc.mode)
			if tc.fuse {
				tg = onFUSE(t, tc.mode)
			}
			t.Parallel()
			sameEitherWay(t, "child/"+tc.name, tg, campaign.Options{Faults: tc.kinds})
		})
	}
}

// sameEitherWay runs every case of the exhaustive campaign opts lists over tg twice, with crash
// states derived and re-run, and fails the test where the two reports differ. It returns the
// number of cases.
func sameEitherWay(t *testing.T, name string, tg process.Target, opts campaign.Options) int {
	t.Helper()
	derived, err := sim.NewRunner(harness.Fresh(tg), sim.Options{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	rerun, err := sim.NewRunner(harness.Fresh(tg), sim.Options{Name: name, NoDerive: true})
	if err != nil {
		t.Fatal(err)
	}
	scheds, err := campaign.Schedules(derived, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range scheds {
		if d := cmp.Diff(reportOf(rerun.Run(s)), reportOf(derived.Run(s))); d != "" {
			t.Errorf("%s under %s, re-run and derived (-re-run +derived):\n%s", name, s, d)
		}
	}
	return len(scheds)
}

// reportOf is a case as its report holds it, wall-clock time aside.
func reportOf(c *sim.Case) reports.Case {
	rc := campaign.ReportCase(c, 0)
	rc.DurationMs = 0
	return rc
}
