package sim_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
	"github.com/spf13/afero"
)

// endless marks progress for ever, as a harness stuck in a loop does.
var endless = harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
	for i := 0; ; i++ {
		env.Mark("m" + strconv.Itoa(i))
	}
}}

// A golden run that never finishes is refused at its bound, in beats or in virtual time, with one
// line naming the bound; a run right at the bound is accepted, and the bound does not limit
// the cases, which are bounded by their golden run.
func TestEndlessGoldenRunIsRefusedAtItsBound(t *testing.T) {
	sleeper := harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
		for {
			if err := env.Sleep(ctx, time.Hour); err != nil {
				return nil, err
			}
		}
	}}
	for _, tc := range []struct {
		name   string
		target harness.Target
		opts   sim.Options
		want   string
		bound  string
		beats  int
	}{
		{"marks", endless, sim.Options{MaxBeats: 5000}, "marks: golden run did not finish within 5000 beats (Options.MaxBeats; it had reached 0s of virtual time)", "MaxBeats", 5000},
		{"sleeps", sleeper, sim.Options{MaxVirtualTime: 100 * time.Hour}, "sleeps: golden run did not finish within 100h of virtual time (Options.MaxVirtualTime; it had made 101 beats)", "MaxVirtualTime", 101},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Name = tc.name
			_, err := sim.NewRunner(func() harness.Target { return tc.target }, tc.opts)
			var bound *sim.BoundError
			if !errors.As(err, &bound) || bound.Bound != tc.bound || bound.Beats != tc.beats {
				t.Fatalf("err = %v (%+v), want a *BoundError at %s after %d beats", err, bound, tc.bound, tc.beats)
			}
			if !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err = %q, want one line starting %q", err, tc.want)
			}
		})
	}

	marks := harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
		for i := range 10 {
			env.Mark("m" + strconv.Itoa(i)) // kept nowhere: a restart does them all again
		}
		return nil, nil
	}}
	if _, err := sim.NewRunner(harness.Fresh(marks), sim.Options{MaxBeats: 9}); err == nil {
		t.Fatalf("a golden run of 10 beats passed a bound of 9")
	}
	rn := newRunner(t, marks, sim.Options{MaxBeats: 10})
	if c := rn.Run(kill(9)); c.Breaks(oracle.Completes) || c.Verdict.Metrics.Beats != 20 {
		t.Fatalf("a case whose recovery goes past MaxBeats: %d beats: %s", c.Verdict.Metrics.Beats, c)
	}
}

// bounded is endless with a default bound of its own, as a command has (harness.Limits.MaxBeats).
type bounded struct{ harness.Func }

func (bounded) Limits() harness.Limits { return harness.Limits{MaxBeats: 300} }

// A target's own default bound (a command's, whose beats cost a round trip each) refuses it
// there, saying that the bound was the target's; Options.MaxBeats, when set, replaces it.
func TestTargetsOwnBoundRefusesItSooner(t *testing.T) {
	target := bounded{endless}
	_, err := sim.NewRunner(harness.Fresh(target), sim.Options{Name: "cmd"})
	var bound *sim.BoundError
	if !errors.As(err, &bound) || bound.MaxBeats != 300 || !bound.TargetDefault ||
		!strings.HasPrefix(err.Error(), "cmd: golden run did not finish within 300 beats (the target's default, harness.Limits.MaxBeats: set Options.MaxBeats for more;") {
		t.Fatalf("err = %v (%+v), want a *BoundError at the target's 300 beats", err, bound)
	}
	_, err = sim.NewRunner(harness.Fresh(target), sim.Options{Name: "cmd", MaxBeats: 1000})
	if !errors.As(err, &bound) || bound.MaxBeats != 1000 || bound.TargetDefault {
		t.Fatalf("err = %v (%+v), want a *BoundError at Options.MaxBeats, 1000", err, bound)
	}
}

