package sim_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
	"github.com/spf13/afero"
)

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
		// Every lease fault at every beat, freezing a worker for less than a lease, more, and more
		// than the tool remembers keys (a campaign's LeasePauses).
		scheds := everyBeat(t, rn, faults.Fault{Kind: faults.Lease, Dur: 15 * time.Second},
			faults.Fault{Kind: faults.Lease, Dur: 45 * time.Second}, faults.Fault{Kind: faults.Lease, Dur: 2 * time.Hour})
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
