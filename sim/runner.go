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
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim/internal/world"
	"github.com/google/go-cmp/cmp"
	"github.com/spf13/afero"
)

// ErrInterrupted is wrapped, with the context's cause, by the error of a golden run that a
// Runner's context stopped (NewRunnerContext).
var ErrInterrupted = errors.New("interrupted")

// Runner runs cases against one target. NewRunner records the target's golden run (twice, to
// check that it is deterministic); each case then runs the target under a schedule and judges
// the outcome against the golden run. Cases with a fleet fault (lease, deploy, switch) need
// several workers; they are judged against a golden run of Options.FleetWorkers workers,
// recorded the first time one is needed.
//
// A case whose first fault is a crash does not re-run the golden prefix: the disk, the world and
// the clock at the crash beat are rebuilt from the golden recording, as ALICE builds crash
// states, and only the recovery runs. A Runner is safe for concurrent use.
type Runner struct {
	ctx       context.Context
	newTarget func() harness.Target
	o         Options
	tools     []harness.Tool
	stater    bool
	cmp       []cmp.Option
	limits    harness.Limits
	ordered   map[string]bool // the tools whose effects are ordered
	hinter    Hinter          // the target's words for its messages, if it has some
	// next is the Runner of Options.NextVersion, built by nextVersion, or its error.
	nextOnce sync.Once
	next     *Runner
	nextErr  error
	// targetBound says that Options.MaxBeats is the target's own default (Limits.MaxBeats).
	targetBound bool

	mu      sync.Mutex
	goldens map[int]*Golden                // by number of workers
	alts    map[string]*oracle.Observation // the runs with the model's alternatives (Runner.alternative)
	buffers sync.Pool                      // of *[]Beat: see buffer
	shares  shares                         // recoveries shared by cases of one crash state (share.go)
}

// Hinter is implemented by a target that says in its own words, for the messages that report a
// run that hung or made no beat, how it reaches chaoskit: a process target names its client's
// calls (ck.sleep, ck.mark), where the messages otherwise name the Env's Go methods.
type Hinter interface {
	// HangHint ends "process 1 hung: no beat for 30s of wall-clock time; ": where a hang
	// usually comes from.
	HangHint() string
	// NoBeatHint ends "golden run made no beat: chaoskit saw nothing it did, so no fault can
	// reach it. ": how what the target does becomes beats.
	NoBeatHint() string
}

// noBeatHint is the target's NoBeatHint, or the advice for a Go target.
func (rn *Runner) noBeatHint() string {
	if rn.hinter != nil {
		return rn.hinter.NoBeatHint()
	}
	return "A target must do its I/O through the Env it is given (env.FS() for files, env.Call for tools, env.Model, env.Sleep, env.Mark), not through os or the network directly"
}

// NewRunner records the golden run of the target that newTarget builds, and checks that a
// second one does the same. newTarget is called once per process (the golden runs' included,
// and every restart's), so that whatever a process keeps in memory dies with it; Fresh makes
// one from a template value. NewRunner returns an error if the golden run does not complete
// within its bounds (a *BoundError: Options.MaxBeats, Options.MaxVirtualTime), hangs, panics,
// or is not deterministic (wrapping ErrNondeterministic).
//
// The first golden run is counted, not recorded: it keeps the number of its beats and hashes of
// them, so that a target that never ends is refused at its bound in memory that did not grow
// with its beats. The second, known to end, is recorded, and compared with the first: a
// difference is reported with the first beat at which they part (found, when the first run's
// checkpoints cannot tell, by a third run compared with the second as it goes).
func NewRunner(newTarget func() harness.Target, opts Options) (*Runner, error) {
	return NewRunnerContext(context.Background(), newTarget, opts)
}

