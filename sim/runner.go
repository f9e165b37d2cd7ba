package sim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/internal/world"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/google/go-cmp/cmp"
	"github.com/spf13/afero"
)

// ErrNondeterministic is wrapped by NewRunner's error when two golden runs of a target differ.
var ErrNondeterministic = errors.New("target is not deterministic")

// ErrInterrupted is wrapped, with the context's cause, by the error of a golden run that a
// Runner's context stopped (NewRunnerContext).
var ErrInterrupted = errors.New("interrupted")

// Runner runs cases against one target. NewRunner records the target's golden run (twice, to
// check that it is deterministic); each case then runs the target under a schedule and judges
// the outcome against the golden run. Cases with a fleet fault (lease, deploy, switch) need
// several workers; they are judged against a golden run of harness.Options.FleetReplicas workers,
// recorded the first time one is needed.
//
// A case whose first fault is a crash does not re-run the golden prefix: the disk, the world and
// the clock at the crash beat are rebuilt from the golden recording, as ALICE builds crash
// states, and only the recovery runs. A Runner is safe for concurrent use.
type Runner struct {
	ctx       context.Context
	newTarget func() harness.Target
	o         harness.Options
	tools     []harness.Tool
	stater    bool
	cmp       []cmp.Option
	limits    harness.Limits
	ordered   map[string]bool // the tools whose effects are ordered

	mu      sync.Mutex
	goldens map[int]*Golden // by number of workers
	buffers sync.Pool       // of *[]Beat: see buffer
}

// Golden is a recorded golden run: the target run to completion without faults, with every beat
// and the disk, world and clock before each, so that a crash state at any beat can be rebuilt.
// It is read-only.
type Golden struct {
	r   *run
	obs *oracle.Observation
	err error

	tearOnce sync.Once
	tearable [][]bool // by beat, by tearModes: Disk.Tearable at the beat

	maxGap time.Duration // the longest wall-clock time between two beats in either golden run

	repeatedOnce sync.Once
	repeated     map[string]int // what this golden run of several workers repeats (Runner.repeated)
}

// tearModes are the modes Golden.Tearable answers for: those a campaign lists only where they
// leave the disk otherwise than a plain power loss (faults.KindInfo.Listed).
var tearModes = func() []string {
	var modes []string
	for _, k := range faults.Kinds() {
		switch k.Listed {
		case faults.WhereModesDiffer:
			modes = append(modes, k.Modes...)
		case faults.PlainAndWhereModesDiffer:
			modes = append(modes, k.Modes[1:]...)
		}
	}
	return modes
}()

// NewRunner records the golden run of the target that newTarget builds, and checks that a
// second one does the same. newTarget is called once per process (the golden runs' included,
// and every restart's), so that whatever a process keeps in memory dies with it; Fresh makes
// one from a template value. NewRunner returns an error if the golden run does not complete
// within its bounds (a *BoundError: harness.Options.MaxBeats, harness.Options.MaxVirtualTime), hangs, panics,
// or is not deterministic (wrapping ErrNondeterministic).
//
// The first golden run is counted, not recorded: it keeps the number of its beats and hashes of
// them, so that a target that never ends is refused at its bound in memory that did not grow
// with its beats. The second, known to end, is recorded, and compared with the first: a
// difference is reported with the first beat at which they part (found, when the first run's
// checkpoints cannot tell, by a third run compared with the second as it goes).
func NewRunner(newTarget func() harness.Target, opts harness.Options) (*Runner, error) {
	return NewRunnerContext(context.Background(), newTarget, opts)
}

