package campaign_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/reference"
	"github.com/spf13/afero"
)

// A campaign with a journal keeps, per case, where the case went in the journal, not the case:
// the memory it holds while it runs, and once it has run, grows by a few dozen bytes per case.
// (It grew by several kilobytes per case when it kept them.) Measured as the live heap after a
// collection, sampled as cases finish, at two sizes of one random campaign; the bound is ten
// times what the index needs, so that the test cannot flake on what a collection leaves.
func TestCampaignMemoryIsFlatInCases(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 4,500 cases")
	}
	live := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	peak := func(n int) uint64 {
		c := &campaign.Campaign{
			Targets: []campaign.Target{{Name: "synthetic", New: reference.Synthetic(60)}},
			Options: campaign.Options{Faults: []faults.Kind{faults.Kill, faults.Power}, Mode: campaign.Random, Cases: n},
		}
		c.Options.Seed = 3
		var most uint64
		progress := func(done, total, failed int) {
			if done%250 == 0 {
				most = max(most, live())
			}
		}
		rep, err := c.Run(context.Background(), campaign.RunOptions{FS: afero.NewOsFs(), Dir: t.TempDir(), Progress: progress})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Summary.Targets[0].Cases != n {
			t.Fatalf("%d cases, want %d", rep.Summary.Targets[0].Cases, n)
		}
		most = max(most, live())
		runtime.KeepAlive(rep)
		return most
	}
	small, large := 750, 3750
	a, b := peak(small), peak(large)
	perCase := (float64(b) - float64(a)) / float64(large-small)
	t.Logf("live heap %d KiB at %d cases, %d KiB at %d: %.0f bytes per case", a>>10, small, b>>10, large, perCase)
	if perCase > 400 {
		t.Errorf("the live heap grows by %.0f bytes per case; want a few dozen", perCase)
	}
}
