package sim_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/reference"
	"github.com/chaoskit/chaoskit/sim"
	"pgregory.net/rapid"
)

// agent returns a constructor of the reference agent's variant v, on the onboarding task.
func agent(v reference.Variant) func() harness.Target {
	return func() harness.Target { return reference.New(v, reference.Onboarding()) }
}

func pair(t testing.TB, v reference.Variant, opts sim.Options) (derived, rerun *sim.Runner) {
	opts.Name = reference.New(v, reference.Onboarding()).Name()
	d, err := sim.NewRunner(agent(v), opts)
	if err != nil {
		t.Fatal(err)
	}
	opts.NoDerive = true
	r, err := sim.NewRunner(agent(v), opts)
	if err != nil {
		t.Fatal(err)
	}
	return d, r
}

// The same holds for random schedules of several faults, whose later faults land in
// recoveries.
func TestDerivedEqualsReRunForMultiFaultSchedules(t *testing.T) {
	d, r := pair(t, reference.Correct, sim.Options{Seed: 9})
	kinds := faults.StorageKinds()
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 3).Draw(rt, "n")
		var s faults.Schedule
		beat := rapid.IntRange(0, 20).Draw(rt, "first")
		for i := 0; i < n; i++ {
			f := faults.Fault{Kind: rapid.SampledFrom(kinds).Draw(rt, "kind"), Beat: beat}
			switch f.Kind {
			case faults.DiskFull:
				f.Bytes = int64(rapid.IntRange(0, 300).Draw(rt, "bytes"))
				f.Dur = rapid.SampledFrom([]time.Duration{0, time.Second, time.Minute}).Draw(rt, "for")
			case faults.Power:
				f.Mode = rapid.SampledFrom([]string{"", "subset"}).Draw(rt, "mode")
			case faults.Torn:
				f.Mode = rapid.SampledFrom([]string{"", "garbage"}).Draw(rt, "mode")
			}
			s = append(s, f)
			beat += 1 + rapid.IntRange(0, 60).Draw(rt, "gap")
		}
		if got, want := caseJSON(rt, d.Run(s)), caseJSON(rt, r.Run(s)); got != want {
			rt.Fatalf("under %s:\nderived: %s\nre-run:  %s", s, got, want)
		}
	})
}

// A target with threads that wake at the same instants makes the scheduler draw on its seeded
// source during the golden prefix: a derived crash state carries that on, so derived and re-run
// cases still agree.
func TestDerivedEqualsReRunWithThreads(t *testing.T) {
	target := harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
		var order []string
		for _, name := range []string{"a", "b", "c"} {
			env.Go(func(ctx context.Context) {
				for i := 0; i < 4; i++ {
					if env.Sleep(ctx, time.Second) != nil {
						return
					}
					order = append(order, name)
					env.Mark(fmt.Sprintf("%s%d", name, i))
				}
			})
		}
		if err := env.Sleep(ctx, 10*time.Second); err != nil {
			return nil, err
		}
		return strings.Join(order, ""), nil
	}}
	d := newRunner(t, target, sim.Options{})
	r := newRunner(t, target, sim.Options{NoDerive: true})
	for _, s := range everyBeat(t, d, faults.Fault{Kind: faults.Kill}) {
		if got, want := caseJSON(t, d.Run(s)), caseJSON(t, r.Run(s)); got != want {
			t.Fatalf("under %s:\nderived: %s\nre-run:  %s", s, got, want)
		}
	}
}
