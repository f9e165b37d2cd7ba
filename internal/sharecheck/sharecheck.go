package sharecheck

import (
	"context"
	"regexp"
	"testing"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/sim"
	"github.com/spf13/afero"
)

// WallClock matches a report's wall-clock fields and its trailer (whose checksum covers them).
var WallClock = regexp.MustCompile(`(?m)^\s*"[a-z_]*_ms": [0-9.e+-]+,?\n|^  "trailer": .*\n`)

// Agree runs campaign c twice, sharing recoveries and with each case running its own, and fails
// t unless the two reports are the same to the byte (WallClock aside), both decided the same
// cases, and sharing ran fewer recoveries. It returns the two tallies.
func Agree(t testing.TB, c campaign.Campaign) (shared, alone sim.Tally) {
	t.Helper()
	report := func(noShare bool) (string, sim.Tally) {
		c := c
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
		return WallClock.ReplaceAllString(string(b), ""), tally
	}
	s, shared := report(false)
	a, alone := report(true)
	if s != a {
		t.Fatalf("the report with shared recoveries differs from the one without:\n%s\nwant\n%s", s, a)
	}
	if alone.Shared != 0 || alone.Cases != shared.Cases {
		t.Fatalf("tallies: shared %+v, alone %+v", shared, alone)
	}
	if shared.Shared == 0 || shared.Runs >= alone.Runs {
		t.Fatalf("sharing ran %d runs for %d cases (%d shared), alone %d", shared.Runs, shared.Cases, shared.Shared, alone.Runs)
	}
	t.Logf("%d cases: %d runs shared (%d decided from another case's recovery), %d alone", shared.Cases, shared.Runs, shared.Shared, alone.Runs)
	return shared, alone
}
