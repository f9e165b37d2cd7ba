package sim_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
	"github.com/spf13/afero"
)

func golden(t *testing.T, target harness.Target, opts sim.Options) *sim.Case {
	t.Helper()
	return newRunner(t, target, opts).Run(nil)
}

// Virtual time: a run that sleeps through a weekend finishes in no time, and sees the weekend
// pass.
func TestVirtualTimeDoesNotWait(t *testing.T) {
	start := time.Now()
	c := golden(t, harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
		before := env.Now()
		if err := env.Sleep(ctx, 52*time.Hour); err != nil {
			return nil, err
		}
		return env.Now().Sub(before), nil
	}}, sim.Options{})
	if c.Result != 52*time.Hour {
		t.Fatalf("the run saw %v pass, want 52h", c.Result)
	}
	if wall := time.Since(start); wall > 5*time.Second {
		t.Fatalf("52 virtual hours took %v of real time", wall)
	}
}

// A virtual deadline ends a wait that nothing else would end, with DeadlineExceeded, at exactly
// the deadline; a model that hangs is such a wait.
func TestVirtualDeadline(t *testing.T) {
	target := harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
		start := env.Now()
		tctx, cancel := env.WithTimeout(ctx, 25*time.Second)
		defer cancel()
		_, err := env.Model(tctx, harness.ModelCall{Purpose: "plan", Reply: "ok"})
		return fmt.Sprintf("%v after %v", err, env.Now().Sub(start)), nil
	}}
	rn := newRunner(t, target, sim.Options{})
	if c := rn.Run(nil); c.Result != "<nil> after 0s" {
		t.Fatalf("golden: %v", c.Result)
	}
	c := rn.Run(faults.Schedule{{Kind: faults.ModelHang, Beat: 0}})
	if c.Result != "context deadline exceeded after 25s" {
		t.Fatalf("hung model: %v", c.Result)
	}
}

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

// Threads started with Go run when the others wait, one at a time, deterministically, and die
// with their process.
func TestThreads(t *testing.T) {
	target := harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
		var log []string
		for i, name := range []string{"a", "b"} {
			env.Go(func(ctx context.Context) {
				for j := 0; j < 3; j++ {
					if env.Sleep(ctx, time.Duration(2+i)*time.Second) != nil {
						return
					}
					log = append(log, fmt.Sprintf("%s@%s", name, env.Now().Sub(faults.Epoch)))
				}
			})
		}
		if err := env.Sleep(ctx, 10*time.Second); err != nil {
			return nil, err
		}
		return strings.Join(log, " "), nil
	}}
	// When two threads wake at the same instant, the seeded scheduler picks which runs first.
	for _, want := range []string{"a@2s b@3s a@4s a@6s b@6s b@9s", "a@2s b@3s a@4s b@6s a@6s b@9s"} {
		if c := golden(t, target, sim.Options{}); c.Result == want {
			return
		}
	}
	t.Fatalf("threads ran as %q", golden(t, target, sim.Options{}).Result)
}

// The lease service: one holder at a time, a new token per acquisition, takeover once the lease
// expires, and a stale holder fenced off.
func TestLeasesAndFencing(t *testing.T) {
	target := harness.Func{
		ToolList: []harness.Tool{{Name: "pay", Contract: harness.NotIdempotent, Fenced: true}},
		RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
			var out []string
			say := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
			a, err := env.Acquire(ctx, "run", 30*time.Second)
			say("a: token %d %v", a.Token, err)
			_, err = env.Acquire(ctx, "run", 30*time.Second)
			say("again by the same worker: %v", err)
			env.Sleep(ctx, 31*time.Second)
			_, err = env.Renew(ctx, a, 30*time.Second)
			say("renew after expiry: %v", errors.Is(err, harness.ErrLeaseLost))
			b, _ := env.Acquire(ctx, "run", 30*time.Second)
			_, err = env.Call(ctx, harness.Call{Tool: "pay", Args: 1, Fence: b.Token})
			say("pay with token %d: %v", b.Token, err)
			_, err = env.Call(ctx, harness.Call{Tool: "pay", Args: 2, Fence: a.Token})
			say("pay with token %d: %v", a.Token, errors.Is(err, harness.ErrFenced))
			return strings.Join(out, "; "), nil
		},
	}
	c := golden(t, target, sim.Options{})
	want := "a: token 1 <nil>; again by the same worker: <nil>; renew after expiry: true; pay with token 3: <nil>; pay with token 1: true"
	if c.Result != want {
		t.Fatalf("got  %v\nwant %s", c.Result, want)
	}
}

