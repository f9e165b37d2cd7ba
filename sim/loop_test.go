package sim_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
)

// A run in which every thread waits for something that will never come is stuck: the golden
// run is refused, a faulty run does not complete. Neither waits in real time.
func TestStuckRunsAreDetected(t *testing.T) {
	hangs := harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
		_, err := env.Model(ctx, harness.ModelCall{Purpose: "plan"}) // no deadline
		return nil, err
	}}
	rn := newRunner(t, hangs, sim.Options{})
	c := rn.Run(faults.Schedule{{Kind: faults.ModelHang, Beat: 0}})
	if !c.Breaks(oracle.Completes) || !strings.Contains(c.Verdict.Violations[0].Detail, "stuck: nothing will ever wake the run") {
		t.Fatalf("%s", c)
	}
	_, err := sim.NewRunner(harness.Fresh(harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
		return env.Await(ctx, "never")
	}}), sim.Options{Name: "waiter"})
	if err == nil || !strings.Contains(err.Error(), "waiter: golden run failed: stuck") || !strings.Contains(err.Error(), "a message on never") {
		t.Fatalf("err = %v", err)
	}
}
func TestHungRecoveryIsUnknown(t *testing.T) {
	target := steps{n: 3, onResume: func(env *harness.Env, done int) { select {} }}
	rn := newRunner(t, target, sim.Options{Timeout: time.Second})
	c := rn.Run(kill(4))
	if c.Verdict.Outcome != oracle.Unknown || !strings.Contains(c.Verdict.Reason, "hung: no beat for 1s") {
		t.Fatalf("%s", c)
	}
}

// A recovery that loops without end is stopped by the beat budget, deterministically.
func TestLivelockIsBounded(t *testing.T) {
	target := steps{n: 3, onResume: func(env *harness.Env, done int) {
		for {
			env.Mark("spinning")
		}
	}}
	rn := newRunner(t, target, sim.Options{})
	c := rn.Run(kill(4))
	if !c.Breaks(oracle.Completes) || !strings.Contains(c.Verdict.Violations[0].Detail, "no end in sight") {
		t.Fatalf("%s", c)
	}
	if g, _ := rn.Golden(nil); c.Verdict.Metrics.Beats != 10*g.Len()+1000+1 {
		t.Errorf("the budget stopped it after %d beats", c.Verdict.Metrics.Beats)
	}
}
