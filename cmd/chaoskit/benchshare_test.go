package main

import (
	"context"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/reference"
	"github.com/chaoskit/chaoskit/sim"
)

// A campaign is measured rounds times each way, interleaved, and the runs it took are reported
// per round as a spread: without sharing, a run for every case; sharing, fewer, for power cuts
// at beats that only read leave the disk of the beat before.
func TestShareBenchIsRepeated(t *testing.T) {
	target, err := lookupTarget(referenceName(reference.Correct))
	if err != nil {
		t.Fatal(err)
	}
	c := &cli{ctx: context.Background(), stdout: io.Discard, stderr: io.Discard}
	m, err := measureShare(c, "reference", 3, func(noShare bool) *campaign.Campaign {
		camp := &campaign.Campaign{Targets: []campaign.Target{target}, Options: campaign.Options{Faults: []faults.Kind{faults.Power}, Parallel: 2}}
		camp.Options.NoShare = noShare
		return camp
	})
	if err != nil {
		t.Fatal(err)
	}
	if m.Rounds != 3 || m.Cases < 10 {
		t.Fatalf("%+v: want 3 rounds of the exhaustive power campaign", m)
	}
	// Every case passes, so none runs twice (the golden run is not counted).
	if alone := float64(m.Cases); m.RunsAlone != (benchSpread{alone, alone, alone}) {
		t.Errorf("without sharing, runs %s: want %v each round", m.RunsAlone.counts(), alone)
	}
	if !(0 < m.RunsShared.Min && m.RunsShared.Max < m.RunsAlone.Min) {
		t.Errorf("sharing, runs %s: want fewer than without, %s", m.RunsShared.counts(), m.RunsAlone.counts())
	}
	// A case shares only with another of its crash state: at least one run for each.
	if !(0 < m.States.Min && m.States.Max <= m.RunsShared.Min) {
		t.Errorf("sharing, %s runs for %s crash states: want a run or more for each", m.RunsShared.counts(), m.States.counts())
	}
	for name, s := range map[string]benchSpread{"CPU ratio": m.CPURatio, "cases a second sharing": m.CasesPerSecShared, "cases a second alone": m.CasesPerSecAlone} {
		if !(0 < s.Min && s.Min <= s.Median && s.Median <= s.Max) {
			t.Errorf("%s %s: want three positive samples in order", name, s)
		}
	}
	var b strings.Builder
	m.print(&b)
	if want := "reference: " + strconv.Itoa(m.Cases) + " cases (3 rounds, interleaved)\n  runs of the target min/median/max: "; !strings.Contains(b.String(), want) {
		t.Errorf("the table:\n%s\nlacks %q", b.String(), want)
	}
}

// The text summary says from how many crash states the shared cases were decided, and that the
// count may hold a state twice once too many recoveries were let go.
func TestShareText(t *testing.T) {
	for _, tc := range []struct {
		t    sim.Tally
		want string
	}{
		{sim.Tally{Cases: 10, Runs: 10}, "no case shared a recovery"},
		{sim.Tally{Cases: 783, Runs: 328, Shared: 455, States: 327}, "455 decided from the recovery of another case with the same crash state, 327 distinct crash states; --no-share runs each"},
		{sim.Tally{Cases: 783, Runs: 330, Shared: 453, States: 329, StatesAtMost: true}, "453 decided from the recovery of another case with the same crash state, at most 329 distinct crash states; --no-share runs each"},
	} {
		if got := shareText(tc.t); got != tc.want {
			t.Errorf("%+v:\n got %q\nwant %q", tc.t, got, tc.want)
		}
	}
}
