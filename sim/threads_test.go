package sim_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
	"github.com/spf13/afero"
)

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

// fanOut calls two tools at once, each with a second of latency, waits for both with a Group,
// and marks; it keeps no state, so a restart calls both again (by key: no effect twice).
func fanOut(fail error) harness.Func {
	return harness.Func{
		ToolList: []harness.Tool{
			{Name: "a", Contract: harness.IdempotentByKey, Latency: time.Second},
			{Name: "b", Contract: harness.IdempotentByKey, Latency: time.Second},
		},
		RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
			start := env.Now()
			g := env.Group()
			for _, tool := range []string{"a", "b"} {
				g.Go(func(ctx context.Context) error {
					if _, err := env.Call(ctx, harness.Call{Tool: tool, Key: tool}); err != nil {
						return err
					}
					if tool == "b" {
						return fail
					}
					return nil
				})
			}
			if err := g.Wait(ctx); err != nil {
				return nil, err
			}
			env.Mark("both called")
			return env.Now().Sub(start).String(), nil
		},
	}
}

// A Group's threads run while Wait waits: two calls of a second each take one second of virtual
// time together, and Wait returns the error a thread returned.
func TestGroupWaitsForItsThreads(t *testing.T) {
	rn := newRunner(t, fanOut(nil), sim.Options{})
	c := rn.Run(nil)
	if c.Result != "1s" {
		t.Fatalf("two calls of a second each at once took %v, want 1s\n%s", c.Result, c)
	}
	for k := range 5 {
		if c := rn.Run(kill(k)); c.Verdict.Outcome != oracle.Pass {
			t.Errorf("%s", c)
		}
	}
	failing := errors.New("b refused")
	if _, err := sim.RunBare(harness.Fresh(fanOut(failing)), afero.NewMemMapFs(), sim.Options{}); !errors.Is(err, failing) {
		t.Fatalf("Wait returned %v, want %v", err, failing)
	}
}

// Waiting for a thread outside the Env hangs the process, for nothing else of it runs meanwhile;
// the refusal says so and names what to wait with instead.
func TestWaitGroupHangSaysWhatToUse(t *testing.T) {
	target := harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
		var wg sync.WaitGroup
		wg.Add(1)
		env.Go(func(ctx context.Context) { env.Mark("thread"); wg.Done() })
		wg.Wait()
		return nil, nil
	}}
	_, err := sim.NewRunner(harness.Fresh(target), sim.Options{Timeout: 200 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "hung: no beat for 200ms") || !strings.Contains(err.Error(), "wait for threads with harness.Group") {
		t.Fatalf("err = %v, want a hang naming harness.Group", err)
	}
}

// Wait waits for threads that the group's threads start, and a thread's error is kept however
// late it comes; once every thread has returned, a done ctx changes nothing.
func TestGroupWaitsForThreadsItsThreadsStart(t *testing.T) {
	child := errors.New("child failed")
	target := harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
		g := env.Group()
		g.Go(func(ctx context.Context) error {
			g.Go(func(ctx context.Context) error {
				if err := env.Sleep(ctx, time.Hour); err != nil {
					return err
				}
				return child
			})
			return nil
		})
		first := g.Wait(ctx)
		done, cancel := context.WithCancel(ctx)
		cancel()
		return fmt.Sprintf("%v / %v", first, g.Wait(done)), nil
	}}
	res, err := sim.RunBare(harness.Fresh(target), afero.NewMemMapFs(), sim.Options{})
	if want := "child failed / child failed"; err != nil || res != want {
		t.Fatalf("Wait returned %v (err %v), want %q", res, err, want)
	}
}