// Two workers: the second cannot take the lease the first holds.
func TestTwoWorkersShareOneLease(t *testing.T) {
	target := harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
		for {
			if _, err := env.Acquire(ctx, "run", time.Minute); err == nil {
				env.Sleep(ctx, 10*time.Second) // work
				return fmt.Sprintf("worker %d worked at %s", env.Worker(), env.Now().Sub(faults.Epoch)), nil
			}
			env.Sleep(ctx, 5*time.Second)
		}
	}}
	c := golden(t, target, sim.Options{Workers: 2})
	got := fmt.Sprint(c.Result)
	if got != "[worker 0 worked at 10s worker 1 worked at 1m10s]" && got != "[worker 0 worked at 1m10s worker 1 worked at 10s]" {
		t.Fatalf("results %s: one worker should have waited for the other's lease to expire", got)
	}
}

// Tool faults behave as their names say.
func TestToolFaults(t *testing.T) {
	target := harness.Func{
		ToolList: []harness.Tool{
			{Name: "po", Contract: harness.IdempotentByKey, Latency: time.Second},
			{Name: "check", Contract: harness.IdempotentByKey, Async: 10 * time.Minute},
		},
		RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
			tctx, cancel := env.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			_, err := env.Call(tctx, harness.Call{Tool: "po", Key: "k", Args: "po-1"})
			r, _ := env.Call(ctx, harness.Call{Tool: "check", Key: "c", Args: "x"})
			msgs, _ := env.Await(ctx, r.Topic)
			env.Sleep(ctx, time.Minute) // let a late effect land
			return fmt.Sprintf("%v; %d message(s)", err, len(msgs)), nil
		},
	}
	rn := newRunner(t, target, sim.Options{})
	for _, tc := range []struct {
		fault   faults.Kind
		result  string
		applied int
	}{
		{faults.ToolTransient, "po: service unavailable (503): not applied, retry; 1 message(s)", 1},
		{faults.ToolAmbiguous, "po: connection reset before the reply: the call may have been applied; 1 message(s)", 2},
		{faults.ToolTimeout, "po: context deadline exceeded (it may still be applied); 1 message(s)", 2},
		{faults.CallbackDup, "<nil>; 2 message(s)", 2},
	} {
		beat := 0
		if tc.fault == faults.CallbackDup {
			beat = 2 // the second call's sent beat
		}
		c := rn.Run(faults.Schedule{{Kind: tc.fault, Beat: beat}})
		if c.Result != tc.result {
			t.Errorf("%s: result %q, want %q", tc.fault, c.Result, tc.result)
		}
		applied := 2 - c.Verdict.Metrics.LostEffects // po and check, in the golden run
		if applied != tc.applied {
			t.Errorf("%s: %d effects applied, want %d (%s)", tc.fault, applied, tc.applied, c)
		}
	}
}

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

// A lease fault freezes the worker running at its beat for its duration; the other worker goes
// on meanwhile.
func TestLeaseFaultFreezesAWorker(t *testing.T) {
	target := harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
		env.Mark(fmt.Sprintf("w%d starts", env.Worker()))
		env.Sleep(ctx, time.Second)
		return fmt.Sprintf("w%d done at %s", env.Worker(), env.Now().Sub(faults.Epoch)), nil
	}}
	rn := newRunner(t, target, sim.Options{Workers: 2})
	c := rn.Run(faults.Schedule{{Kind: faults.Lease, Beat: 0, Dur: time.Hour}})
	got := fmt.Sprint(c.Result)
	if !strings.Contains(got, "done at 1s") || !strings.Contains(got, "done at 1h0m1s") {
		t.Fatalf("results %s: one worker frozen for an hour, the other not", got)
	}
}