// The first golden run keeps nothing of its beats: a target that never ends makes 400,000 more
// beats with the heap where it was (recording them would keep over 100 MB).
func TestCountedGoldenRunKeepsNoBeats(t *testing.T) {
	const from, to = 20_000, 420_000
	var heap [2]uint64
	target := harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
		for i := 0; ; i++ {
			if i == from || i == to {
				runtime.GC()
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				heap[i/to] = m.HeapAlloc
			}
			env.Mark("m" + strconv.Itoa(i))
		}
	}}
	_, err := sim.NewRunner(harness.Fresh(target), sim.Options{MaxBeats: to + 10})
	var bound *sim.BoundError
	if !errors.As(err, &bound) {
		t.Fatalf("err = %v, want a *BoundError", err)
	}
	if heap[1] > heap[0]+16<<20 {
		t.Fatalf("the heap grew from %d to %d bytes over %d beats", heap[0], heap[1], to-from)
	}
}

// A target that is not deterministic is refused naming the first beat at which two golden runs
// part, however far into the run it is and whichever run differs: from the first run's
// checkpoints when they can tell, else from a third run compared with the second; and a window
// of beats when only the first run differs and its checkpoints are too far apart to say more.
func TestNondeterminismIsNamedAtItsBeat(t *testing.T) {
	for _, tc := range []struct {
		name string
		// label returns the label of mark i in golden run n (from 1), and the run's length.
		label func(n, i int) string
		beats func(n int) int
		want  string
	}{
		{"early, the first run", diverge(1, 5), fixed(2000), `two golden runs diverge at beat 5: the first did "mark 5 in run 1", the second "mark 5"`},
		{"late, every run", diverge(0, 1000), fixed(2000), `two golden runs diverge at beat 1000: the first did "mark 1000 in run 2", the second "mark 1000 in run 3"`},
		{"late, the second run", diverge(2, 1000), fixed(2000), `two golden runs diverge at beat 1000: the first did "mark 1000 in run 2", the second "mark 1000"`},
		{"the first run shorter", diverge(-1, 0), func(n int) int { return map[bool]int{true: 1000, false: 2000}[n == 1] }, `two golden runs diverge at beat 1000: the first had ended, the second did "mark 1000"`},
		{"the second run shorter", diverge(-1, 0), func(n int) int { return map[bool]int{true: 1500, false: 2000}[n == 2] }, `two golden runs diverge at beat 1500: the first had ended, the second did "mark 1500"`},
		{"late, the first run", diverge(1, 1000), fixed(2000), `between`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var runs atomic.Int32
			target := harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
				n := int(runs.Add(1))
				for i := range tc.beats(n) {
					env.Mark(tc.label(n, i))
				}
				return nil, nil
			}}
			_, err := sim.NewRunner(harness.Fresh(target), sim.Options{Name: "flaky"})
			if !errors.Is(err, sim.ErrNondeterministic) {
				t.Fatalf("err = %v, want ErrNondeterministic", err)
			}
			if tc.want != "between" {
				if want := "flaky: target is not deterministic: " + tc.want; err.Error() != want {
					t.Fatalf("err = %q\nwant %q", err, want)
				}
				return
			}
			m := regexp.MustCompile(`diverge between beats (\d+) and (\d+) \(a third run agreed with the second\)$`).FindStringSubmatch(err.Error())
			if m == nil {
				t.Fatalf("err = %q, want a window of beats", err)
			}
			lo, _ := strconv.Atoi(m[1])
			hi, _ := strconv.Atoi(m[2])
			if lo > 1000 || hi < 1000 || hi-lo > 64 {
				t.Fatalf("err = %q, want a short window around beat 1000", err)
			}
		})
	}

	// Effects that differ where the beats do not (arguments drawn from outside the Env): named by
	// the third run when it differs too, counted when only the first did.
	for only, want := range map[int]string{
		0: `two golden runs differ at effect 1: po {"run":2} and po {"run":3}`,
		1: `two golden runs applied different effects (a third run agreed with the second)`,
	} {
		var runs atomic.Int32
		target := harness.Func{ToolList: []harness.Tool{{Name: "po", Contract: harness.NotIdempotent}},
			RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
				n := int(runs.Add(1))
				for i := range 2 {
					run := 0
					if i == 1 && (only == 0 || only == n) {
						run = n
					}
					if _, err := env.Call(ctx, harness.Call{Tool: "po", Args: map[string]int{"run": run}}); err != nil {
						return nil, err
					}
				}
				return nil, nil
			}}
		_, err := sim.NewRunner(harness.Fresh(target), sim.Options{Name: "flaky"})
		if want := "flaky: target is not deterministic: " + want; err == nil || err.Error() != want {
			t.Errorf("err = %v\nwant %s", err, want)
		}
	}
}

