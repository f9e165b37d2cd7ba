package eino_test

import (
	"fmt"
	"strings"

	"github.com/chaoskit/chaoskit/adapters/eino/poagent"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/sim"
)

// An Eino graph as a chaoskit target: the example purchasing agent, killed after its purchase
// order was applied and before the tool's reply came back. The restart resumes from the
// checkpoint saved after the model decided, runs the order node again with the same tool call
// id, hence the same idempotency key, and the world answers with the first order.
func ExampleGraph() {
	rn, err := sim.NewRunner(harness.Fresh(poagent.New(poagent.Correct)), sim.Options{Name: "poagent"})
	if err != nil {
		panic(err)
	}
	g, _ := rn.Golden(nil)
	applied := 0
	for i, label := range g.Trace() {
		if strings.HasPrefix(label, "tool create_po") && strings.HasSuffix(label, "applied") {
			applied = i
		}
	}
	c := rn.Run(faults.Schedule{{Kind: faults.Kill, Beat: applied}})
	fmt.Println(c.Verdict.Outcome, "restarts:", c.Verdict.Metrics.Restarts, "duplicates:", c.Verdict.Metrics.Duplicates)
	fmt.Println(c.Result)
	// Output:
	// pass restarts: 1 duplicates: 0
	// map[content:Filed the purchase order for Acme Corp, $84,000: {"id":"create_po-1"} role:assistant]
}