// A deploy restarts every worker; a switch hands the baton to the other worker.
func TestDeployAndSwitch(t *testing.T) {
	var starts, events []string
	target := harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
		starts = append(starts, fmt.Sprintf("w%d.p%d", env.Worker(), env.Process()))
		for _, m := range []string{"one", "two"} {
			env.Mark(m)
			events = append(events, fmt.Sprintf("w%d:%s", env.Worker(), m))
		}
		return nil, nil
	}}
	rn := newRunner(t, target, sim.Options{Workers: 2, NoDerive: true})
	starts = nil
	c := rn.Run(faults.Schedule{{Kind: faults.Deploy, Beat: 1}})
	if c.Verdict.Metrics.Restarts != 2 || len(starts) < 3 {
		t.Fatalf("deploy: %d restarts, processes %v", c.Verdict.Metrics.Restarts, starts)
	}
	// Without a switch, the worker that starts runs to its end; a switch at its first beat
	// hands the baton to the other one at once.
	order := func(s faults.Schedule) string {
		events = nil
		rn.Run(s)
		return strings.Join(events, " ")
	}
	plain, switched := order(nil), order(faults.Schedule{{Kind: faults.Switch, Beat: 0}})
	first := plain[:2]
	if !strings.HasPrefix(plain, first+":one "+first+":two") || strings.HasPrefix(switched, first+":one") || len(switched) != len(plain) {
		t.Fatalf("without a switch %q; with one at beat 0 %q", plain, switched)
	}
}

// A panic in a thread started with Go ends the process, as in a real one: it is not swallowed.
func TestThreadPanicEndsTheProcess(t *testing.T) {
	_, err := sim.NewRunner(harness.Fresh(harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
		env.Go(func(ctx context.Context) {
			var m map[string]int
			m["boom"]++
		})
		return nil, env.Sleep(ctx, time.Second)
	}}), sim.Options{Name: "threaded"})
	if err == nil || !strings.Contains(err.Error(), "golden run panicked: assignment to entry in nil map") {
		t.Fatalf("err = %v", err)
	}
}

// Fencing tokens come from one counter for every lease, so a run's token is never taken for a
// stale one because another run's lease was acquired more often.
func TestFencingTokensAreGlobal(t *testing.T) {
	c := golden(t, harness.Func{
		ToolList: []harness.Tool{{Name: "pay", Contract: harness.NotIdempotent, Fenced: true}},
		RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
			a1, _ := env.Acquire(ctx, "run-a", time.Minute)
			env.Release(ctx, a1)
			a2, _ := env.Acquire(ctx, "run-a", time.Minute)
			b, _ := env.Acquire(ctx, "run-b", time.Minute)
			env.Call(ctx, harness.Call{Tool: "pay", Args: "a", Fence: a2.Token})
			_, err := env.Call(ctx, harness.Call{Tool: "pay", Args: "b", Fence: b.Token})
			return fmt.Sprint(err), nil
		},
	}, sim.Options{})
	if c.Result != "<nil>" {
		t.Fatalf("run b's current token was fenced off: %v", c.Result)
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

// A virtual deadline behaves as context.WithTimeout's: its context, and every context derived
// from it, report context.DeadlineExceeded once it passes, so a harness that checks for it
// takes the branch it takes in production; cancelling gives Canceled; a parent's cancellation
// passes down.
func TestVirtualContextsReportTheirDeadline(t *testing.T) {
	c := golden(t, harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
		tctx, cancel := env.WithTimeout(ctx, time.Minute)
		defer cancel()
		derived, stop := context.WithCancel(tctx)
		defer stop()
		valued := context.WithValue(derived, "k", "v")
		if err := env.Sleep(valued, time.Hour); !errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("sleep past the deadline: %v", err)
		}
		got := []string{fmt.Sprint(tctx.Err()), fmt.Sprint(derived.Err()), fmt.Sprint(valued.Value("k"))}
		short, cancelShort := env.WithTimeout(ctx, time.Hour)
		cancelShort()
		parent, cancelParent := context.WithCancel(ctx)
		child, cancelChild := env.WithTimeout(parent, time.Hour)
		defer cancelChild()
		cancelParent()
		<-child.Done()
		got = append(got, fmt.Sprint(short.Err()), fmt.Sprint(child.Err()))
		return strings.Join(got, "; "), nil
	}}, sim.Options{})
	if want := "context deadline exceeded; context deadline exceeded; v; context canceled; context canceled"; c.Result != want {
		t.Fatalf("%v\nwant %s", c.Result, want)
	}
}

