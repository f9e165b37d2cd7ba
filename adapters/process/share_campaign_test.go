//go:build campaigns

package process_test

import (
	"context"
	"regexp"
	"testing"

	"github.com/chaoskit/chaoskit/adapters/process"
	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/sim"
	"github.com/spf13/afero"
)

// reportClock matches a report's wall-clock fields and its trailer (whose checksum covers them).
var reportClock = regexp.MustCompile(`(?m)^\s*"[a-z_]*_ms": [0-9.e+-]+,?\n|^  "trailer": .*\n`)

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
	report := func(noShare bool) (string, sim.Tally) {
		c := &campaign.Campaign{Targets: targets, Options: campaign.Options{Faults: []faults.Kind{faults.Kill, faults.Power, faults.Torn}}}
		c.Options.NoShare = noShare
		var tally sim.Tally
		rep, err := c.Run(context.Background(), campaign.RunOptions{FS: afero.NewMemMapFs(), Dir: "D", Tally: &tally})
		if err != nil {
			t.Fatal(err)
		}
		b, err := rep.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return reportClock.ReplaceAllString(string(b), ""), tally
	}
	shared, st := report(false)
	alone, at := report(true)
	if shared != alone {
		t.Fatalf("the report with shared recoveries differs from the one without:\n%s\nwant\n%s", shared, alone)
	}
	if st.Shared == 0 || st.Runs >= at.Runs || st.Cases != at.Cases {
		t.Fatalf("sharing: %+v; alone: %+v", st, at)
	}
	t.Logf("%d cases: %d runs shared (%d cases decided from another's recovery), %d alone", st.Cases, st.Runs, st.Shared, at.Runs)
}