// NewRunnerContext is NewRunner with a context: when ctx is done, every run of the Runner stops
// at once, its golden runs' and its cases' alike, ending their processes as a crash would (their
// Env.AtEnd functions run). A golden run stopped so fails with an error wrapping ErrInterrupted
// and ctx's cause, and is recorded again if asked for again; a case stopped so is unknown, and
// says so (Case.Interrupted).
func NewRunnerContext(ctx context.Context, newTarget func() harness.Target, opts Options) (*Runner, error) {
	if newTarget == nil {
		panic("sim: NewRunner with a nil target constructor")
	}
	spec := newTarget()
	if spec == nil {
		panic("sim: NewRunner: the target constructor returned nil")
	}
	rn := &Runner{ctx: ctx, newTarget: newTarget, o: withDefaults(opts), goldens: map[int]*Golden{}, alts: map[string]*oracle.Observation{}}
	if t, ok := spec.(harness.Tooler); ok {
		rn.tools = t.Tools()
	}
	_, rn.stater = spec.(harness.Stater)
	rn.hinter, _ = spec.(Hinter)
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
	if opts.MaxBeats <= 0 && rn.limits.MaxBeats > 0 {
		rn.o.MaxBeats, rn.targetBound = rn.limits.MaxBeats, true
	}
	if why := rn.limits.OneWorker; why != "" && rn.o.Workers > 1 {
		return nil, fmt.Errorf("%s: cannot run %d workers: %s", rn.o.Name, rn.o.Workers, why)
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
	info, _ := k.Info()
	if info.NextVersion {
		if rn.o.NextVersion == nil {
			return "no next version was given to deploy (sim.Options.NextVersion, chaoskit run --upgrade-exec)"
		}
		return ""
	}
	if info.Family == faults.FleetFamily && rn.limits.OneWorker != "" {
		return rn.limits.OneWorker
	}
	return ""
}

// workers returns how many workers run schedule s: Options.Workers, or FleetWorkers when s
// holds a fleet fault.
func (rn *Runner) workers(s faults.Schedule) int {
	for _, f := range s {
		if info, _ := f.Kind.Info(); info.Family == faults.FleetFamily && !info.NextVersion {
			return max(rn.o.Workers, rn.o.FleetWorkers)
		}
	}
	return rn.o.Workers
}

// Err returns nil while the Runner's context (NewRunnerContext) is not done, and then an error
// wrapping ErrInterrupted and the context's cause.
func (rn *Runner) Err() error {
	if rn.ctx.Err() == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInterrupted, context.Cause(rn.ctx))
}

// state reads the target's durable state from fsys, with a fresh instance: State must depend on
// the disk alone. It returns nil without a Stater.
func (rn *Runner) state() harness.Stater {
	if !rn.stater {
		return nil
	}
	return rn.newTarget().(harness.Stater)
}

// Options returns the runner's options, with defaults filled in.
func (rn *Runner) Options() Options { return rn.o }

// Run runs one case: the target under schedule s, restarted after every crash, judged against
// the golden run. It panics on a schedule that ParseSchedule would refuse (Schedule.Validate).
//
// A verdict never claims more than was checked. A case in which no fault fired tested nothing:
// it is unknown, saying why (Case.Unfired lists the faults that did not fire in any case). A
// failing case is run a second time before it is reported: if the second run differs from the
// first in any beat or in its verdict, the target is not deterministic (in its recovery, say)
// and the case is unknown, for its replay command would not reproduce it.
//
// Cases whose crash state is the same share one recovery run, unless Options.NoShare: a case
// whose only fault is a kill, a power cut or a torn write, at a beat where another case's crash
// left the same disk (names, bytes, what is durable and what is pending), world, clock and
// scheduler, takes that case's recovery, renumbered from its own crash beat, and is judged on its
// own (share.go). A case whose crash state another case is recovering waits for it; TryRun does
// not. A failing case's second run is its own.
func (rn *Runner) Run(s faults.Schedule) *Case {
	c, _ := rn.run(s, shareWait)
	return c
}

// TryRun is Run, except that a case whose crash state another case is recovering at the moment
// is not run: TryRun returns nil and a channel closed when that recovery is over, when TryRun
// decides the case from it. A campaign running several cases at once runs another case
// meanwhile.
func (rn *Runner) TryRun(s faults.Schedule) (*Case, <-chan struct{}) {
	return rn.run(s, shareTry)
}

// shareMode says whether a case may take another case's recovery (share.go), and what it does
// when that recovery is being run.
type shareMode uint8

const (
	shareNone shareMode = iota // run alone
	shareWait                  // share; wait for a recovery being run
	shareTry                   // share; return at once while it is being run
)

// run is Run and TryRun.
func (rn *Runner) run(s faults.Schedule, mode shareMode) (*Case, <-chan struct{}) {
	if err := s.Validate(); err != nil {
		panic("sim: Runner.Run: " + err.Error())
	}
	start := time.Now()
	c, wait := rn.runCaseMode(s, s, false, mode)
	if wait != nil {
		return nil, wait
	}
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
	rn.count(1, 0, 0)
	return c, nil
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
	c, _ := rn.runCaseMode(s, like, keep, shareNone)
	return c
}