// diverge returns the labels of a target whose mark at beat differs in golden run `run` (0:
// in every run; -1: in none).
func diverge(run, beat int) func(n, i int) string {
	return func(n, i int) string {
		if i == beat && (run == 0 || run == n) {
			return fmt.Sprintf("%d in run %d", i, n)
		}
		return strconv.Itoa(i)
	}
}

func fixed(n int) func(int) int { return func(int) int { return n } }

// A Runner's context stops its golden runs and its cases at once, ending their processes (their
// AtEnd functions run), even a process waiting in code of its own; the error and the case say
// so, and a golden run stopped so is recorded anew when asked for again.
func TestContextStopsGoldenRunsAndCases(t *testing.T) {
	cause := errors.New("SIGTERM")
	ctx, cancel := context.WithCancelCause(context.Background())
	var ended atomic.Bool
	target := harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
		env.AtEnd(func() { ended.Store(true) })
		for i := 0; ; i++ {
			if i == 3000 {
				cancel(cause)
			}
			env.Mark("m" + strconv.Itoa(i))
		}
	}}
	_, err := sim.NewRunnerContext(ctx, harness.Fresh(target), sim.Options{Name: "endless"})
	if !errors.Is(err, sim.ErrInterrupted) || !errors.Is(err, cause) || !ended.Load() {
		t.Fatalf("err = %v, processes ended: %v; want ErrInterrupted and the cause, every process ended", err, ended.Load())
	}
	if want := "endless: golden run interrupted: SIGTERM"; err.Error() != want {
		t.Fatalf("err = %q, want %q", err, want)
	}

	// A process that waits in code of its own (a subprocess's adapter reading its pipe) until
	// AtEnd tells it to stop.
	ctx, cancel = context.WithCancelCause(context.Background())
	blocked := make(chan struct{})
	waiter := harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
		stop := make(chan struct{})
		env.AtEnd(func() { close(stop) })
		env.Mark("started")
		close(blocked)
		<-stop
		return nil, errors.New("stopped")
	}}
	go func() {
		<-blocked
		cancel(cause)
	}()
	if _, err := sim.NewRunnerContext(ctx, harness.Fresh(waiter), sim.Options{}); !errors.Is(err, sim.ErrInterrupted) {
		t.Fatalf("err = %v, want ErrInterrupted", err)
	}

	// A process that registers its AtEnd function only once it has ended (the run stopped it while
	// it started a subprocess, say): the function runs then, and the run returns only after it.
	ctx, cancel = context.WithCancelCause(context.Background())
	var cleaned atomic.Bool
	late := harness.Func{RunFunc: func(pctx context.Context, env *harness.Env) (any, error) {
		env.Mark("started")
		cancel(cause)
		<-pctx.Done() // the process has ended
		env.AtEnd(func() { cleaned.Store(true) })
		return nil, errors.New("AtEnd returned")
	}}
	if _, err := sim.NewRunnerContext(ctx, harness.Fresh(late), sim.Options{}); !errors.Is(err, sim.ErrInterrupted) || !cleaned.Load() {
		t.Fatalf("err = %v, AtEnd's function ran: %v; want ErrInterrupted, after it ran", err, cleaned.Load())
	}

	// A case: its recovery is stopped; the case is unknown and interrupted, and so is the next.
	ctx, cancel = context.WithCancelCause(context.Background())
	rn, err := sim.NewRunnerContext(ctx, harness.Fresh(steps{n: 4, onResume: func(env *harness.Env, done int) { cancel(cause) }}), sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		c := rn.Run(kill(5))
		if !c.Interrupted() || c.Verdict.Outcome != oracle.Unknown || !strings.Contains(c.Verdict.Reason, "interrupted: SIGTERM") {
			t.Fatalf("interrupted %v: %s", c.Interrupted(), c)
		}
	}
	if err := rn.Err(); !errors.Is(err, sim.ErrInterrupted) || !errors.Is(err, cause) {
		t.Fatalf("Err() = %v", err)
	}
}

