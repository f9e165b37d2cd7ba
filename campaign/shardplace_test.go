package campaign_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/reference"
	"github.com/chaoskit/chaoskit/reports"
)

// Placing the later faults of a random schedule (a diskfull or fsyncfail after a crash, at a
// write or an fsync of the recovery) runs the target. A shard of a random campaign places its
// own cases (and the few others with the same first fault), not every shard's: listing shard 1
// of 4 runs the target about a quarter as often as listing the whole campaign (it ran it as
// often). The shards together list the whole campaign's cases, each once, at its index.
func TestRandomShardPlacesItsOwnCases(t *testing.T) {
	var processes atomic.Int64
	newTarget := func() harness.Target {
		processes.Add(1)
		return reference.New(reference.Correct, reference.Onboarding())
	}
	list := func(shard reports.Shard) []campaign.Listed {
		c := &campaign.Campaign{Targets: []campaign.Target{{Name: "reference", New: newTarget}},
			Options: campaign.Options{Mode: campaign.Random, Cases: 120, Faults: []faults.Kind{faults.Kill, faults.Power, faults.DiskFull, faults.FsyncFail}, Shard: shard}}
		c.Options.Seed = 5
		seq, err := c.List(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return slices.Collect(seq)
	}
	processes.Store(0)
	whole := list(reports.Shard{})
	all := processes.Load()
	var shards []campaign.Listed
	var first int64
	for i := 1; i <= 4; i++ {
		processes.Store(0)
		shards = append(shards, list(reports.Shard{I: i, N: 4})...)
		if i == 1 {
			first = processes.Load()
		}
	}
	t.Logf("listing the campaign starts %d processes; listing shard 1/4, %d", all, first)
	if first*2 > all {
		t.Errorf("listing shard 1/4 starts %d processes, listing the whole campaign %d: a shard places others' cases", first, all)
	}
	slices.SortFunc(shards, func(a, b campaign.Listed) int { return a.Index - b.Index })
	if !slices.EqualFunc(shards, whole, func(a, b campaign.Listed) bool { return a.ID == b.ID && a.Index == b.Index }) || len(whole) != 120 {
		t.Errorf("the shards list %d cases, the campaign %d, not the same", len(shards), len(whole))
	}
}
