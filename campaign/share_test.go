package campaign_test

import (
	"testing"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/internal/sharecheck"
	"github.com/chaoskit/chaoskit/reference"
)

// sharedReports runs the exhaustive campaign of the given variants under kinds twice, with
// cases of one crash state sharing a recovery and with each running its own, and fails unless
// the two reports are the same to the byte (wall-clock fields aside) and sharing ran fewer
// recoveries than cases.
func sharedReports(t *testing.T, variants []reference.Variant, kinds []faults.Kind) {
	t.Helper()
	c := campaign.Campaign{Options: campaign.Options{Faults: kinds, Parallel: 2}}
	c.Options.Seed = 5
	for _, v := range variants {
		c.Targets = append(c.Targets, campaign.Target{Name: reference.New(v, reference.Onboarding()).Name(), New: func() harness.Target {
			return reference.New(v, reference.Onboarding())
		}})
	}
	sharecheck.Agree(t, c)
}

// Cases whose crash state is the same share one recovery, and the report is the one each case
// running alone gives: the correct agent, and variants whose recoveries fail (they run twice,
// the second time alone) or take other paths.
func TestSharedRecoveriesGiveTheSameReport(t *testing.T) {
	sharedReports(t, []reference.Variant{reference.Correct, reference.ActThenSave, reference.NoDirsync},
		[]faults.Kind{faults.Kill, faults.Power, faults.Torn})
}
