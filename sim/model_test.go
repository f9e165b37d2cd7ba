package sim_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/sim"
)

// Model faults answer as their names say.
func TestModelFaults(t *testing.T) {
	target := harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
		_, err := env.Model(ctx, harness.ModelCall{Purpose: "plan", Reply: "ok", Latency: 2 * time.Second})
		return fmt.Sprint(err), nil
	}}
	rn := newRunner(t, target, sim.Options{})
	for kind, want := range map[faults.Kind]string{
		faults.ModelRateLimit: "model: rate limited (429), retry after 20s",
		faults.ModelError:     "model: server error (500)",
		faults.ModelContext:   "model: context length exceeded",
	} {
		if c := rn.Run(faults.Schedule{{Kind: kind, Beat: 0}}); c.Result != want {
			t.Errorf("%s: %v", kind, c.Result)
		}
	}
}