// A call that times out lands after its caller's deadline even when it was the run's last: a
// target that retries it without a key and then finishes files it twice, and the oracle counts
// both, as the world would, though the run ended before the late one was due.
func TestLateEffectLandsAfterTheRunEnds(t *testing.T) {
	target := harness.Func{
		ToolList: []harness.Tool{{Name: "notify", Contract: harness.NotIdempotent}},
		RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
			tctx, cancel := env.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			if _, err := env.Call(tctx, harness.Call{Tool: "notify", Args: "finance"}); err != nil {
				_, err = env.Call(ctx, harness.Call{Tool: "notify", Args: "finance"}) // retried without a key
				return nil, err
			}
			return nil, nil
		},
	}
	c := newRunner(t, target, sim.Options{}).Run(faults.Schedule{{Kind: faults.ToolTimeout, Beat: 0}})
	if !c.Breaks(oracle.NoDuplicateEffects) || c.Verdict.Metrics.Duplicates != 1 {
		t.Fatalf("want the late call and its retry counted as a duplicate:\n%s", c)
	}
}

// Two workers of a target that takes no lease both act, with no fault at all: its golden run
// with the fleet's workers applies an effect twice. A fleet case is then held to how often one
// worker applies it, and one that repeats it fails no-duplicate-effects, saying that the golden
// run repeats it too, rather than passing the duplicate as the reference and failing the cases
// that do not repeat it as lost effects; a target that takes a lease passes.
func TestWorkersWithoutALeaseRepeatEffects(t *testing.T) {
	book := []harness.Tool{{Name: "book", Contract: harness.NotIdempotent}}
	unleased := harness.Func{ToolList: book, RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
		if _, err := env.Call(ctx, harness.Call{Tool: "book", Args: map[string]any{"flight": "LH 400"}}); err != nil {
			return nil, err
		}
		env.Mark("booked")
		return "booked", nil
	}}
	rn := newRunner(t, unleased, sim.Options{})
	for _, s := range []faults.Schedule{{{Kind: faults.Deploy, Beat: 1}}, {{Kind: faults.Switch, Beat: 0}}} {
		c := rn.Run(s)
		if !c.Breaks(oracle.NoDuplicateEffects) || !strings.Contains(c.String(), "(golden 1×) by the calls sent at beat 0 (process 1)") || !strings.Contains(c.String(), `the golden run itself, with no fault, applies book {"flight":"LH 400"} 2×: its workers run at once`) {
			t.Errorf("under %s two unleased workers must break no-duplicate-effects, saying so:\n%s", s, c)
		}
		n := 0
		for _, x := range c.Verdict.Violations {
			if x.Property == oracle.NoDuplicateEffects {
				n++
			}
		}
		if m := c.Verdict.Metrics; n != 1 || m.Duplicates < 1 || c.Verdict.DuplicatesByTool["book"] != m.Duplicates {
			t.Errorf("under %s: %d no-duplicate-effects violations (want 1), %d duplicates, by tool %v", s, n, m.Duplicates, c.Verdict.DuplicatesByTool)
		}
	}
	if c := rn.Run(faults.Schedule{{Kind: faults.Kill, Beat: 0}}); c.Verdict.Outcome != oracle.Pass {
		t.Errorf("one worker killed before its call leaves repeats nothing:\n%s", c)
	}
	leased := harness.Func{ToolList: book, RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
		if _, err := env.Acquire(ctx, "run", time.Hour); errors.Is(err, harness.ErrLeaseHeld) {
			return "standby", nil // another worker has the run
		} else if err != nil {
			return nil, err
		}
		return unleased.RunFunc(ctx, env)
	}}
	if c := newRunner(t, leased, sim.Options{}).Run(faults.Schedule{{Kind: faults.Switch, Beat: 0}}); c.Breaks(oracle.NoDuplicateEffects) {
		t.Errorf("a worker that cannot take the lease acts on nothing:\n%s", c)
	}
	// An effect of each worker's own is no repeat.
	announce := harness.Func{ToolList: []harness.Tool{{Name: "announce", Contract: harness.NotIdempotent}}, RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
		_, err := env.Call(ctx, harness.Call{Tool: "announce", Args: map[string]any{"worker": env.Worker()}})
		return nil, err
	}}
	if c := newRunner(t, announce, sim.Options{}).Run(faults.Schedule{{Kind: faults.Switch, Beat: 0}}); c.Verdict.Outcome != oracle.Pass {
		t.Errorf("each worker announcing itself once repeats nothing:\n%s", c)
	}
}

