//go:build campaigns

package campaign_test

import (
	"testing"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/reference"
	"github.com/chaoskit/chaoskit/sim"
)

// A crash state derived from the golden recording is the state a re-run of the prefix reaches:
// every exhaustive case gives the same report either way, for the correct agent and for
// variants whose recoveries take other paths. The storage kinds include power losses that keep
// a subset of what was not fsynced, whose draw depends on the seed and the beat alone.
func TestDerivedCrashStatesEqualReRuns(t *testing.T) {
	for _, v := range []reference.Variant{reference.Correct, reference.ActThenSave, reference.NoDirsync, reference.MetaDrift, reference.NoChecksum} {
		name := reference.New(v, reference.Onboarding()).Name()
		d := newRunner(t, agent(v), sim.Options{Name: name, Seed: 5})
		r := newRunner(t, agent(v), sim.Options{Name: name, Seed: 5, NoDerive: true})
		n, subsets := 0, 0
		for _, s := range schedules(t, d, campaign.Options{}) {
			if got, want := reportJSON(t, d.Run(s)), reportJSON(t, r.Run(s)); got != want {
				t.Fatalf("%s under %s:\nderived: %s\nre-run:  %s", v, s, got, want)
			}
			n++
			if s[0].Kind == faults.Power && s[0].Mode == "subset" {
				subsets++
			}
		}
		if subsets == 0 {
			t.Fatalf("%s: no power@K:subset case was listed", v)
		}
		t.Logf("%s: %d cases identical, %d of them power@K:subset", reference.New(v, reference.Onboarding()).Name(), n, subsets)
	}
}
