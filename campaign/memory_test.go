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
// a report of a run holds a few dozen bytes per case. (It held several kilobytes per case when
// it kept the cases.) Measured as what the report keeps alive: the live heap after a collection
// with the report, less the same without it, so that what the process allocated once (its first
// campaign's warm-up) does not count. chaoskit bench --random measures the peak while cases run.
func TestCampaignMemoryIsFlatInCases(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 3,750 cases")
	}
	live := func() int64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	}
	const n = 3750
	c := &campaign.Campaign{
		Targets: []campaign.Target{{Name: "synthetic", New: reference.Synthetic(60)}},
		Options: campaign.Options{Faults: []faults.Kind{faults.Kill, faults.Power}, Mode: campaign.Random, Cases: n},
	}
	c.Options.Seed = 3
	rep, err := c.Run(context.Background(), campaign.RunOptions{FS: afero.NewOsFs(), Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Summary.Targets[0].Cases != n {
		t.Fatalf("%d cases, want %d", rep.Summary.Targets[0].Cases, n)
	}
	with := live()
	runtime.KeepAlive(rep)
	rep = nil
	perCase := float64(with-live()) / n
	t.Logf("the report of %d cases holds %.1f bytes per case", n, perCase)
	// 24 bytes of index per case, in a slice that grows by doubling; the cases themselves
	// (a kilobyte or more each, with their schedules, verdicts and metrics) must not be there.
	if perCase > 64 {
		t.Errorf("the report holds %.1f bytes per case; want its index alone, at most 64", perCase)
	}
}
