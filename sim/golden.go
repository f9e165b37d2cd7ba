package sim

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim/internal/world"
)

// A golden run is made twice (Runner.record): first counted, keeping of its beats only how many
// there were and running hashes of them (a tally), so that a target that never ends costs no
// memory until it reaches a bound (Options.MaxBeats, Options.MaxVirtualTime); then, known to end,
// recorded in full. The two are compared through the tally's checkpoints; when those cannot
// name the first beat at which the runs part, a third run, counted, is compared with the
// recorded one beat by beat as it goes.

// ErrNondeterministic is wrapped by NewRunner's error when two golden runs of a target differ.
var ErrNondeterministic = errors.New("target is not deterministic")

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

// Golden returns the golden run that schedule s is judged against: with Options.Workers
// workers, or FleetWorkers when s holds a fleet fault. It records that golden run (twice, to
// check that it is deterministic) the first time, and returns the error NewRunner would.
func (rn *Runner) Golden(s faults.Schedule) (*Golden, error) {
	n := rn.workers(s)
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
		return &Golden{err: fmt.Errorf("%s: %w made no beat: chaoskit saw nothing it did, so no fault can reach it. %s", name, errGolden, rn.noBeatHint())}
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
// of is the beats it should make, if known, for Options.OnGolden. A run that reaches a bound
// returns a *BoundError, with the run; a third run (t compared with another) returns no error
// but its interruption.
func (rn *Runner) goldenRun(workers int, name string, no int, t *tally, of int) (*run, *oracle.Observation, error) {
	o := rn.o
	o.Workers = workers
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
			Beats: min(r.nbeats(), o.MaxBeats), Virtual: r.clock.Now().Sub(faults.Epoch), TargetDefault: rn.targetBound && bound == "MaxBeats"}
	case x.cause != nil:
		// Kept in the chain, so that a caller tells a run that cannot be judged (a request
		// the cassette does not answer) from one that failed.
		return nil, nil, fmt.Errorf("%s: %s%w %w", name, which, errGolden, x.cause)
	case x.hung != "" || x.err != nil || x.panicked != "":
		return nil, nil, fmt.Errorf("%s: %s%w %s", name, which, errGolden, x)
	}
	return r, r.observe(x, rn.state(), false), nil
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
// case tests anything. k may be faults.End: after the run's end, its last process exited.
// It panics on a mode that neither torn nor power has. The answers for every beat and mode
// come from one replay of the golden disk's log, the first time one is asked for.
func (g *Golden) Tearable(k int, mode string) bool {
	j := slices.Index(tearModes, mode)
	if j < 0 {
		panic(fmt.Sprintf("sim: Golden.Tearable: %q is not a mode of torn or power", mode))
	}
	g.tearOnce.Do(func() {
		at := make([]int, len(g.r.rec.cursors), len(g.r.rec.cursors)+1)
		for i, c := range g.r.rec.cursors {
			at[i] = c.disk
		}
		g.tearable = g.r.disk.TearableAt(append(at, g.r.disk.LogLen()), tearModes) // the last: the end
	})
	if k == faults.End {
		k = len(g.tearable) - 1
	}
	return g.tearable[k][j]
}

// repeated returns what golden run gold, of more workers than Options.Workers (a fleet
// fault's), applies more often than the golden run of Options.Workers workers, each with that
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

// recorder watches a golden run: it records where the run stood before every beat (cursors),
// or, for a counted run, only tallies its beats.
type recorder struct {
	cursors []cursor
	tally   *tally        // set for a counted run, which keeps no cursors and no beats
	maxSpin int           // the longest stretch of beats with the clock standing still and no mark
	maxGap  time.Duration // the longest wall-clock time between two beats, or a start and a beat
	// For Options.OnGolden: the run's name and number, the beats it should make (0: not
	// known), and when OnGolden was last called.
	name  string
	no    int
	of    int
	shown time.Time
}

func (rc *recorder) at(r *run, p *process) {
	sched, _ := r.pcg.MarshalBinary()
	rc.cursors = append(rc.cursors, cursor{r.disk.LogLen(), r.world.Changes(), r.clock.Now(), sched, p.marks, p.sinceMark, p.toMark})
}

// foldEvery is how many beats a counted golden run holds before it adds them to its tally.
const foldEvery = 256

// fold adds the first n beats the run holds to its tally, and drops them. A beat is added once
// the next is made: only the last beat made can still change (Env.lease marks it refused).
func (r *run) fold(n int) {
	t := r.rec.tally
	for i := range n {
		t.add(&r.beats[i])
	}
	r.folded += n
	r.beats = append(r.beats[:0], r.beats[n:]...)
	if t.diverged >= 0 {
		r.halted = true // the third golden run has found where it parts: it goes no further
	}
}

// errGolden wraps every failure of a golden run.
var errGolden = errors.New("golden run")

// BoundError is the error of a golden run that reached one of its bounds without finishing
// (Options.MaxBeats or Options.MaxVirtualTime): a harness that never ends, or one longer than the
// bounds, which must then be raised.
type BoundError struct {
	Target string
	// Bound names the bound reached: "MaxBeats" or "MaxVirtualTime".
	Bound string
	// MaxBeats and MaxVirtualTime are the bounds the run had.
	MaxBeats       int
	MaxVirtualTime time.Duration
	// Beats and Virtual are how far it got: the beats it made (MaxBeats, when that is the bound
	// it reached), the virtual time that passed.
	Beats   int
	Virtual time.Duration
	// TargetDefault says that MaxBeats was the target's own default (harness.Limits.MaxBeats),
	// Options.MaxBeats being unset.
	TargetDefault bool
}

