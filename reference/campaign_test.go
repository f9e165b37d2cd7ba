//go:build campaigns

package reference_test

import (
	"slices"
	"testing"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/reference"
	"github.com/chaoskit/chaoskit/sim"
)

// Every variant is caught, by a property its bug breaks, and the failure shrinks to a schedule
// that still breaks it and that no simpler schedule does. (A variant whose bug takes two faults,
// a crash and another during the recovery, is caught at depth 2: TestDepthTwo.)
func TestEveryVariantIsCaughtAndShrunk(t *testing.T) {
	for _, info := range reference.Variants()[1:] {
		if info.Depth >= 2 {
			continue
		}
		t.Run(string(info.Variant), func(t *testing.T) {
			rn := runner(t, info.Variant, reference.Onboarding(), campaign.Options{Options: sim.Options{Seed: 7}, Mode: campaign.Random, Cases: 60, Faults: info.Exposes})
			var caught *sim.Case
			for _, c := range rn.explore(t) {
				if c.Failed() && slices.Contains(info.CaughtBy, c.Verdict.Violations[0].Property) {
					caught = c
					break
				}
			}
			if caught == nil {
				t.Fatalf("no case broke any of %v first under %v", info.CaughtBy, info.Exposes)
			}
			prop, shrunk := caught.Verdict.Violations[0].Property, caught.Shrunk
			if len(shrunk) == 0 || len(shrunk) > len(caught.Schedule) {
				t.Fatalf("shrinking %s gave %q", caught.Schedule, shrunk)
			}
			if !rn.Run(shrunk).Breaks(prop) {
				t.Fatalf("the shrunk schedule %s does not break %s", shrunk, prop)
			}
			// Locally minimal: dropping a fault, or moving one a beat earlier, no longer breaks it.
			for _, simpler := range simplerSchedules(shrunk) {
				if rn.Run(simpler).Breaks(prop) {
					t.Errorf("shrunk to %s, but the simpler %s also breaks %s", shrunk, simpler, prop)
				}
			}
			t.Logf("%s: caught by %s under %s, shrunk to %s", info.Variant, prop, caught.Schedule, shrunk)
		})
	}
}

// Two workers frozen past their lease for longer than the tools remember keys: the one that
// takes over cannot tell from a key whether the effect was applied, so the agent looks it up by
// its reference. The correct agent survives 10,000 random fleet schedules (1,000 with -short),
// among them the ones a review found it failing (lease@113+2h,lease@122+2h, say).
func TestCorrectAgentSurvivesRandomFleetCases(t *testing.T) {
	cases := 10_000
	if testing.Short() {
		cases = 1_000
	}
	rn := runner(t, reference.Correct, reference.Onboarding(), campaign.Options{Options: sim.Options{Seed: 1}, Mode: campaign.Random, Cases: cases, Faults: faults.FamilyKinds(faults.FleetFamily)})
	for _, text := range []string{"lease@113+2h,lease@122+2h", "lease@155+2h,lease@171+2h,switch@179:0", "lease@60+2h,lease@95+45s,lease@100+2h"} {
		s, err := faults.ParseSchedule(text)
		if err != nil {
			t.Fatal(err)
		}
		if c := rn.Run(s); c.Verdict.Outcome != oracle.Pass {
			t.Errorf("%s", c)
		}
	}
	bad := 0
	for _, c := range rn.explore(t) {
		if c.Verdict.Outcome != oracle.Pass {
			if bad++; bad <= 3 {
				t.Errorf("%s", c)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d random fleet cases did not pass", bad, cases)
	}
}

// At depth 2 an exhaustive campaign lists a kill at every beat followed by a power cut at every
// beat of the recovery: the correct agent passes every such case, and a recovery that builds on
// records the killed process left in the page cache without fsyncing them (trusts-page-cache)
// is caught by a property its bug breaks, in cases where neither fault alone breaks anything.
// A random campaign found that class in 1 case of 100,000; depth 2 finds it in a few thousand.
func TestDepthTwo(t *testing.T) {
	for _, info := range reference.Variants() {
		if info.Variant != reference.Correct && info.Depth < 2 {
			continue
		}
		t.Run(string(info.Variant), func(t *testing.T) {
			rn := runner(t, info.Variant, reference.Onboarding(), campaign.Options{Options: sim.Options{Seed: 1}, Faults: []faults.Kind{faults.Kill, faults.Power}, Depth: 2})
			caught, pairs := 0, 0
			for _, c := range rn.explore(t) {
				if len(c.Schedule) == 2 {
					pairs++
				}
				switch {
				case info.Variant == reference.Correct && c.Verdict.Outcome != oracle.Pass:
					t.Errorf("%s", c)
				case info.Variant != reference.Correct && c.Failed():
					if !slices.Contains(info.CaughtBy, c.Verdict.Violations[0].Property) || len(c.Schedule) != 2 {
						t.Errorf("caught by %s, not one of %v, or by a single fault:\n%s", c.Verdict.Violations[0].Property, info.CaughtBy, c)
					}
					for _, f := range c.Schedule {
						if one := rn.Run(faults.Schedule{f}); one.Verdict.Outcome != oracle.Pass {
							t.Errorf("%s alone breaks it too:\n%s", f, one)
						}
					}
					caught++
				}
			}
			if info.Variant != reference.Correct && caught == 0 {
				t.Errorf("none of %d kill-then-power cases caught %s", pairs, info.Variant)
			}
			t.Logf("%d cases of a kill and a power cut in the recovery; %d caught", pairs, caught)
		})
	}
}
