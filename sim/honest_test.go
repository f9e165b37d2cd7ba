package sim_test

import (
	"context"
	"errors"
	"fmt"
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

// A fault fires at the beat it names if that beat admits its kind, and at no other: a tool
// fault at a mark does not fire at the next tool call (so tool-ambiguous@0, @1 and @2 are not three
// names for the case of @2), and the case says so, quoting the beat.
func TestFaultFiresAtItsBeatOnly(t *testing.T) {
	target := harness.Func{ToolList: []harness.Tool{{Name: "po", Contract: harness.NotIdempotent}},
		RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
			env.Mark("a")
			env.Mark("b")
			_, err := env.Call(ctx, harness.Call{Tool: "po", Args: 1}) // beats 2 (sent) and 3 (applied)
			env.Mark("c")
			return nil, err
		}}
	rn := newRunner(t, target, sim.Options{})
	for _, tc := range []struct{ schedule, why string }{
		{"tool-ambiguous@0", "tool-ambiguous@0 did not fire: it fires only at a tool call, and beat 0 is \"mark a\""},
		{"tool-transient@1", "tool-transient@1 did not fire: it fires only at a tool call, and beat 1 is \"mark b\""},
		{"tool-ambiguous@3", "tool-ambiguous@3 did not fire: it fires only at a tool call, and beat 3 is \"tool po applied\""},
		{"diskfull@2:0", "diskfull@2:0 did not fire: it fires only at a write, and beat 2 is \"tool po sent\""},
		{"tool-ambiguous@2", ""},
	} {
		s, err := faults.ParseSchedule(tc.schedule)
		if err != nil {
			t.Fatal(err)
		}
		c := rn.Run(s)
		if tc.why == "" {
			if len(c.Unfired) != 0 || c.Beats[2].Fault != 1 {
				t.Errorf("%s did not fire at its beat: %s", tc.schedule, c)
			}
			continue
		}
		if len(c.Unfired) != 1 || c.Verdict.Outcome != oracle.Unknown || c.Verdict.Reason != "no fault fired, so the case tested nothing: "+tc.why {
			t.Errorf("%s: unfired %v, %s (%s)\nwant unknown: %s", tc.schedule, c.Unfired, c.Verdict.Outcome, c.Verdict.Reason, tc.why)
		}
	}
	// A replay asks for every fault: one that did not fire makes it unknown, quoting its beat.
	c := rn.Run(faults.Schedule{{Kind: faults.Kill, Beat: 1}, {Kind: faults.ToolTransient, Beat: 3}})
	c.RequireAll(5)
	if want := "not every fault fired: tool-transient@3 did not fire: it fires only at a tool call, and beat 3 is \"mark b\""; c.Verdict.Outcome != oracle.Unknown || c.Verdict.Reason != want {
		t.Fatalf("%s (%s), want unknown: %s", c.Verdict.Outcome, c.Verdict.Reason, want)
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

// A target that does nothing through the Env is refused: chaoskit could not test it.
func TestTargetWithoutBeatsIsRefused(t *testing.T) {
	_, err := sim.NewRunner(harness.Fresh(harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
		return "done, through os files", nil
	}}), sim.Options{Name: "outside"})
	if err == nil || !strings.Contains(err.Error(), "outside: golden run made no beat: chaoskit saw nothing it did") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("err = %v", err)
	}
}

// A target whose State fails on the golden run's disk is refused once, as such, rather than
// failing same-state in every case.
func TestGoldenStateErrorIsRefused(t *testing.T) {
	_, err := sim.NewRunner(harness.Fresh(harness.Func{
		RunFunc:   steps{n: 2}.Run,
		StateFunc: func(afero.Fs) (any, error) { return nil, errors.New("no such table: steps") },
	}), sim.Options{Name: "stateful"})
	if err == nil || !strings.Contains(err.Error(), "stateful: the golden run's state cannot be read back (every case would fail same-state): no such table: steps") {
		t.Fatalf("err = %v", err)
	}
}