// NewRunnerContext is NewRunner with a context: when ctx is done, every run of the Runner stops
// at once, its golden runs' and its cases' alike, ending their processes as a crash would (their
// Env.AtEnd functions run). A golden run stopped so fails with an error wrapping ErrInterrupted
// and ctx's cause, and is recorded again if asked for again; a case stopped so is unknown, and
// says so (Case.Interrupted).
func NewRunnerContext(ctx context.Context, newTarget func() harness.Target, opts harness.Options) (*Runner, error) {
	if newTarget == nil {
		panic("sim: NewRunner with a nil target constructor")
	}
	spec := newTarget()
	if spec == nil {
		panic("sim: NewRunner: the target constructor returned nil")
	}
	rn := &Runner{ctx: ctx, newTarget: newTarget, o: withDefaults(opts), goldens: map[int]*Golden{}}
	if t, ok := spec.(harness.Tooler); ok {
		rn.tools = t.Tools()
	}
	_, rn.stater = spec.(harness.Stater)
	if c, ok := spec.(harness.Comparer); ok {
		rn.cmp = c.CmpOptions()
	}
	if l, ok := spec.(harness.Limiter); ok {
		rn.limits = l.Limits()
	}
	world.New(rn.tools) // panics now, not in a case, on a malformed tool list
	for _, t := range rn.tools {
		if t.Ordered {
			if rn.ordered == nil {
				rn.ordered = map[string]bool{}
			}
			rn.ordered[t.Name] = true
		}
	}
	if why := rn.limits.OneWorker; why != "" && rn.o.Replicas > 1 {
		return nil, fmt.Errorf("%s: cannot run %d workers: %s", rn.o.Name, rn.o.Replicas, why)
	}
	if _, err := rn.Golden(nil); err != nil {
		return nil, err
	}
	return rn, nil
}

// Unsupported returns why the target cannot honour faults of kind k, or "" if it can (see
// Limits). Fleet kinds need several workers, which a target limited to one cannot have.
func (rn *Runner) Unsupported(k faults.Kind) string {
	if why := rn.limits.Unsupported[k]; why != "" {
		return why
	}
	if info, _ := k.Info(); info.Family == faults.FleetFamily && rn.limits.OneWorker != "" {
		return rn.limits.OneWorker
	}
	return ""
}

// replicas returns how many workers run schedule s: harness.Options.Replicas, or FleetReplicas when s
// holds a fleet fault.
func (rn *Runner) replicas(s faults.Schedule) int {
	for _, f := range s {
		if info, _ := f.Kind.Info(); info.Family == faults.FleetFamily {
			return max(rn.o.Replicas, rn.o.FleetReplicas)
		}
	}
	return rn.o.Replicas
}

// Golden returns the golden run that schedule s is judged against: with harness.Options.Replicas
// workers, or FleetReplicas when s holds a fleet fault. It records that golden run (twice, to
// check that it is deterministic) the first time, and returns the error NewRunner would.
func (rn *Runner) Golden(s faults.Schedule) (*Golden, error) {
	n := rn.replicas(s)
	rn.mu.Lock()
	defer rn.mu.Unlock()
	g, ok := rn.goldens[n]
	if !ok {
		g = rn.record(n)
		if !errors.Is(g.err, ErrInterrupted) {
			rn.goldens[n] = g
		}
	}
	return g, g.err
}

// Err returns nil while the Runner's context (NewRunnerContext) is not done, and then an error
// wrapping ErrInterrupted and the context's cause.
func (rn *Runner) Err() error {
	if rn.ctx.Err() == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInterrupted, context.Cause(rn.ctx))
}

// record records the golden run with n workers: counted, then recorded, then compared (see
// NewRunner).
func (rn *Runner) record(n int) *Golden {
	name := rn.o.Name
	if n > 1 {
		name = fmt.Sprintf("%s with %d workers", rn.o.Name, n)
	}
	first, obs1, err := rn.goldenRun(n, name, 1, newTally(nil), 0)
	if err != nil {
		return &Golden{err: err}
	}
	if obs1.Beats == 0 {
		return &Golden{err: fmt.Errorf("%s: %w made no beat: chaoskit saw nothing it did, so no fault can reach it. A target must do its I/O through the Env it is given (env.FS() for files, env.Call for tools, env.Model, env.Sleep, env.Mark), not through os or the network directly", name, errGolden)}
	}
	if obs1.StateErr != "" {
		return &Golden{err: fmt.Errorf("%s: the golden run's state cannot be read back (every case would fail same-state): %s", name, obs1.StateErr)}
	}
	r, obs, err := rn.goldenRun(n, name, 2, nil, obs1.Beats)
	var bound *BoundError
	if err != nil && !errors.As(err, &bound) { // past a bound where the first ended: they part
		return &Golden{err: err}
	}
	why, err := rn.compare(first, obs1, r, obs, n, name)
	switch {
	case err != nil:
		return &Golden{err: err}
	case why != "":
		return &Golden{err: fmt.Errorf("%s: %w: %s", name, ErrNondeterministic, why)}
	}
	return &Golden{r: r, obs: obs, maxGap: max(first.rec.maxGap, r.rec.maxGap)}
}

