package harness_test

import (
	"context"
	"fmt"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/sim"
)

// A target that keeps its progress in memory, in a field of its own, loses it with the process:
// NewRunner builds a new instance for every process, so a crash discards what the instance
// held, as a SIGKILL would. Here the counter restarts from zero after the kill, and the restart
// marks step 0 again: durable work done twice, or rather work that was never durable.
func ExampleFresh() {
	rn, err := sim.NewRunner(harness.Fresh(counter{}), harness.Options{Name: "counter"})
	if err != nil {
		fmt.Println(err)
		return
	}
	c := rn.Run(faults.Schedule{{Kind: faults.Kill, Beat: 2}})
	fmt.Println(c.Verdict.Outcome, c.Verdict.Violations[0].Property)
	// Output:
	// fail bounded-work-lost
}

// counter counts its steps in a field: progress in memory only.
type counter struct{ done int }

func (c *counter) Run(ctx context.Context, env *harness.Env) (any, error) {
	for ; c.done < 4; c.done++ {
		env.Mark(fmt.Sprintf("step %d", c.done))
	}
	return c.done, nil
}