func (e *BoundError) Error() string {
	limit, got := fmt.Sprint(e.MaxBeats, " beats"), "it had reached "+faults.FormatDuration(e.Virtual)+" of virtual time"
	if e.Bound == "MaxVirtualTime" {
		limit, got = faults.FormatDuration(e.MaxVirtualTime)+" of virtual time", fmt.Sprint("it had made ", e.Beats, " beats")
	}
	which := "Options." + e.Bound
	if e.TargetDefault {
		which = "the target's default, harness.Limits.MaxBeats: set Options.MaxBeats for more"
	}
	return fmt.Sprintf("%s: %s did not finish within %s (%s; %s): a harness that never ends, or one that needs a higher bound",
		e.Target, errGolden, limit, which, got)
}

// Unwrap returns the error every failed golden run wraps.
func (e *BoundError) Unwrap() error { return errGolden }

// progressEvery is how often, at most, Options.OnGolden is called, in wall-clock time.
const progressEvery = 200 * time.Millisecond

// maxPoints is how many checkpoints a tally keeps at most, the first headPoints of them at every
// one of the first beats, for good: a target that is not deterministic is most often so from its
// start (an id drawn from the wall clock).
const (
	maxPoints  = 128
	headPoints = 64
)

// tally is what a counted golden run keeps of its beats: their number and the running hash of
// their labels, and checkpoints of that hash: at each of the first headPoints beats, then at
// every beat, and each time maxPoints are kept, at every other one of those after the first
// headPoints, so that its memory does not grow with the run while a divergence early in it can
// still be named exactly.
type tally struct {
	beats  world.Sum
	points []point
	every  int    // the beats between two checkpoints
	last   string // the label of the last beat
	// against, for the third golden run, is the recorded run it is compared with as it goes;
	// diverged is the first beat at which it differs (-1: none so far), and label what it did
	// there ("": it had ended).
	against  []Beat
	diverged int
	label    string
}

// point is a checkpoint of a tally: the hash of the labels of beats 0 to beat, and beat's label.
type point struct {
	beat  int
	hash  uint64
	label string
}

func newTally(against []Beat) *tally { return &tally{every: 1, against: against, diverged: -1} }

// add adds a beat, with its final label (set once the next beat is made: a lease beat learns
// after it is made whether it was refused).
func (t *tally) add(b *Beat) {
	i, label := t.beats.N, b.Label()
	t.beats.Add(label)
	t.last = label
	if i%t.every == 0 {
		t.points = append(t.points, point{i, t.beats.Hash, label})
		if len(t.points) == maxPoints {
			kept := t.points[:headPoints]
			for j, p := range t.points[headPoints:] {
				if j%2 == 0 {
					kept = append(kept, p)
				}
			}
			clear(t.points[len(kept):])
			t.points, t.every = kept, 2*t.every
		}
	}
	if t.against != nil && t.diverged < 0 && (i >= len(t.against) || t.against[i].Label() != label) {
		t.diverged, t.label = i, label
	}
}

// end closes the tally of a run that ended: a third run that ended before the run it is compared
// with parts from it there.
func (t *tally) end() {
	if t.against != nil && t.diverged < 0 && t.beats.N < len(t.against) {
		t.diverged = t.beats.N
	}
}

// parting is where two golden runs part, for the error that refuses the target.
type parting struct {
	beat          int    // the first beat at which they differ
	first, second string // what each did there ("": it had ended)
	firstLen      int    // the beats of the first run, to say how far it went when its label is not known
	// between, when the beat is not known, is the last beat at which they agree for sure: they
	// part after it, at beat at the latest.
	between int
	window  bool
}

func (p parting) String() string {
	if p.window {
		return fmt.Sprintf("two golden runs diverge between beats %d and %d (a third run agreed with the second)", p.between+1, p.beat)
	}
	what := func(label string) string {
		if label == "" {
			return "had ended"
		}
		return fmt.Sprintf("did %q", label)
	}
	if p.first != "" && p.second != "" { // as oracle.CheckDeterministic says it
		return fmt.Sprintf("two golden runs diverge at beat %d: the first did %q, the second %q", p.beat, p.first, p.second)
	}
	first := "the first " + what(p.first)
	if p.first == "" && p.firstLen > p.beat {
		first = fmt.Sprintf("the first went on (%d beats in all)", p.firstLen)
	}
	return fmt.Sprintf("two golden runs diverge at beat %d: %s, the second %s", p.beat, first, what(p.second))
}

// part compares the counted run t with the recorded beats of another golden run. It returns
// false if they agree; else where they part: exactly when t's checkpoints tell, or a window.
func (t *tally) part(beats []Beat) (parting, bool) {
	pts := t.points
	if n := t.beats.N; n > 0 && (len(pts) == 0 || pts[len(pts)-1].beat != n-1) {
		pts = append(pts[:len(pts):len(pts)], point{n - 1, t.beats.Hash, t.last})
	}
	label := func(i int) string {
		if i < len(beats) {
			return beats[i].Label()
		}
		return ""
	}
	var s world.Sum
	agree := -1 // the last beat at which both agree for sure
	for _, p := range pts {
		if p.beat >= len(beats) {
			break
		}
		for s.N <= p.beat {
			s.Add(beats[s.N].Label())
		}
		if s.Hash != p.hash {
			if p.beat == agree+1 {
				return parting{beat: p.beat, first: p.label, second: label(p.beat)}, true
			}
			return parting{beat: p.beat, between: agree, window: true}, true
		}
		agree = p.beat
	}
	switch n := t.beats.N; {
	case n == len(beats):
		return parting{}, false
	case n < len(beats): // t's last beat agreed
		return parting{beat: n, second: label(n)}, true
	case agree == len(beats)-1: // the other ended where t went on
		return parting{beat: len(beats), firstLen: n}, true
	}
	return parting{beat: len(beats), between: agree, window: true}, true
}