// compare compares the counted golden run first (observed as a) with the recorded one r (b; nil
// if r reached a bound), and says how they differ, or returns "". It runs a third golden run
// when the first's tally cannot say where they part, and returns its error if it is interrupted.
func (rn *Runner) compare(first *run, a *oracle.Observation, r *run, b *oracle.Observation, n int, name string) (string, error) {
	if p, parts := first.rec.tally.part(r.beats); parts {
		if !p.window {
			return p.String(), nil
		}
		return rn.third(n, name, r, b, p.String())
	}
	if b == nil { // the same beats, but r stopped at a bound (virtual time) that the first ended within
		return fmt.Sprintf("the first run finished after %d beats; the second made the same beats and did not finish within the bounds", a.Beats), nil
	}
	v := oracle.CheckDeterministic(outcome(a, false), outcome(b, false), oracle.Options{Compare: rn.cmp})
	if a.Completed != b.Completed || a.Err != b.Err {
		return v[0].Detail, nil
	}
	var effects world.Sum
	for _, e := range b.Effects {
		effects.Add(e.Identity)
	}
	if effects != first.world.EffectSum() {
		what := "different effects"
		if a, b := first.world.EffectSum().N, effects.N; a != b {
			what = fmt.Sprintf("%d and %d effects", a, b)
		}
		return rn.third(n, name, r, b, "two golden runs applied "+what+" (a third run agreed with the second)")
	}
	if len(v) > 0 {
		return v[0].Detail, nil
	}
	return "", nil
}

// third runs a third golden run, counted and compared beat by beat with the recorded one r (b)
// as it goes, to say where they part; if they do not, it returns otherwise, what is known of
// how the first two differ.
func (rn *Runner) third(n int, name string, r *run, b *oracle.Observation, otherwise string) (string, error) {
	c, obs, err := rn.goldenRun(n, name, 3, newTally(r.beats), len(r.beats))
	if err != nil {
		return "", err
	}
	if t := c.rec.tally; t.diverged >= 0 {
		p := parting{beat: t.diverged, second: t.label}
		if t.diverged < len(r.beats) {
			p.first = r.beats[t.diverged].Label()
		}
		return p.String(), nil
	}
	if b != nil {
		if v := oracle.CheckDeterministic(outcome(b, true), outcome(obs, true), oracle.Options{Compare: rn.cmp}); len(v) > 0 {
			return v[0].Detail, nil
		}
	}
	return otherwise, nil
}

// outcome returns what oracle.CheckDeterministic compares of o besides its trace: how it ended,
// its result and state, and its effects if withEffects.
func outcome(o *oracle.Observation, withEffects bool) *oracle.Observation {
	c := &oracle.Observation{Completed: o.Completed, Err: o.Err, Result: o.Result, State: o.State}
	if withEffects {
		c.Effects = o.Effects
	}
	return c
}

