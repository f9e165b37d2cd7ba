package campaign_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/reference"
	"github.com/chaoskit/chaoskit/reports"
)

// twoTargets is a small campaign over two variants of the reference agent.
func twoTargets() *campaign.Campaign {
	c := &campaign.Campaign{
		Targets: []campaign.Target{
			{Name: "act-then-save", New: agent(reference.ActThenSave)},
			{Name: "reference", New: agent(reference.Correct)},
		},
		Options: campaign.Options{Faults: []faults.Kind{faults.Kill, faults.Power}, Cases: 9},
	}
	c.Options.Seed = 3
	return c
}

func listed(t *testing.T, c *campaign.Campaign) []campaign.Listed {
	t.Helper()
	seq, err := c.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return slices.Collect(seq)
}

// withoutTime returns c without its wall-clock field.
func withoutTime(c reports.Case) reports.Case {
	c.DurationMs = 0
	return c
}

// List gives the cases Run runs, in its order, with their IDs, indexes and schedules, and those
// of a shard only when the campaign is one; a run of some of them (Only) runs just those, and
// each is the case the whole campaign has, handed to OnCase as it finishes.
func TestListThenRunSome(t *testing.T) {
	c := twoTargets()
	list := listed(t, c)
	full, err := c.Run(context.Background(), campaign.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != len(full.Cases) || len(list) != 18 {
		t.Fatalf("List gives %d cases, Run runs %d; want 9 of each target", len(list), len(full.Cases))
	}
	byID := map[string]reports.Case{}
	for i, l := range list {
		rc := full.Cases[i]
		if l.Target != rc.Target || l.ID != rc.ID || l.Index != rc.Index || l.Schedule.String() != rc.Schedule.String() {
			t.Errorf("listed %+v, ran %s (index %d)", l, rc.ID, rc.Index)
		}
		byID[rc.ID] = rc
	}

	some := []string{list[len(list)-1].ID, list[1].ID, list[4].ID} // out of order, both targets
	var streamed []string
	rep, err := c.Run(context.Background(), campaign.RunOptions{Only: some, OnCase: func(rc *reports.Case) {
		streamed = append(streamed, rc.ID)
		if want := byID[rc.ID]; !slices.Equal(rc.Trace, want.Trace) || rc.Verdict != want.Verdict {
			t.Errorf("OnCase got %s: %s, want %s", rc.ID, rc.Verdict, want.Verdict)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	var ran []string
	for _, rc := range rep.Cases {
		ran = append(ran, rc.ID)
		want := byID[rc.ID]
		if got, want := withoutTime(rc), withoutTime(want); got.Verdict != want.Verdict || got.Index != want.Index || got.Repro != want.Repro || got.Metrics != want.Metrics {
			t.Errorf("case %s alone: %+v\nin the campaign: %+v", rc.ID, got, want)
		}
	}
	if want := []string{list[1].ID, list[4].ID, list[len(list)-1].ID}; !slices.Equal(ran, want) {
		t.Errorf("ran %q, want %q in campaign order", ran, want)
	}
	slices.Sort(streamed)
	if slices.Sort(ran); !slices.Equal(streamed, ran) {
		t.Errorf("OnCase got %q, the report holds %q", streamed, ran)
	}

	_, err = c.Run(context.Background(), campaign.RunOptions{Only: []string{list[0].ID, "reference:kill@99999"},
		OnCase: func(rc *reports.Case) { t.Errorf("ran %s before refusing an unknown case", rc.ID) }})
	if !errors.Is(err, campaign.ErrNoSuchCase) || !strings.Contains(err.Error(), `"reference:kill@99999"`) {
		t.Errorf("an unknown case: %v", err)
	}

	c.Options.Shard = reports.Shard{I: 2, N: 3}
	var want []campaign.Listed
	for _, l := range list {
		if l.Index%3 == 1 {
			want = append(want, l)
		}
	}
	if got := listed(t, c); !reflect.DeepEqual(got, want) {
		t.Errorf("shard 2/3 lists %v, want %v", got, want)
	}
}
