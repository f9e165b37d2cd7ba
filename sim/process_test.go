package sim_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
	"github.com/spf13/afero"
)

// steps is a small target: it creates a log (fsyncing the directory, so the log survives a
// power loss) and appends "x" to it n times, fsyncing and marking each. It resumes from the
// log's length. The hooks let tests misbehave at chosen points.
type steps struct {
	n int
	// syncOnCreate fsyncs the directory only when the log did not exist, a recovery bug: a
	// process restarted after a kill between the creation and that fsync builds on a log whose
	// name is not durable.
	syncOnCreate bool
	onResume     func(env *harness.Env, done int) // called at start when the file is not empty
	afterStep    func(env *harness.Env, i int)
}

func (s steps) Run(ctx context.Context, env *harness.Env) (any, error) {
	fsys := env.FS()
	b, err := afero.ReadFile(fsys, "log")
	created := errors.Is(err, os.ErrNotExist)
	if len(b) > 0 && s.onResume != nil {
		s.onResume(env, len(b))
	}
	f, err := fsys.OpenFile("log", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if len(b) == 0 && !s.syncOnCreate || created {
		if err := syncDir(fsys); err != nil {
			return nil, err
		}
	}
	for i := len(b); i < s.n; i++ {
		if _, err := f.Write([]byte("x")); err != nil {
			return nil, err
		}
		if err := f.Sync(); err != nil {
			return nil, err
		}
		env.Mark("step " + string(rune('a'+i)))
		if s.afterStep != nil {
			s.afterStep(env, i)
		}
	}
	return "done", nil
}

func (s steps) State(fsys afero.Fs) (any, error) {
	b, err := afero.ReadFile(fsys, "log")
	return string(b), err
}

// newRunner returns a runner of target. Every process gets target itself: the test targets
// keep what they must in Run's own variables.
func newRunner(t *testing.T, target harness.Target, opts sim.Options) *sim.Runner {
	t.Helper()
	rn, err := sim.NewRunner(func() harness.Target { return target }, opts)
	if err != nil {
		t.Fatal(err)
	}
	return rn
}

// schedules lists the schedules of the campaign opts describes over rn's target.
func schedules(t testing.TB, rn *sim.Runner, opts campaign.Options) []faults.Schedule {
	t.Helper()
	s, err := campaign.Schedules(rn, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// explore runs the campaign opts describes over rn's target.
func explore(t *testing.T, rn *sim.Runner, opts campaign.Options) []*sim.Case {
	t.Helper()
	cases, err := campaign.Explore(context.Background(), rn, opts)
	if err != nil {
		t.Fatal(err)
	}
	return cases
}

func kill(beat int) faults.Schedule { return faults.Schedule{{Kind: faults.Kill, Beat: beat}} }

func TestSimpleTargetPassesEverything(t *testing.T) {
	rn := newRunner(t, steps{n: 4}, sim.Options{})
	g, _ := rn.Golden(nil)
	if got := strings.Join(g.Trace(), "|"); got != "fs.create log|fs.syncdir .|fs.write log +1B @0|fs.sync log|mark step a|fs.write log +1B @1|fs.sync log|mark step b|fs.write log +1B @2|fs.sync log|mark step c|fs.write log +1B @3|fs.sync log|mark step d" {
		t.Fatalf("golden trace: %s", got)
	}
	for _, c := range explore(t, rn, campaign.Options{Faults: []faults.Kind{faults.Kill, faults.Power, faults.FsyncFail, faults.DiskFull}}) {
		if c.Verdict.Outcome != oracle.Pass {
			t.Errorf("%s", c)
		}
	}
}

// The same target keeps no checksums, so a write that tears into garbage becomes its state.
func TestTornGarbageCatchesAChecksumlessLog(t *testing.T) {
	rn := newRunner(t, steps{n: 4}, sim.Options{})
	cases := explore(t, rn, campaign.Options{Faults: []faults.Kind{faults.Torn}})
	if len(cases) != 4 {
		t.Fatalf("%d torn cases, want one garbage case per write (1-byte writes do not tear as a prefix)", len(cases))
	}
	for _, c := range cases {
		if c.Schedule[0].Mode != "garbage" || !c.Breaks(oracle.SameState) {
			t.Errorf("%s", c)
		}
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
		}, `call to undeclared tool "nope" (declare it in the target's Tools method) (at sim_test.TestGoldenRunFailuresAreErrors.func4 process_test.go:`},
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

// A crash stops the process even if the target recovers panics, and nothing it writes after
// the crash (in a deferred call, say) reaches the disk.
func TestCrashCannotBeSwallowed(t *testing.T) {
	var wroteAfter atomic.Bool
	target := steps{n: 3, afterStep: nil}
	wrapped := harness.Func{
		RunFunc: func(ctx context.Context, env *harness.Env) (res any, err error) {
			defer func() {
				if p := recover(); p != nil { // a harness that recovers everything
					res, err = "recovered", nil
				}
			}()
			defer func() {
				f, err := env.FS().Create("after") // a deferred save: must not land from a crashed process
				if err == nil && env.Process() == 0 {
					wroteAfter.Store(true)
				}
				if err == nil {
					f.Close()
				}
			}()
			return target.Run(ctx, env)
		},
		StateFunc: func(fsys afero.Fs) (any, error) { return harness.Files(fsys) },
	}
	rn := newRunner(t, wrapped, sim.Options{NoDerive: true})
	for i := 0; i < 300; i++ { // the deferred call races the runner unless the crash waits for it
		wroteAfter.Store(false)
		c := rn.Run(kill(5))
		if wroteAfter.Load() {
			t.Fatalf("run %d: a deferred call of the crashed process wrote to the disk", i)
		}
		if c.Verdict.Outcome != oracle.Pass || c.Verdict.Metrics.Restarts != 1 || c.Result != "done" {
			t.Fatalf("restarts = %d, result %v: %s", c.Verdict.Metrics.Restarts, c.Result, c)
		}
	}
}

// A crash during recovery is just another beat: kill@3 then kill@6 lands in the restarted
// process, and the run still completes.
func TestCrashDuringRecovery(t *testing.T) {
	rn := newRunner(t, steps{n: 4}, sim.Options{})
	c := rn.Run(faults.Schedule{{Kind: faults.Kill, Beat: 3}, {Kind: faults.Power, Beat: 6}})
	if c.Verdict.Outcome != oracle.Pass || c.Verdict.Metrics.Restarts != 2 || len(c.Unfired) != 0 {
		t.Fatalf("%s (restarts %d, unfired %v)", c, c.Verdict.Metrics.Restarts, c.Unfired)
	}
}

func TestHungRecoveryIsUnknown(t *testing.T) {
	target := steps{n: 3, onResume: func(env *harness.Env, done int) { select {} }}
	rn := newRunner(t, target, sim.Options{Timeout: time.Second})
	c := rn.Run(kill(4))
	if c.Verdict.Outcome != oracle.Unknown || !strings.Contains(c.Verdict.Reason, "hung: no beat for 1s") {
		t.Fatalf("%s", c)
	}
}

func TestPanickingRecoveryDoesNotComplete(t *testing.T) {
	target := steps{n: 3, onResume: func(env *harness.Env, done int) { panic("cannot read my own checkpoint") }}
	c := newRunner(t, target, sim.Options{}).Run(kill(4))
	if !c.Breaks(oracle.Completes) || !strings.Contains(c.Verdict.Violations[0].Detail, "panicked: cannot read my own checkpoint (at sim_test.TestPanickingRecoveryDoesNotComplete.func1 process_test.go:") {
		t.Fatalf("%s", c)
	}
}

// A recovery that fails on its own, with every fault over, is not restarted forever: once two
// processes in a row have failed without progress, the supervisor gives up, whatever their
// errors say (here each names its process, as a pid or a time in a message would differ).
func TestFailingRecoveryStops(t *testing.T) {
	target := harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
		if env.Process() > 0 {
			return nil, fmt.Errorf("process %d refusing to resume", env.Process())
		}
		return steps{n: 2}.Run(ctx, env)
	}}
	c := newRunner(t, target, sim.Options{}).Run(kill(2))
	if !c.Breaks(oracle.Completes) || c.Verdict.Metrics.Restarts != 2 || !strings.Contains(c.Verdict.Violations[0].Detail, "fails every time after every fault has ended (processes 1 and 2 failed without progress)") {
		t.Fatalf("%s", c)
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

// Faults that come after the run has ended are reported as unfired, not silently dropped.
func TestUnfiredFaultsAreReported(t *testing.T) {
	rn := newRunner(t, steps{n: 2}, sim.Options{})
	c := rn.Run(faults.Schedule{{Kind: faults.Kill, Beat: 1}, {Kind: faults.Power, Beat: 500}})
	if len(c.Unfired) != 1 || c.Unfired[0].Beat != 500 {
		t.Fatalf("unfired = %v", c.Unfired)
	}
	if got := campaign.ReportCase(c, 0).Unfired; len(got) != 1 || got[0].String() != "power@500" {
		t.Fatalf("report unfired = %v", got)
	}
}

// The process's random source is the same for the golden run and each case's first process,
// and new for each restart.
func TestRandIsPerProcess(t *testing.T) {
	var draws [][2]uint64
	target := harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
		draws = append(draws, [2]uint64{uint64(env.Process()), env.Rand().Uint64()})
		return steps{n: 2}.Run(ctx, env)
	}}
	rn := newRunner(t, target, sim.Options{Seed: 42, NoDerive: true})
	rn.Run(kill(3))
	// golden, golden again, the case's first process, its restart
	if len(draws) != 4 || draws[0] != draws[1] || draws[0] != draws[2] || draws[3][0] != 1 || draws[3][1] == draws[0][1] {
		t.Fatalf("draws %v", draws)
	}
}

// The recovery window of a depth-2 campaign reaches the beat after the recovery's first mark: a
// power cut at the mark lands before the mark counts, so only the one after it asks whether what
// the recovery declared durable is. Here it is not: the log's name was never made durable.
func TestRecoveryWindowReachesPastTheFirstMark(t *testing.T) {
	rn := newRunner(t, steps{n: 3, syncOnCreate: true}, sim.Options{})
	window := rn.Recovery(1) // kill@1: the log created, the directory not yet fsynced
	beats := rn.Beats(faults.Schedule{{Kind: faults.Kill, Beat: 1}}, 1)
	last := window[len(window)-1]
	if len(window) < 2 || beats[last-1].Kind != sim.BeatMark {
		t.Fatalf("Recovery(1) = %v: want it to end one beat after the recovery's first mark", window)
	}
	for _, j := range window {
		c := rn.Run(faults.Schedule{{Kind: faults.Kill, Beat: 1}, {Kind: faults.Power, Beat: j}})
		if want := j == last; c.Breaks(oracle.BoundedWorkLost) != want {
			t.Errorf("kill@1,power@%d breaks bounded-work-lost: %v, want %v\n%s", j, !want, want, c)
		}
	}
}