// goldenRun runs the target once without faults with the given number of workers, as golden
// run number no of those record makes: counted if t is set (its beats go into t as they are
// made, and none is kept), else recorded (every beat kept, with where the run stood before it).
// of is the beats it should make, if known, for harness.Options.OnGolden. A run that reaches a bound
// returns a *BoundError, with the run; a third run (t compared with another) returns no error
// but its interruption.
func (rn *Runner) goldenRun(replicas int, name string, no int, t *tally, of int) (*run, *oracle.Observation, error) {
	o := rn.o
	o.Replicas = replicas
	r := newRun(rn.newTarget, &o, rn.tools, nil, o.MaxBeats)
	r.ctx, r.maxTime = rn.ctx, o.MaxVirtualTime
	r.rec = &recorder{tally: t, name: name, no: no, of: of}
	switch {
	case t == nil:
		r.disk.StartLog()
	case t.against == nil:
		r.world.Counted = true
	}
	x := r.startAll()
	if t != nil {
		r.fold(len(r.beats))
		t.end()
	}
	which := [...]string{2: "second ", 3: "third "}[min(no, 3)]
	switch {
	case x.stopped != nil:
		return nil, nil, fmt.Errorf("%s: %s%w %w: %w", name, which, errGolden, ErrInterrupted, x.stopped)
	case t != nil && t.against != nil:
		return r, r.observe(x, rn.state(), false), nil
	case x.over || x.late:
		bound := "MaxBeats"
		if x.late {
			bound = "MaxVirtualTime"
		}
		return r, nil, &BoundError{Target: name, Bound: bound, MaxBeats: o.MaxBeats, MaxVirtualTime: o.MaxVirtualTime,
			Beats: min(r.nbeats(), o.MaxBeats), Virtual: r.clock.Now().Sub(faults.Epoch)}
	case x.hung != "" || x.err != nil || x.panicked != "":
		return nil, nil, fmt.Errorf("%s: %s%w %s", name, which, errGolden, x)
	}
	return r, r.observe(x, rn.state(), false), nil
}

// state reads the target's durable state from fsys, with a fresh instance: State must depend on
// the disk alone. It returns nil without a Stater.
func (rn *Runner) state() harness.Stater {
	if !rn.stater {
		return nil
	}
	return rn.newTarget().(harness.Stater)
}

// Len returns the number of beats of the golden run.
func (g *Golden) Len() int { return g.obs.Beats }

// Elapsed returns the virtual time the golden run took.
func (g *Golden) Elapsed() time.Duration { return g.r.clock.Now().Sub(faults.Epoch) }

// Beat returns beat i of the golden run.
func (g *Golden) Beat(i int) Beat { return g.r.beats[i] }

// Trace returns the labels of the golden run's beats, in order.
func (g *Golden) Trace() []string {
	out := make([]string, len(g.r.beats))
	for i, b := range g.r.beats {
		out[i] = b.Label()
	}
	return out
}

// Tearable reports whether a crash of the given mode at beat k (torn's prefix or garbage,
// power's subset) would leave the disk otherwise than a plain power loss there: whether such a
// case tests anything.
// It panics on a mode that neither torn nor power has. The answers for every beat and mode
// come from one replay of the golden disk's log, the first time one is asked for.
func (g *Golden) Tearable(k int, mode string) bool {
	j := slices.Index(tearModes, mode)
	if j < 0 {
		panic(fmt.Sprintf("sim: Golden.Tearable: %q is not a mode of torn or power", mode))
	}
	g.tearOnce.Do(func() {
		at := make([]int, len(g.r.rec.cursors))
		for i, c := range g.r.rec.cursors {
			at[i] = c.disk
		}
		g.tearable = g.r.disk.TearableAt(at, tearModes)
	})
	return g.tearable[k][j]
}

// Options returns the runner's options, with defaults filled in.
func (rn *Runner) Options() harness.Options { return rn.o }

// Run runs one case: the target under schedule s, restarted after every crash, judged against
// the golden run. It panics on a schedule that ParseSchedule would refuse (Schedule.Validate).
//
// A verdict never claims more than was checked. A case in which no fault fired tested nothing:
// it is unknown, saying why (Case.Unfired lists the faults that did not fire in any case). A
// failing case is run a second time before it is reported: if the second run differs from the
// first in any beat or in its verdict, the target is not deterministic (in its recovery, say)
// and the case is unknown, for its replay command would not reproduce it.
func (rn *Runner) Run(s faults.Schedule) *Case {
	if err := s.Validate(); err != nil {
		panic("sim: Runner.Run: " + err.Error())
	}
	start := time.Now()
	c := rn.runCase(s)
	if c.Failed() {
		if why := rn.leftGoldenPath(c); why != "" {
			c.Verdict.Outcome = oracle.Unknown
			c.Verdict.Reason = "not reproducible: the target is not deterministic: before its first fault the case " + why
		} else if again := rn.runCase(s); again.interrupted {
			c.interrupted = true
		} else if why := differs(c, again); why != "" {
			c.Verdict.Outcome = oracle.Unknown
			c.Verdict.Reason = "not reproducible: the target is not deterministic: a second run of the same case " + why
		}
	}
	c.Duration = time.Since(start)
	return c
}

