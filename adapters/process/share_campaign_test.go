//go:build campaigns

package process_test

import (
	"testing"

	"github.com/chaoskit/chaoskit/adapters/process"
	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/internal/sharecheck"
)

// The Burr example on a FUSE disk, correct and broken, under kill, power and torn at every
// request: the report with cases of one crash state sharing a recovery is the report with each
// case running its own, to the byte, and sharing runs fewer recoveries.
func TestSharedRecoveriesOfTheBurrExampleGiveTheSameReport(t *testing.T) {
	var targets []campaign.Target
	for _, broken := range []bool{false, true} {
		tg := burr.onFUSEDisk(t, process.CallBeats)
		name := "burr"
		if broken {
			tg.Argv, name = append(tg.Argv, "--broken"), "burr --broken"
		}
		targets = append(targets, campaign.Target{Name: name, New: harness.Fresh(tg)})
	}
	sharecheck.Agree(t, campaign.Campaign{Targets: targets, Options: campaign.Options{Faults: []faults.Kind{faults.Kill, faults.Power, faults.Torn}}})
}
