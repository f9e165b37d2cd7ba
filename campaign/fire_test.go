package campaign_test

import (
	"context"
	"testing"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/reference"
	"github.com/chaoskit/chaoskit/sim"
)

// A fault fires only at a beat that admits its kind, so a campaign lists faults only where they
// fire: an exhaustive one at the golden beats that admit them; a random one places each later
// fault of a kind that needs some sort of beat on such a beat of the run before it (a later kill
// or power cut drawn past the run's end is the only fault that may not fire); and shrinking moves
// faults only to earlier beats where they still fire. Every tool fault of the random campaign
// fires, as does every fault of every shrunk schedule, which still breaks what its case broke.
func TestCampaignFaultsFireWhereTheyAreWritten(t *testing.T) {
	rn, err := sim.NewRunner(func() harness.Target {
		return reference.New(reference.AmbiguousAsFailed, reference.Onboarding())
	}, sim.Options{Name: "reference/ambiguous-as-failed"})
	if err != nil {
		t.Fatal(err)
	}
	needBeats := func(f faults.Fault) bool {
		info, _ := f.Kind.Info()
		return info.On != faults.AnyBeat
	}
	kinds := append(faults.FamilyKinds(faults.ToolFamily), faults.FamilyKinds(faults.ModelFamily)...)
	kinds = append(kinds, faults.Kill, faults.Power, faults.DiskFull, faults.FsyncFail)

	o := campaign.Options{Faults: kinds}
	cases, err := campaign.Explore(context.Background(), rn, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if len(c.Unfired) > 0 {
			t.Fatalf("an exhaustive case with a fault that did not fire: %s", c)
		}
	}

	o.Mode, o.Cases, o.Seed = campaign.Random, 100, 1
	cases, err = campaign.Explore(context.Background(), rn, o)
	if err != nil {
		t.Fatal(err)
	}
	later, failed := 0, 0
	for _, c := range cases {
		for i, f := range c.Schedule {
			if i > 0 && needBeats(f) {
				later++
			}
		}
		for _, f := range c.Unfired {
			if needBeats(f) {
				t.Errorf("%s of %s did not fire: %s", f, c.Schedule, c.Verdict.Reason)
			}
		}
		if c.Shrunk == nil {
			continue
		}
		failed++
		property := c.Verdict.Violations[0].Property
		if again := rn.Run(c.Shrunk); len(again.Unfired) > 0 || !again.Breaks(property) {
			t.Errorf("%s shrunk to %s, which does not break %s with every fault fired: %s", c.Schedule, c.Shrunk, property, again)
		}
	}
	t.Logf("later %d failed %d", later, failed)
	if later < 20 || failed < 5 {
		t.Fatalf("%d later faults that need some sort of beat, %d failures shrunk: too few to show anything", later, failed)
	}
}