// leftGoldenPath says where case c, before its first fault, did otherwise than the golden run it
// is judged against, or returns "". Up to its first fault a case is its golden run: one that
// parts from it there is not deterministic (threads of a process racing for the order of their
// requests), and two runs may well part the same way, which the second run does not catch.
func (rn *Runner) leftGoldenPath(c *Case) string {
	g, err := rn.Golden(c.Schedule)
	if err != nil || len(c.Schedule) == 0 {
		return ""
	}
	if i, got, want := firstDifference(c.Beats[:min(c.Schedule[0].Beat, len(c.Beats), g.Len())], g.r.beats); i >= 0 {
		return fmt.Sprintf("did %q at beat %d, where the golden run did %q", got, i, want)
	}
	return ""
}

// firstDifference returns the first beat of a where b's differs, with a's label and b's there,
// or -1; b holds at least as many beats as a.
func firstDifference(a, b []Beat) (int, string, string) {
	for i := range a {
		if a[i] == b[i] { // equal beats have equal labels: the common case costs no label
			continue
		}
		if la, lb := a[i].Label(), b[i].Label(); la != lb {
			return i, la, lb
		}
	}
	return -1, "", ""
}

// differs says how a second run of a case differs from the first, or returns "". It compares
// what the runs did and what they came to (beats, outcome, violated properties, metrics), not
// the text of details, which may quote what differs from run to run by design (a subprocess's
// temporary directory).
func differs(first, second *Case) string {
	a, b := first.Verdict, second.Verdict
	props := func(v oracle.Verdict) string {
		var ps []string
		for _, x := range v.Violations {
			ps = append(ps, x.Property)
		}
		return strings.Join(ps, ",")
	}
	if a.Outcome != b.Outcome || props(a) != props(b) || a.Metrics != b.Metrics {
		return fmt.Sprintf("came out %s (%s), the first %s (%s)", b.Outcome, b.Summary(), a.Outcome, a.Summary())
	}
	n := min(len(first.Beats), len(second.Beats))
	if i, got, want := firstDifference(second.Beats[:n], first.Beats); i >= 0 {
		return fmt.Sprintf("did %q at beat %d, where the first did %q", got, i, want)
	}
	if len(first.Beats) != len(second.Beats) {
		return fmt.Sprintf("made %d beats, the first %d", len(second.Beats), len(first.Beats))
	}
	return ""
}

// buffer returns an empty slice to hold a case's beats, of a capacity fit for a run of n beats,
// from the runner's pool: a case's beats are what it allocates most.
func (rn *Runner) buffer(n int) []Beat {
	if b, ok := rn.buffers.Get().(*[]Beat); ok && cap(*b) >= n/2 {
		return (*b)[:0]
	}
	return make([]Beat, 0, n+n/2)
}

// RunOnce runs the case of schedule s once, like Run without its second run of a failure: for a
// search that only asks whether a schedule breaks a property (shrinking), and can take the
// rare nondeterministic answer.
func (rn *Runner) RunOnce(s faults.Schedule) *Case {
	if err := s.Validate(); err != nil {
		panic("sim: Runner.RunOnce: " + err.Error())
	}
	return rn.runCase(s)
}

// runCase runs the case of schedule s once.
func (rn *Runner) runCase(s faults.Schedule) *Case { return rn.runCaseAs(s, s, false) }

