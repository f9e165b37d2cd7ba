//go:build campaigns

package process_test

import (
	"fmt"
	"testing"
)

// agentFaults are a model and a tool fault of each kind an agent that retries must pass, each at
// a beat where it fires: the first model call, the purchasing service's call and the MCP tool's.
var agentFaults = []string{"model-cut@0", "model-error@0:503", "model-ratelimit@0", "model-hang@0", "model-diverge@0",
	"tool-ambiguous@1", "tool-transient@1", "tool-timeout@1", "tool-ambiguous@3", "tool-transient@3"}

// Both agents over HTTP pass a kill at every beat of their golden run, and every model and tool
// fault of agentFaults; the agent without keys duplicates its order.
func TestAgentOverHTTPEveryFault(t *testing.T) {
	for _, a := range agents {
		t.Run(a.lang, func(t *testing.T) {
			checkAgent(t, a.argv(t), func(beats int) []string {
				scheds := agentFaults
				for i := range beats {
					scheds = append(scheds, fmt.Sprintf("kill@%d", i))
				}
				return scheds
			})
		})
	}
}

// The Node agent's campaign, with its timers' waits, decides the same twice.
func TestNodeAgentOverHTTPIsDeterministic(t *testing.T) {
	sameTwice(t, agents[1].argv(t), "kill@3", "model-cut@0", "tool-ambiguous@1")
}
