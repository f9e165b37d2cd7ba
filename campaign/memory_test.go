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
// collection once the campaign has run, holding its report, at two sizes of one random
// campaign, one case at a time; the bound is ten times what the index needs. (Samples taken
// while cases run also count the cases waiting for the journal's next fsync, as many as a busy
// machine makes one fsync last: a measure of the machine, not of the campaign. chaoskit bench
// --random measures the peak.)
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
		c.Options.Workers = 1
		rep, err := c.Run(context.Background(), campaign.RunOptions{FS: afero.NewOsFs(), Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Summary.Targets[0].Cases != n {
			t.Fatalf("%d cases, want %d", rep.Summary.Targets[0].Cases, n)
		}
		held := live()
		runtime.KeepAlive(rep)
		return held
	}
	small, large := 750, 3750
	a, b := peak(small), peak(large)
	perCase := (float64(b) - float64(a)) / float64(large-small)
	t.Logf("live heap %d KiB at %d cases, %d KiB at %d: %.0f bytes per case", a>>10, small, b>>10, large, perCase)
	if perCase > 400 {
		t.Errorf("the live heap grows by %.0f bytes per case; want a few dozen", perCase)
	}
}