// runCaseAs runs the case of schedule s once, with the workers and against the golden run of
// schedule like; keep keeps its beats even if it passes.
func (rn *Runner) runCaseAs(s, like faults.Schedule, keep bool) *Case {
	c := &Case{Target: rn.o.Name, Seed: rn.o.Seed, Schedule: s, replicas: rn.o.Replicas}
	if rn.o.Repro != nil {
		c.Repro = rn.o.Repro(s)
	}
	for _, k := range s.Kinds() {
		if why := rn.Unsupported(k); why != "" {
			c.Verdict = oracle.Verdict{Outcome: oracle.Unknown, Reason: fmt.Sprintf("%s cannot apply to %s: %s", k, rn.o.Name, why)}
			return c
		}
	}
	o := rn.o
	o.Replicas = rn.replicas(like)
	gold, err := rn.Golden(like)
	if err != nil {
		c.Verdict = oracle.Verdict{Outcome: oracle.Unknown, Reason: err.Error()}
		c.interrupted = errors.Is(err, ErrInterrupted)
		return c
	}
	g := gold.Len()
	r := newRun(rn.newTarget, &o, rn.tools, s, 10*g+1000)
	r.ctx = rn.ctx
	// A run spins when it makes beats with the clock standing still and no mark for much longer
	// than the golden run ever did: ten times its longest such stretch, and more than the whole
	// golden run, so that a recovery replaying the work at once is not mistaken for one.
	r.goldenSpin = gold.r.rec.maxSpin
	r.maxSpin = max(10*r.goldenSpin, g+1000)
	if scaled := harness.HangFactor * gold.maxGap; scaled > o.Timeout {
		o.Timeout = scaled.Round(time.Millisecond)
		r.hangWhy = fmt.Sprintf(", %d times the golden run's longest gap between beats", harness.HangFactor)
	}
	r.beats = rn.buffer(g)
	var x ending
	defer func() {
		// Back to the pool unless the case keeps the beats, or a process of the run may still
		// append to them (one that hung, or was given up on, can wake later).
		if x.hung == "" && !x.over && x.stopped == nil && (len(r.beats) == 0 || len(c.Beats) == 0 || &c.Beats[0] != &r.beats[0]) {
			b := r.beats[:0] // a slice of its own: a pointer into r would keep the whole run alive
			rn.buffers.Put(&b)
		}
	}()
	if len(s) > 0 && rn.derivable(s[0], o.Replicas, g) {
		if x0, stop := rn.derive(r, gold.r, s[0]); stop {
			x = x0
		} else {
			x = r.loop()
		}
	} else {
		x = r.startAll()
	}
	if x.stopped != nil {
		c.Verdict = oracle.Verdict{Outcome: oracle.Unknown, Reason: x.String()}
		c.interrupted = true
		return c
	}
	obs := r.observe(x, rn.state(), false)
	oo := oracle.Options{Compare: rn.cmp, WorkLostSlack: rn.o.WorkLostSlack, Ordered: rn.ordered}
	if o.Replicas > rn.o.Replicas {
		oo.Repeated = rn.repeated(gold)
	}
	c.Verdict = oracle.Check(gold.obs, obs, oo)
	c.Result, c.State = obs.Result, obs.State
	for i, b := range r.fired {
		if b < 0 {
			c.Unfired = append(c.Unfired, s[i])
		}
	}
	if len(c.Unfired) > 0 {
		c.unfiredWhy = unfiredWhy(c.Unfired, r.nbeats(), g, r.label)
	}
	if len(s) > 0 && len(c.Unfired) == len(s) {
		c.Verdict.Outcome = oracle.Unknown
		c.Verdict.Reason = "no fault fired, so the case tested nothing: " + c.unfiredWhy
	}
	if keep || c.Verdict.Outcome != oracle.Pass || c.Verdict.Detected != "" {
		c.Beats, c.Notes = r.allBeats(), r.notes
	}
	return c
}

// repeated returns what golden run gold, of more workers than harness.Options.Replicas (a fleet
// fault's), applies more often than the golden run of harness.Options.Replicas workers, each with that
// run's count (oracle.Options.Repeated), or nil. Only what fewer workers apply too counts: an
// effect of a worker's own (its name in the arguments) is no repeat.
func (rn *Runner) repeated(gold *Golden) map[string]int {
	gold.repeatedOnce.Do(func() {
		fewer, err := rn.Golden(nil)
		if err != nil {
			return
		}
		for id, n := range gold.obs.EffectCounts() {
			if m := fewer.obs.EffectCounts()[id]; m > 0 && n > m {
				if gold.repeated == nil {
					gold.repeated = map[string]int{}
				}
				gold.repeated[id] = m
			}
		}
	})
	return gold.repeated
}

