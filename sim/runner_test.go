package sim_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
	"github.com/spf13/afero"
)

// A case in which no fault fired tested nothing: it is unknown, saying which fault did not fire
// and why, never a pass.
func TestNoFaultFiredIsUnknown(t *testing.T) {
	rn := newRunner(t, steps{n: 3}, sim.Options{Workers: 1})
	for _, tc := range []struct{ schedule, why string }{
		{"kill@100000", "kill@100000 is past the run's end (it made 11 beats; the golden run makes 11)"},
		{"tool-ambiguous@0", "tool-ambiguous@0 did not fire: it fires only at a tool call, and beat 0 is \"fs.create log\""},
		{"callback-dup@0", "it fires only at a call of an asynchronous tool, and beat 0 is"},
		{"switch@8:9", "switch@8:9 names a worker the run does not have"},
	} {
		s, err := faults.ParseSchedule(tc.schedule)
		if err != nil {
			t.Fatal(err)
		}
		c := rn.Run(s)
		if c.Verdict.Outcome != oracle.Unknown || !strings.Contains(c.Verdict.Reason, "no fault fired, so the case tested nothing") || !strings.Contains(c.Verdict.Reason, tc.why) {
			t.Errorf("%s: %s (%s)", tc.schedule, c.Verdict.Outcome, c.Verdict.Reason)
		}
	}
	// A schedule some of whose faults fired is judged on those; asked for explicitly, it is
	// unknown unless every fault fired.
	c := rn.Run(faults.Schedule{{Kind: faults.Kill, Beat: 1}, {Kind: faults.Power, Beat: 500}})
	if c.Verdict.Outcome != oracle.Pass || len(c.Unfired) != 1 {
		t.Fatalf("%s", c)
	}
	c.RequireAll(11)
	if c.Verdict.Outcome != oracle.Unknown || !strings.Contains(c.Verdict.Reason, "not every fault fired: power@500 is past the run's end") {
		t.Fatalf("%s", c)
	}
}

// A recovery that is not deterministic (it draws from the global source) makes failures that
// a second run does not reproduce: such a case is unknown, never a failure whose replay command
// would not replay it.
func TestNondeterministicRecoveryIsUnknown(t *testing.T) {
	target := steps{n: 3, onResume: func(env *harness.Env, done int) {
		if rand.IntN(2) == 0 { // the bug: not env.Rand()
			env.Mark("step a") // redo the first step's mark: bounded-work-lost
		}
	}}
	rn := newRunner(t, target, sim.Options{})
	unknown, failed := 0, 0
	for range 40 {
		switch c := rn.Run(faults.Schedule{{Kind: faults.Kill, Beat: 6}}); c.Verdict.Outcome {
		case oracle.Unknown:
			if !strings.Contains(c.Verdict.Reason, "not reproducible: the target is not deterministic: a second run of the same case") {
				t.Fatalf("%s", c)
			}
			unknown++
		case oracle.Fail:
			failed++ // the two runs happened to agree
		}
	}
	if unknown == 0 {
		t.Fatalf("40 runs: %d failed, none unknown", failed)
	}
}

// A case that parts from its golden run before its first fault is not deterministic, even if its
// second run parts the same way (threads racing for the order of their requests may well): it is
// unknown, not a failure whose replay might pass.
func TestCaseThatLeavesTheGoldenPathBeforeItsFaultIsUnknown(t *testing.T) {
	var runs atomic.Int32
	target := harness.Func{
		ToolList: []harness.Tool{{Name: "t", Contract: harness.IdempotentByKey}},
		RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
			path := "a"
			if runs.Add(1) > 2 { // the two golden runs go one way, every later run the other
				path = "b"
			}
			env.Mark("start " + path)
			for {
				_, err := env.Call(ctx, harness.Call{Tool: "t", Key: "k"})
				if !errors.Is(err, harness.ErrToolTransient) {
					return path, err
				}
			}
		},
	}
	rn := newRunner(t, target, sim.Options{})
	c := rn.Run(faults.Schedule{{Kind: faults.ToolTransient, Beat: 1}})
	if c.Verdict.Outcome != oracle.Unknown || !strings.Contains(c.Verdict.Reason, `before its first fault the case did "mark start b" at beat 0, where the golden run did "mark start a"`) {
		t.Fatalf("%s", c)
	}
}

// A bare run is judged by its progress, not its beats (it has none): a long one is not hung.
func TestRunBare(t *testing.T) {
	res, err := sim.RunBare(harness.Fresh(harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
		for i := 0; i < 40; i++ {
			time.Sleep(10 * time.Millisecond) // real work between Env calls
			env.Mark("step")
		}
		return "done", nil
	}}), afero.NewMemMapFs(), sim.Options{Timeout: 300 * time.Millisecond})
	if res != "done" || err != nil {
		t.Fatalf("RunBare = %v, %v", res, err)
	}
	defer func() {
		if p := recover(); p == nil {
			t.Fatal("RunBare with a nil filesystem did not panic")
		}
	}()
	sim.RunBare(harness.Fresh(harness.Func{}), nil, sim.Options{})
}