// OnGolden is called as golden runs go on: the first counted, the second knowing how many beats
// it should make.
func TestOnGoldenShowsProgress(t *testing.T) {
	var seen []sim.GoldenProgress
	rn := newRunner(t, steps{n: 3}, sim.Options{Name: "s", MaxBeats: 50, OnGolden: func(p sim.GoldenProgress) { seen = append(seen, p) }})
	g, _ := rn.Golden(nil)
	if len(seen) < 2 || seen[0].Run != 1 || seen[0].Of != 0 || seen[0].MaxBeats != 50 || seen[len(seen)-1].Run != 2 || seen[len(seen)-1].Of != g.Len() || seen[0].Target != "s" {
		t.Fatalf("progress %+v", seen)
	}
}

// A second golden run that makes the first's beats and then stops at a bound the first finished
// within (here a wait whose virtual deadline differs between runs) is refused as not
// deterministic, saying so, rather than taken for a run with nothing to compare.
func TestSecondGoldenRunPastABoundIsNondeterministic(t *testing.T) {
	runs := 0
	target := harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
		runs++
		d := time.Hour
		if runs == 2 {
			d = 20000 * time.Hour // past the default bound of a year
		}
		wctx, cancel := env.WithTimeout(ctx, d)
		defer cancel()
		env.Await(wctx, "approval")
		return nil, nil
	}}
	_, err := sim.NewRunner(func() harness.Target { return target }, sim.Options{})
	if !errors.Is(err, sim.ErrNondeterministic) || !strings.Contains(err.Error(), "the second made the same beats and did not finish within the bounds") {
		t.Fatalf("NewRunner: %v", err)
	}
}

// A target that is not deterministic is refused, naming the first beat where two golden runs
// differ.
func TestNondeterministicTargetIsRefused(t *testing.T) {
	var calls atomic.Int32
	target := harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
		name := "a"
		if calls.Add(1) > 1 {
			name = "b"
		}
		f, err := env.FS().Create(name)
		if err != nil {
			return nil, err
		}
		return nil, f.Close()
	}}
	_, err := sim.NewRunner(func() harness.Target { return target }, sim.Options{Name: "flaky"})
	if !errors.Is(err, sim.ErrNondeterministic) {
		t.Fatalf("err = %v, want ErrNondeterministic", err)
	}
	if want := `flaky: target is not deterministic: two golden runs diverge at beat 0: the first did "fs.create a", the second "fs.create b"`; err.Error() != want {
		t.Fatalf("err = %q\nwant %q", err, want)
	}
}

func TestGoldenRunFailuresAreErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		run  func(ctx context.Context, env *harness.Env) (any, error)
		want string
	}{
		"error": {func(ctx context.Context, env *harness.Env) (any, error) { return nil, errors.New("boom") }, "golden run failed: boom"},
		"panic": {func(ctx context.Context, env *harness.Env) (any, error) { panic("kaput") }, "golden run panicked: kaput"},
		"hang":  {func(ctx context.Context, env *harness.Env) (any, error) { select {} }, "golden run process 0 hung: no beat for 1s"},
		"unknown tool": {func(ctx context.Context, env *harness.Env) (any, error) {
			return env.Call(ctx, harness.Call{Tool: "nope"})
		}, `call to undeclared tool "nope" (declare it in the target's Tools method) (at sim_test.TestGoldenRunFailuresAreErrors.func4 golden_test.go:`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := sim.NewRunner(harness.Fresh(harness.Func{RunFunc: tc.run}), sim.Options{Name: name, Timeout: time.Second})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error spans lines: %q", err)
			}
		})
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
