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