// unfiredWhy says why the faults fs did not fire in a run of beats beats, whose golden run has
// golden beats; label, if not nil, returns the label of a beat of the run.
func unfiredWhy(fs []faults.Fault, beats, golden int, label func(int) string) string {
	var parts []string
	for _, f := range fs {
		info, _ := f.Kind.Info()
		switch {
		case f.Beat >= beats:
			parts = append(parts, fmt.Sprintf("%s is past the run's end (it made %d beats; the golden run makes %d)", f, beats, golden))
		case info.Family == faults.FleetFamily && f.Worker > 0:
			parts = append(parts, fmt.Sprintf("%s names a worker the run does not have", f))
		case label != nil:
			parts = append(parts, fmt.Sprintf("%s did not fire: it fires only at %s, and beat %d is %q", f, classWords[info.On], f.Beat, label(f.Beat)))
		default:
			parts = append(parts, fmt.Sprintf("%s did not fire: it fires only at %s, and beat %d is not one", f, classWords[info.On], f.Beat))
		}
	}
	return strings.Join(parts, "; ")
}

// classWords say which beats a class of fault fires at.
var classWords = map[faults.Class]string{
	faults.AnyBeat:       "any beat",
	faults.WriteBeat:     "a write",
	faults.SyncBeat:      "an fsync",
	faults.ToolBeat:      "a tool call",
	faults.ModelBeat:     "a model call",
	faults.AsyncToolBeat: "a call of an asynchronous tool",
}

// RequireAll makes the case unknown if any of its faults did not fire, naming them: for a
// schedule asked for explicitly (a replay), every fault of which is part of the question.
func (c *Case) RequireAll(goldenBeats int) {
	if len(c.Unfired) == 0 || c.Verdict.Outcome == oracle.Unknown {
		return
	}
	why := c.unfiredWhy
	if why == "" {
		why = unfiredWhy(c.Unfired, c.Verdict.Metrics.Beats, goldenBeats, nil)
	}
	c.Verdict.Outcome = oracle.Unknown
	c.Verdict.Reason = "not every fault fired: " + why
}

// startAll starts a process for every worker and runs them to the end.
func (r *run) startAll() ending {
	for _, s := range r.slots {
		r.start(s)
	}
	return r.loop()
}

// derivable reports whether a case whose first fault is f can start from a crash state
// derived from the golden recording: f is a crash within the golden run, and the one worker's
// process is all there is to crash.
func (rn *Runner) derivable(f faults.Fault, replicas, goldenBeats int) bool {
	return !rn.o.NoDerive && !rn.limits.NoDerive && replicas == 1 && f.Beat < goldenBeats && isCrash(f.Kind)
}

// derive puts r where a run crashed by f at beat f.Beat stands, from the golden recording g:
// the golden prefix is what the first process did, because the target is deterministic, so its
// beats are replayed through the same accounting a live beat goes through, and f fires at the
// last of them. It returns true if the crash ends the run.
func (rn *Runner) derive(r *run, g *run, f faults.Fault) (ending, bool) {
	k := f.Beat
	at := g.rec.cursors[k]
	r.clock = faults.NewClock(at.now)
	r.disk = g.disk.Replay(at.disk, faults.DiskOptions{Now: r.clock.Now, Sector: rn.o.Sector, Pending: keepsSubset(r.sched)})
	r.world = g.world.Replay(at.world)
	if err := r.pcg.UnmarshalBinary(at.sched); err != nil {
		panic(err) // it was marshalled by the same type
	}
	// The golden prefix is what the first process did: shared, not copied, with its progress as
	// the recording accounted it; beat k, at which f fires, goes through step as a live beat.
	r.prefix = g.beats[:k]
	p := r.newProcess(r.slots[0])
	p.start, p.marks, p.sinceMark, p.toMark = 0, at.marks, at.sinceMark, at.toMark
	r.prefixMarks = at.marks
	r.step(p, g.beats[k])
	return r.crashed(p, f)
}

