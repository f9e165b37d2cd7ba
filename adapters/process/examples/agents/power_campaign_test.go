//go:build campaigns

package agents_test

import (
	"testing"

	"github.com/chaoskit/chaoskit/adapters/process"
	"github.com/chaoskit/chaoskit/adapters/process/fusefs"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/internal/needs"
	"github.com/chaoskit/chaoskit/sim"
)

// TestAgentPowerCampaigns runs the Node agents with their state on a FUSE disk, where every file
// call is a beat (the LangGraph agent's SQLite database, the OpenAI agent's RunState file), and
// cuts the power at every beat that is a tool's effect: the golden runs agree (the agents' pool
// threads' file calls are decided, fuseheld.go), the correct agents pass every case, and the
// buggy twins fail some.
func TestAgentPowerCampaigns(t *testing.T) {
	node := needNode(t)
	needs.Err(t, fusefs.Available())
	for _, tw := range twins(t, node) {
		switch tw.name {
		case "openai/responses", "openai/responses/no-key", "langgraph", "langgraph/rerun":
		default:
			continue
		}
		t.Run(tw.name, func(t *testing.T) {
			target := tw.spec.target(t)
			target.Disk = process.FUSE
			rn, err := sim.NewRunner(harness.Fresh(target), sim.Options{Name: tw.name + "/fuse"})
			if err != nil {
				t.Fatal(err)
			}
			schedules := kills(t, rn, tw)
			for _, s := range schedules {
				s[0].Kind = faults.Power
			}
			decide(t, rn, tw, schedules)
		})
	}
}