// stepsUnderLease is two workers' harness: under the lease, each step not yet done calls a keyed
// tool (fenced or not; with lookFirst, only if a look-up by the step's reference finds no effect
// yet), writes the step's file, marks, and then renews the lease.
func stepsUnderLease(fenced, lookFirst bool) harness.Target {
	return harness.Func{
		ToolList:  []harness.Tool{{Name: "work", Contract: harness.IdempotentByKey, Latency: 2 * time.Second, Fenced: fenced}},
		StateFunc: func(fsys afero.Fs) (any, error) { return harness.Files(fsys) },
		RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
			fsys := env.FS()
			l, err := env.Acquire(ctx, "run", 30*time.Second)
			for ; err != nil; l, err = env.Acquire(ctx, "run", 30*time.Second) {
				if done, _ := afero.Exists(fsys, "step-3"); done {
					return "ok", nil
				}
				if err := env.Sleep(ctx, 5*time.Second); err != nil {
					return nil, err
				}
			}
			for i := range 4 {
				name := fmt.Sprintf("step-%d", i)
				if done, _ := afero.Exists(fsys, name); done {
					continue
				}
				call := harness.Call{Tool: "work", Key: name, Ref: name}
				if fenced {
					call.Fence = l.Token
				}
				found := false
				if lookFirst {
					if _, found, err = env.Lookup(ctx, "work", name); err != nil {
						return nil, err
					}
				}
				if !found {
					if _, err := env.Call(ctx, call); errors.Is(err, harness.ErrFenced) {
						return "ok", nil
					} else if err != nil {
						return nil, err
					}
				}
				if err := afero.WriteFile(fsys, name, []byte("done"), 0o644); err != nil {
					return nil, err
				}
				env.Mark(name)
				if l, err = env.Renew(ctx, l, 30*time.Second); err != nil {
					return "ok", nil // the lease is lost: stand down
				}
			}
			return "ok", env.Release(ctx, l)
		},
	}
}

// A worker frozen past its lease after its step's call landed wakes to write the step down and
// mark it, after the worker that took over did the step: that is no durable work redone, so with
// a fenced tool every lease case passes, and with a look-up first too (a look-up is a read, not
// the step done again). Unfenced, a worker frozen before its call goes out calls again when it
// wakes, redoing the step without the lease: bounded-work-lost catches that.
func TestFrozenWorkerFinishingItsStepRedoesNothing(t *testing.T) {
	for _, v := range []struct{ fenced, lookFirst bool }{{true, false}, {true, true}, {false, false}} {
		fenced := v.fenced
		rn, err := sim.NewRunner(func() harness.Target { return stepsUnderLease(fenced, v.lookFirst) }, sim.Options{Name: "steps", Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		scheds, err := campaign.Schedules(rn, campaign.Options{Faults: []faults.Kind{faults.Lease}})
		if err != nil {
			t.Fatal(err)
		}
		var failed []*sim.Case
		for _, s := range scheds {
			if c := rn.Run(s); c.Failed() {
				failed = append(failed, c)
			}
		}
		switch {
		case fenced && len(failed) > 0:
			t.Errorf("fenced (look-up first %v): %d of %d lease cases fail, want none; the first:\n%s", v.lookFirst, len(failed), len(scheds), failed[0])
		case !fenced && (len(failed) == 0 || !failed[0].Breaks(oracle.BoundedWorkLost)):
			t.Errorf("unfenced: %d of %d lease cases fail, want some, with bounded-work-lost", len(failed), len(scheds))
		}
	}
}
