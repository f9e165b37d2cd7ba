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

// A recovery that hangs (here at once) is stopped once Timeout has passed without a beat, and
// not much later: within a sixteenth of it, where the detector once took up to twice Timeout.
func TestHungRecoveryIsUnknown(t *testing.T) {
	target := steps{n: 3, onResume: func(env *harness.Env, done int) { select {} }}
	const timeout = 2 * time.Second
	rn := newRunner(t, target, sim.Options{Timeout: timeout})
	start := time.Now()
	c := rn.Run(kill(4))
	took := time.Since(start)
	if c.Verdict.Outcome != oracle.Unknown || !strings.Contains(c.Verdict.Reason, "hung: no beat for 2s") {
		t.Fatalf("%s", c)
	}
	// Bounds with room for a loaded machine: the hang is found at 2.125 s; it was at 4 s.
	if took < timeout || took >= timeout*3/2 {
		t.Errorf("the hang was found after %s, want from %s to %s", took, timeout, timeout*3/2)
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
