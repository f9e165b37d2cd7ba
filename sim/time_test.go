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
	"github.com/chaoskit/chaoskit/sim"
)

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
