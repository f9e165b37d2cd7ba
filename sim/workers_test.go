package sim_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
	"github.com/spf13/afero"
)

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

// Every worker shares the disk: in a fleet, the worker that did not fill it finds it full too.
func TestDiskFullIsEveryWorkers(t *testing.T) {
	var seen []string
	target := harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
		name := fmt.Sprintf("w%d", env.Worker())
		for i := range 3 {
			err := afero.WriteFile(env.FS(), fmt.Sprintf("%s-%d", name, i), []byte("0123456789"), 0o644)
			seen = append(seen, fmt.Sprintf("%s:%v", name, errors.Is(err, syscall.ENOSPC)))
			if err := env.Sleep(ctx, time.Second); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}}
	rn := newRunner(t, target, sim.Options{Workers: 2})
	g, _ := rn.Golden(nil)
	first := -1
	for i := range g.Len() {
		if g.Beat(i).Admits(faults.DiskFull) {
			first = i
			break
		}
	}
	seen = nil
	rn.RunOnce(faults.Schedule{{Kind: faults.DiskFull, Beat: first, Bytes: 0}})
	full := map[string]bool{}
	for _, s := range seen {
		if s[len(s)-4:] == "true" {
			full[s[:2]] = true
		}
	}
	if !full["w0"] || !full["w1"] {
		t.Fatalf("writes after the disk filled: %v; want both workers refused", seen)
	}
}
