package harness_test

import (
	"context"
	"fmt"
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/sim"
)

// A target that keeps its progress in memory, in a field of its own, loses it with the process:
// NewRunner builds a new instance for every process, so a crash discards what the instance
// held, as a SIGKILL would. Here the counter restarts from zero after the kill, and the restart
// marks step 0 again: durable work done twice, or rather work that was never durable.
func ExampleFresh() {
	rn, err := sim.NewRunner(harness.Fresh(counter{}), sim.Options{Name: "counter"})
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

// Several tool calls made at once overlap: each runs in a thread of a Group, whose Wait lets
// them run. Two calls of a second each take one second of virtual time together.
func ExampleGroup() {
	target := harness.Func{
		ToolList: []harness.Tool{
			{Name: "quote_fedex", Contract: harness.ReadOnly, Latency: time.Second},
			{Name: "quote_ups", Contract: harness.ReadOnly, Latency: time.Second},
		},
		RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
			start := env.Now()
			g := env.Group()
			for _, tool := range []string{"quote_fedex", "quote_ups"} {
				g.Go(func(ctx context.Context) error {
					_, err := env.Call(ctx, harness.Call{Tool: tool})
					return err
				})
			}
			if err := g.Wait(ctx); err != nil {
				return nil, err
			}
			return env.Now().Sub(start).String(), nil
		},
	}
	rn, err := sim.NewRunner(harness.Fresh(target), sim.Options{Name: "quotes"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rn.Run(nil).Result)
	// Output:
	// 1s
}