// A harness that gives up on an error it could handle passes when a supervisor restarts it,
// as by default; under RestartNever its run ends there, failed. Either way the report counts
// the failed process.
func TestRestartPolicy(t *testing.T) {
	target := harness.Func{
		ToolList: []harness.Tool{{Name: "po", Contract: harness.IdempotentByKey}},
		RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
			if _, err := env.Call(ctx, harness.Call{Tool: "po", Key: "k", Args: 1}); err != nil {
				return nil, err // gives up on a transient error
			}
			env.Mark("filed")
			return "filed", nil
		},
	}
	transient := faults.Schedule{{Kind: faults.ToolTransient, Beat: 0}}
	for _, tc := range []struct {
		policy  int
		outcome oracle.Outcome
	}{{sim.RestartAlways, oracle.Pass}, {sim.RestartNever, oracle.Fail}, {1, oracle.Pass}} {
		c := newRunner(t, target, sim.Options{RestartFailed: tc.policy}).Run(transient)
		if c.Verdict.Outcome != tc.outcome || c.Verdict.Metrics.FailedProcesses != 1 {
			t.Errorf("policy %d: %s with %d failed processes, want %s with 1", tc.policy, c.Verdict.Outcome, c.Verdict.Metrics.FailedProcesses, tc.outcome)
		}
	}
}

// A tool that forgets idempotency keys still answers a look-up by the caller's own reference,
// so a harness resuming long after can tell whether its effect was applied; a harness that
// cannot tell may refuse to go on, loudly: that passes, counted as refused, and is not
// restarted.
func TestLookupAndRefusal(t *testing.T) {
	pay := harness.Tool{Name: "pay", Contract: harness.IdempotentByKey, KeyTTL: time.Hour}
	run := func(lookup bool) func(ctx context.Context, env *harness.Env) (any, error) {
		return func(ctx context.Context, env *harness.Env) (any, error) {
			if env.Process() == 0 {
				if _, err := env.Call(ctx, harness.Call{Tool: "pay", Key: "k1", Ref: "invoice-7", Args: 100}); err != nil {
					return nil, err
				}
				env.Sleep(ctx, 2*time.Hour) // the key is forgotten meanwhile; a crash here loses the reply's record
				return "paid", nil
			}
			if !lookup {
				return nil, fmt.Errorf("cannot tell whether invoice-7 was paid: %w", harness.ErrRefused)
			}
			r, found, err := env.Lookup(ctx, "pay", "invoice-7")
			if err != nil || !found || r.ID != "pay-1" {
				return nil, fmt.Errorf("lookup: %v, %v, %v", r, found, err)
			}
			_, missing, _ := env.Lookup(ctx, "pay", "invoice-8")
			if missing {
				return nil, errors.New("found an invoice never paid")
			}
			return "paid", nil
		}
	}
	crash := faults.Schedule{{Kind: faults.Kill, Beat: 2}} // at the sleep, after the payment
	c := newRunner(t, harness.Func{ToolList: []harness.Tool{pay}, RunFunc: run(true)}, sim.Options{}).Run(crash)
	if c.Verdict.Outcome != oracle.Pass || c.Verdict.Refused != "" {
		t.Fatalf("with a lookup: %s", c)
	}
	// The first process's three beats (the call sent and applied, the sleep), then two lookups
	// of two beats each.
	if c.Verdict.Metrics.Beats != 3+4 {
		t.Errorf("%d beats", c.Verdict.Metrics.Beats)
	}
	if l := (sim.Beat{Kind: sim.BeatToolSent, Name: "pay", Ref: "invoice-7"}).Label(); l != "tool pay lookup ref=invoice-7 sent" {
		t.Errorf("a lookup's beat is labelled %q", l)
	}
	c = newRunner(t, harness.Func{ToolList: []harness.Tool{pay}, RunFunc: run(false)}, sim.Options{}).Run(crash)
	if c.Verdict.Outcome != oracle.Pass || !strings.Contains(c.Verdict.Refused, "cannot tell whether invoice-7 was paid") || c.Verdict.Metrics.Restarts != 1 {
		t.Fatalf("refusing: %s (refused %q)", c, c.Verdict.Refused)
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