// runCaseMode is runCaseAs, sharing the recovery with other cases of the same crash state as
// mode says; with shareTry it returns nil and a channel instead of waiting for another case's
// recovery.
func (rn *Runner) runCaseMode(s, like faults.Schedule, keep bool, mode shareMode) (*Case, <-chan struct{}) {
	c := &Case{Target: rn.o.Name, Seed: rn.o.Seed, Schedule: s, workers: rn.o.Workers, o: &rn.o}
	if rn.o.Repro != nil {
		c.Repro = rn.o.Repro(s)
	}
	for _, k := range s.Kinds() {
		if why := rn.Unsupported(k); why != "" {
			c.Verdict = oracle.Verdict{Outcome: oracle.Unknown, Reason: fmt.Sprintf("%s cannot apply to %s: %s", k, rn.o.Name, why)}
			return c, nil
		}
	}
	o := rn.o
	o.Workers = rn.workers(like)
	gold, err := rn.Golden(like)
	judge, old := rn, gold // the Runner whose golden run judges the case, and the old version's
	if err == nil && upgrades(s) {
		if judge, err = rn.nextVersion(); err == nil {
			gold, err = judge.Golden(like)
		}
	}
	if err != nil {
		c.Verdict = oracle.Verdict{Outcome: oracle.Unknown, Reason: err.Error()}
		c.interrupted = errors.Is(err, ErrInterrupted)
		return c, nil
	}
	g := max(gold.Len(), old.Len())
	r := newRun(rn.newTarget, &o, rn.tools, s, 10*g+1000)
	r.ctx = rn.ctx
	// A run spins when it makes beats with the clock standing still and no mark for much longer
	// than the golden run ever did: ten times its longest such stretch, and more than the whole
	// golden run, so that a recovery replaying the work at once is not mistaken for one.
	r.goldenSpin = max(gold.r.rec.maxSpin, old.r.rec.maxSpin)
	r.maxSpin = max(10*r.goldenSpin, g+1000)
	if scaled := hangFactor * max(gold.maxGap, old.maxGap); scaled > o.Timeout {
		o.Timeout = scaled.Round(time.Millisecond)
		r.hangWhy = fmt.Sprintf(", %d times the golden run's longest gap between beats", hangFactor)
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
	var claimed *share // the recovery of this crash state, which this case runs for others
	var key shareKey
	var crashNote string
	if len(s) > 0 && rn.derivable(s[0], o.Workers, old.Len()) {
		x0, stop := rn.derive(r, old.r, s[0])
		// A deploy runs the next version: its recovery is not the old version's to share.
		if !stop && mode != shareNone && !upgrades(s) && rn.shareable(s, o.Workers, g) && r.fired[0] >= 0 {
			k := s[0].Beat
			key = r.shareKey()
			for claimed == nil {
				sh, mine := rn.claim(key)
				if mine {
					claimed, crashNote = sh, r.notes[k]
					defer func() {
						if sh.rec == nil && x.stopped != nil {
							rn.forget(key, sh) // interrupted: a resumed campaign claims it again
						}
						sh.end() // if the run did not publish (it panicked), those waiting run alone
					}()
					break
				}
				if mode == shareTry {
					select {
					case <-sh.done:
					default:
						return nil, sh.done
					}
				}
				select {
				case <-sh.done:
				case <-rn.ctx.Done():
				}
				if rn.ctx.Err() != nil || sh.rec == nil || !sh.rec.fits(s[0], r.maxBeats) {
					break // run alone
				}
				rn.graft(c, r, k, sh.rec, gold, keep)
				rn.count(0, 0, 1)
				return c, nil
			}
		}
		if stop {
			x = x0
		} else {
			x = r.loop()
		}
	} else {
		x = r.startAll()
	}
	rn.count(0, 1, 0)

	if x.stopped != nil {
		if claimed != nil {
			rn.publish(claimed, r, s[0].Beat, crashNote, x, nil)
		}
		c.Verdict = oracle.Verdict{Outcome: oracle.Unknown, Reason: x.String()}
		c.interrupted = true
		return c, nil
	}
	r.atEnd(x)
	obs := r.observe(x, judge.state(), false)
	if claimed != nil {
		rn.publish(claimed, r, s[0].Beat, crashNote, x, obs)
	}
	oo := oracle.Options{Compare: judge.cmp, WorkLostSlack: rn.o.WorkLostSlack, Ordered: judge.ordered}
	if o.Workers > rn.o.Workers {
		oo.Repeated = judge.repeated(gold)
	}
	oo.ByKey = r.upgradedAt >= 0 // the next version may send other arguments under an effect's key
	c.Verdict = oracle.Check(gold.obs, obs, oo)
	if r.upgradedAt >= 0 {
		oracle.Upgraded(&c.Verdict, old.obs, obs, r.upgradedAt, oo)
	}
	rn.judgeDiverged(c, r, obs, oo)
	if obs.Unrecoverable && c.Breaks(oracle.BoundedWorkLost) {
		rn.asKill(c, r.fired, like)
	}
	c.Result, c.State = obs.Result, obs.State
	for i, b := range r.fired {
		if b < 0 {
			c.Unfired = append(c.Unfired, s[i])
		}
	}
	if len(c.Unfired) > 0 {
		c.unfiredWhy = unfiredWhy(c.Unfired, r.nbeats(), g, r.label, x.String())
	}
	if len(s) > 0 && len(c.Unfired) == len(s) {
		c.Verdict.Outcome = oracle.Unknown
		c.Verdict.Reason = "no fault fired, so the case tested nothing: " + c.unfiredWhy
	}
	if keep || rn.o.KeepBeats || c.Verdict.Outcome != oracle.Pass || c.Verdict.Detected != "" {
		c.Beats, c.Notes = r.allBeats(), r.notes
	}
	return c, nil
}

// asKill judges the work lost of case c, whose corrupt faults flipped a bit and which redid more
// work than the bound allows, as a kill's: a corrupt fault is a kill and a flipped bit, and a
// harness that notices the damage (a checksum that does not match) must redo the work whose
// record the bit destroyed, going back to its last good record. So the case is run again with a
// kill in place of each corrupt fault that fired (fired: where each fault of c's schedule
// fired): if that run keeps within the bound, what c redid beyond it is the flipped bit's, and
// c is excused; if it does not, the kill part of the fault loses the work, as a kill case at
// that beat shows, and c fails too, saying so.
func (rn *Runner) asKill(c *Case, fired []int, like faults.Schedule) {
	s := slices.Clone(c.Schedule)
	var corrupt []string
	for i := range s {
		if s[i].Kind == faults.Corrupt && fired[i] >= 0 {
			corrupt = append(corrupt, s[i].String())
			s[i].Kind = faults.Kill
		}
	}
	k := rn.runCaseAs(s, like, false)
	switch {
	case k.interrupted:
		c.interrupted = true
	case k.Verdict.Outcome != oracle.Unknown && !k.Breaks(oracle.BoundedWorkLost) && !slices.ContainsFunc(k.Verdict.NotChecked, func(n string) bool {
		return strings.HasPrefix(n, oracle.BoundedWorkLost+":")
	}):
		c.Verdict.Excuse(oracle.BoundedWorkLost, fmt.Sprintf("the work redone beyond the bound is what the corruption destroyed: with a kill in place of %s (%s) the run keeps within it",
			strings.Join(corrupt, ", "), s))
	default:
		why := fmt.Sprintf("not the flipped bit's doing: with a kill in place of %s (%s) the run loses that work too", strings.Join(corrupt, ", "), s)
		if k.Verdict.Outcome == oracle.Unknown || !k.Breaks(oracle.BoundedWorkLost) {
			why = fmt.Sprintf("held as a kill's: with a kill in place of %s (%s) bounded-work-lost could not be decided (%s)", strings.Join(corrupt, ", "), s, k.Verdict.Summary())
		}
		for i := range c.Verdict.Violations {
			if v := &c.Verdict.Violations[i]; v.Property == oracle.BoundedWorkLost {
				v.Detail += "\n" + why
			}
		}
	}
}

// RunBare runs the target once, uninterrupted, outside any campaign: its processes use fsys
// directly, with no beats and no faults, under the same scheduler and virtual time. It serves
// to measure a target without chaoskit, or to smoke-test an adapter.
func RunBare(newTarget func() harness.Target, fsys afero.Fs, opts Options) (any, error) {
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
