package campaign_test

import (
	"context"
	"testing"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/reference"
	"github.com/chaoskit/chaoskit/sim"
	"github.com/spf13/afero"
)

// sharedReports runs the exhaustive campaign of the given variants under kinds twice, with
// cases of one crash state sharing a recovery and with each running its own, and fails unless
// the two reports are the same to the byte (wall-clock fields aside) and sharing ran fewer
// recoveries than cases.
func sharedReports(t *testing.T, variants []reference.Variant, kinds []faults.Kind) {
	t.Helper()
	report := func(noShare bool) (string, sim.Tally) {
		c := &campaign.Campaign{Options: campaign.Options{Faults: kinds, Parallel: 2}}
		c.Options.Seed, c.Options.NoShare = 5, noShare
		for _, v := range variants {
			c.Targets = append(c.Targets, campaign.Target{Name: reference.New(v, reference.Onboarding()).Name(), New: func() harness.Target {
				return reference.New(v, reference.Onboarding())
			}})
		}
		var tally sim.Tally
		rep, err := c.Run(context.Background(), campaign.RunOptions{FS: afero.NewMemMapFs(), Dir: "D", Tally: &tally})
		if err != nil {
			t.Fatal(err)
		}
		b, err := rep.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return wallClock.ReplaceAllString(string(b), ""), tally
	}
	shared, st := report(false)
	alone, at := report(true)
	if shared != alone {
		t.Fatalf("the report with shared recoveries differs from the one without:\n%s\nwant\n%s", shared, alone)
	}
	if at.Shared != 0 || at.Cases != st.Cases {
		t.Fatalf("tallies: shared %+v, alone %+v", st, at)
	}
	if st.Shared == 0 || st.Runs >= at.Runs {
		t.Fatalf("sharing ran %d runs for %d cases (%d shared), alone %d", st.Runs, st.Cases, st.Shared, at.Runs)
	}
	t.Logf("%d cases: %d runs shared (%d cases decided from another's recovery), %d alone", st.Cases, st.Runs, st.Shared, at.Runs)
}

// Cases whose crash state is the same share one recovery, and the report is the one each case
// running alone gives: the correct agent, and variants whose recoveries fail (they run twice,
// the second time alone) or take other paths.
func TestSharedRecoveriesGiveTheSameReport(t *testing.T) {
	sharedReports(t, []reference.Variant{reference.Correct, reference.ActThenSave, reference.NoDirsync},
		[]faults.Kind{faults.Kill, faults.Power, faults.Torn})
}
