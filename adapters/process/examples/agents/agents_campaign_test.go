//go:build campaigns

package agents_test

import (
	"testing"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
)

// TestAgentCampaigns runs each agent and twin under a kill at every beat that is a tool's
// effect and under the model's and the tools' faults at every beat where they fire: correct
// agents pass every case, each buggy twin fails some.
func TestAgentCampaigns(t *testing.T) {
	node := needNode(t)
	for _, tw := range twins(t, node) {
		t.Run(tw.name, func(t *testing.T) {
			rn := runner(t, tw)
			g, _ := rn.Golden(nil)
			schedules := kills(t, rn, tw)
			for _, kind := range []faults.Kind{faults.ModelRateLimit, faults.ModelError, faults.ModelHang, faults.ModelCut, faults.ToolTransient, faults.ToolAmbiguous} {
				for k := range g.Len() {
					if g.Beat(k).Admits(kind) {
						schedules = append(schedules, faults.Schedule{{Kind: kind, Beat: k}})
					}
				}
			}
			decide(t, rn, tw, schedules)
		})
	}
}

// decide runs the cases of schedules: a correct twin passes every one, a buggy twin fails some.
func decide(t *testing.T, rn *sim.Runner, tw twin, schedules []faults.Schedule) {
	t.Helper()
	failed := 0
	for _, s := range schedules {
		c := rn.Run(s)
		if c.Verdict.Outcome == oracle.Fail {
			failed++
		}
		if !tw.buggy && c.Verdict.Outcome != oracle.Pass {
			t.Errorf("%s", c)
		}
	}
	t.Logf("%d cases, %d failed", len(schedules), failed)
	if tw.buggy && failed == 0 {
		t.Errorf("the buggy twin passed all %d cases", len(schedules))
	}
}
