package sim_test

import (
	"fmt"
	"testing"

	"github.com/chaoskit/chaoskit/sim"
)

// A case decided from another case's recovery measures work lost without marks as it would
// alone: from the recovery's calls, renumbered from its own crash beat, after its own prefix.
// (The calls were once left out, and such a case lost no work and passed however much its
// target redid, depending on which case of its crash state ran first.)
func TestSharedRecoveryMeasuresCallsMadeAgain(t *testing.T) {
	for _, a := range []turns{{}, {resumes: true}} {
		shared, alone := newRunner(t, a, sim.Options{}), newRunner(t, a, sim.Options{NoShare: true})
		g, err := shared.Golden(nil)
		if err != nil {
			t.Fatal(err)
		}
		for k := range g.Len() {
			s, o := shared.Run(kill(k)), alone.Run(kill(k))
			got, want := fmt.Sprintf("%s %+v", s.Verdict.Outcome, s.Verdict.Metrics), fmt.Sprintf("%s %+v", o.Verdict.Outcome, o.Verdict.Metrics)
			if got != want {
				t.Errorf("kill@%d of %+v: shared %s, alone %s", k, a, got, want)
			}
		}
		if shared.Tally().Shared == 0 {
			t.Errorf("%+v: no case shared a recovery: the test tests nothing", a)
		}
	}
}
