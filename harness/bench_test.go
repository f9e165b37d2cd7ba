package harness_test

import (
	"context"
	"testing"

	"github.com/chaoskit/chaoskit/harness"
)

// BenchmarkCaseOverhead measures what the harness costs a case beyond the target's own work: a
// target of two marks, crashed at the second and run to the end again, judged by the oracle.
func BenchmarkCaseOverhead(b *testing.B) {
	rn, err := harness.NewRunner(harness.Fresh(harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
		env.Mark("a")
		env.Mark("b")
		return nil, nil
	}}), harness.Options{})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		rn.Run(kill(1))
	}
}
