package sim_test

import (
	"context"
	"testing"

	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
)

// BenchmarkCaseOverhead measures what the harness costs a case beyond the target's own work: a
// target of two marks, crashed at the first and run to the end again, judged by the oracle. The
// case passes: a failing one is run twice, to check that it reproduces.
func BenchmarkCaseOverhead(b *testing.B) {
	rn, err := sim.NewRunner(harness.Fresh(harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
		env.Mark("a")
		env.Mark("b")
		return nil, nil
	}}), sim.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if c := rn.Run(kill(0)); c.Verdict.Outcome != oracle.Pass {
		b.Fatalf("the case must pass, or it is run twice: %s", c)
	}
	for b.Loop() {
		rn.Run(kill(0))
	}
}
