package campaign_test

import (
	"testing"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
)

// Options.FSModel decides what a power loss keeps. The log whose second record of a pair can
// survive without the first under POSIX cannot under ext4-ordered, where appends past a file's
// allocated blocks reach the disk as a prefix of them: every case passes there. And under
// ext4-ordered too a case is the same derived from the golden recording or re-run.
func TestFSModelDecidesWhatAPowerLossKeeps(t *testing.T) {
	kinds := []faults.Kind{faults.Kill, faults.Power, faults.Torn}
	o := sim.Options{Seed: 1, FSModel: faults.Ext4Ordered}
	d := newRunner(t, harness.Fresh(pairLog{steps: 6}), o)
	o.NoDerive = true
	r := newRunner(t, harness.Fresh(pairLog{steps: 6}), o)
	subsets := 0
	for _, s := range schedules(t, d, campaign.Options{Faults: kinds}) {
		c := d.Run(s)
		if c.Verdict.Outcome != oracle.Pass {
			t.Errorf("under ext4-ordered, %s fails:\n%s", s, c)
		}
		if s[0].Mode == "subset" {
			subsets++
		}
		if derived, rerun := reportJSON(t, c), reportJSON(t, r.Run(s)); derived != rerun {
			t.Fatalf("under %s, derived and re-run differ:\n%s\n%s", s, derived, rerun)
		}
	}
	if subsets == 0 {
		t.Fatal("no power@K:subset case listed under ext4-ordered: the test compares nothing")
	}
}