// Recovery returns the beats at which a process restarted after a kill at beat k of the golden
// run recovers: from its first beat up to its first mark, and the beat after that mark (every
// beat it makes, if it makes no mark), numbered as a case under kill@k numbers them. A power cut
// at one of them lands while the recovery builds on what the killed process left in the page
// cache; the one after the mark, which a power cut at the mark itself precedes, asks whether
// what the recovery declared durable is. It needs one worker, and returns nil if k is not a beat
// of the golden run or the case has no restart.
func (rn *Runner) Recovery(k int) []int {
	g, err := rn.Golden(nil)
	if err != nil || k < 0 || k >= g.Len() || rn.o.Replicas != 1 {
		return nil
	}
	beats := rn.Beats(faults.Schedule{{Kind: faults.Kill, Beat: k}}, 1)
	var out []int
	for i := k + 1; i < len(beats); i++ {
		b := beats[i]
		if b.Attempt != 1 {
			break
		}
		out = append(out, i)
		if b.Kind == BeatMark {
			if i+1 < len(beats) && beats[i+1].Attempt == 1 {
				out = append(out, i+1)
			}
			break
		}
	}
	return out
}

// Beats returns the beats of the run of schedule s without its faults from the n-th on (n
// from 0), with the workers s runs with, numbered as the case under s numbers them: the case
// under s makes the same beats up to the one its n-th fault fires at, so they say where that
// fault can fire (Beat.Admits). It panics on a schedule that ParseSchedule would refuse.
func (rn *Runner) Beats(s faults.Schedule, n int) []Beat {
	if err := s.Validate(); err != nil {
		panic("sim: Runner.Beats: " + err.Error())
	}
	return rn.runCaseAs(s[:n], s, true).Beats
}

// CrashState returns the durable state the target would find on restarting after crash fault
// f (kill, power, torn or corrupt) at beat f.Beat of the golden run: what a restarted process
// reads, without running it. The target must implement Stater and run with one worker.
func (rn *Runner) CrashState(f faults.Fault) (any, error) {
	g, _ := rn.Golden(nil)
	switch {
	case !rn.stater:
		return nil, fmt.Errorf("%s does not implement harness.Stater", rn.o.Name)
	case !isCrash(f.Kind):
		return nil, fmt.Errorf("CrashState: %s is not a crash", f)
	case f.Beat < 0 || f.Beat >= g.Len():
		return nil, fmt.Errorf("CrashState: beat %d is outside the golden run's %d beats", f.Beat, g.Len())
	case rn.o.Replicas != 1:
		return nil, fmt.Errorf("CrashState: only with one worker (Options.Replicas is %d)", rn.o.Replicas)
	}
	r := newRun(rn.newTarget, &rn.o, rn.tools, faults.Schedule{f}, 0)
	rn.derive(r, g.r, f)
	return rn.state().State(r.disk)
}

// RunBare runs the target once, uninterrupted, outside any campaign: its processes use fsys
// directly, with no beats and no faults, under the same scheduler and virtual time. It serves
// to measure a target without chaoskit, or to smoke-test an adapter.
func RunBare(newTarget func() harness.Target, fsys afero.Fs, opts harness.Options) (any, error) {
	if fsys == nil {
		panic("sim: RunBare with a nil filesystem")
	}
	o := withDefaults(opts)
	var tools []harness.Tool
	if t, ok := newTarget().(harness.Tooler); ok {
		tools = t.Tools()
	}
	r := newRun(newTarget, &o, tools, nil, o.MaxBeats)
	r.bare, r.maxTime = fsys, o.MaxVirtualTime
	x := r.startAll()
	switch {
	case x.hung != "":
		return nil, errors.New(x.hung)
	case x.late:
		return nil, fmt.Errorf("no end within %s of virtual time (Options.MaxVirtualTime)", faults.FormatDuration(o.MaxVirtualTime))
	case x.panicked != "":
		return nil, fmt.Errorf("panicked: %s", x.panicked)
	}
	return x.result, x.err
}
