package harness

import (
	"errors"
	"fmt"
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/google/go-cmp/cmp"
	"github.com/spf13/afero"
)

// ErrNondeterministic is wrapped by NewRunner's error when two golden runs of a target differ.
var ErrNondeterministic = errors.New("target is not deterministic")

// maxGoldenBeats bounds a golden run, which has no other reference for its length.
const maxGoldenBeats = 10_000_000

// Runner runs cases against one target. NewRunner records the target's golden run (twice, to
// check that it is deterministic); each case then runs the target under a schedule and judges
// the outcome against the golden run.
//
// A case whose first fault is a crash does not re-run the golden prefix: the disk, the world and
// the clock at the crash beat are rebuilt from the golden recording, as ALICE builds crash
// states, and only the recovery runs. A Runner is safe for concurrent use.
type Runner struct {
	target Target
	o      Options
	tools  []Tool
	stater Stater
	cmp    []cmp.Option
	golden *run
	gobs   *oracle.Observation
}

// NewRunner records the golden run of target and checks that a second one does the same. It
// returns an error if the golden run does not complete, hangs, panics, or is not deterministic
// (wrapping ErrNondeterministic).
func NewRunner(target Target, opts Options) (*Runner, error) {
	if target == nil {
		panic("harness: NewRunner with a nil Target")
	}
	rn := &Runner{target: target, o: opts.withDefaults()}
	if t, ok := target.(Tooler); ok {
		rn.tools = t.Tools()
	}
	rn.stater, _ = target.(Stater)
	if c, ok := target.(Comparer); ok {
		rn.cmp = c.CmpOptions()
	}
	newWorld(rn.tools) // panics now, not in a case, on a malformed tool list

	g, gobs, err := rn.record()
	if err != nil {
		return nil, err
	}
	_, again, err := rn.record()
	if err != nil {
		return nil, fmt.Errorf("%s: second %w", rn.o.Name, errors.Unwrap(err))
	}
	if v := oracle.CheckDeterministic(gobs, again, oracle.Options{Compare: rn.cmp}); len(v) > 0 {
		return nil, fmt.Errorf("%s: %w: %s", rn.o.Name, ErrNondeterministic, v[0].Detail)
	}
	gobs.Trace = nil // only the determinism check needed it
	rn.golden, rn.gobs = g, gobs
	return rn, nil
}

// record runs the target once without faults, recording where it stood at every beat.
func (rn *Runner) record() (*run, *oracle.Observation, error) {
	r := newRun(rn.target, &rn.o, rn.tools, nil, maxGoldenBeats, 64)
	r.disk.StartLog()
	r.rec = &recorder{}
	x := r.startAll()
	if x.hung != "" || x.over || x.err != nil || x.panicked != "" {
		why := x.String()
		if x.over {
			why = fmt.Sprintf("made %d beats without finishing", maxGoldenBeats)
		}
		return nil, nil, fmt.Errorf("%s: %w %s", rn.o.Name, errGolden, why)
	}
	return r, r.observe(x, rn.stater, true), nil
}

// GoldenBeats returns the number of beats of the golden run.
func (rn *Runner) GoldenBeats() int { return rn.gobs.Beats }

// GoldenTrace returns the labels of the golden run's beats, in order.
func (rn *Runner) GoldenTrace() []string {
	out := make([]string, len(rn.golden.beats))
	for i, b := range rn.golden.beats {
		out[i] = b.Label()
	}
	return out
}

// Options returns the runner's options, with defaults filled in.
func (rn *Runner) Options() Options { return rn.o }

// Run runs one case: the target under schedule s, restarted after every crash, judged against
// the golden run.
func (rn *Runner) Run(s faults.Schedule) *Case {
	start := time.Now()
	g := rn.gobs.Beats
	r := newRun(rn.target, &rn.o, rn.tools, s, 10*g+1000, g)
	var x ending
	if len(s) > 0 && rn.derivable(s[0]) {
		if x0, stop := rn.derive(r, s[0]); stop {
			x = x0
		} else {
			x = r.loop()
		}
	} else {
		x = r.startAll()
	}
	obs := r.observe(x, rn.stater, false)
	c := &Case{
		Target:   rn.o.Name,
		Seed:     rn.o.Seed,
		Schedule: s,
		Verdict:  oracle.Check(rn.gobs, obs, oracle.Options{Compare: rn.cmp, WorkLostSlack: rn.o.WorkLostSlack}),
		Repro:    rn.o.Repro(s),
		Result:   obs.Result,
		State:    obs.State,
	}
	for i, b := range r.fired {
		if b < 0 {
			c.Unfired = append(c.Unfired, s[i])
		}
	}
	if c.Verdict.Verdict != reports.Pass || c.Verdict.Detected != "" {
		c.Beats, c.Notes = r.beats, r.notes
	}
	c.Duration = time.Since(start)
	return c
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
func (rn *Runner) derivable(f faults.Fault) bool {
	return !rn.o.NoDerive && rn.o.Replicas == 1 && f.Beat < rn.gobs.Beats && isCrash(f.Kind)
}

// derive puts r where a run crashed by f at beat f.Beat stands, from the golden recording: the
// golden prefix is what the first process did, because the target is deterministic. It returns
// true if the crash ends the run.
func (rn *Runner) derive(r *run, f faults.Fault) (ending, bool) {
	g, k := rn.golden, f.Beat
	at := g.rec.cursors[k]
	r.clock = faults.NewClock(at.now)
	r.disk = g.disk.Replay(at.disk, faults.DiskOptions{Now: r.clock.Now, Sector: rn.o.Sector})
	r.world = g.world.replay(at.world)
	r.beats = append(make([]Beat, 0, cap(r.beats)+k+1), g.beats[:k+1]...)
	r.beats[k].Fault = 1
	r.fired[0] = k
	p := r.newProcess(r.slots[0])
	p.start, p.firstFault = 0, k
	for _, b := range g.beats[:k] { // what the process had done, as beat() counts it
		if b.Kind == BeatMark {
			p.marks, p.sinceMark = p.marks+1, 0
		} else {
			p.sinceMark++
			if p.marks == 0 {
				p.toMark++
			}
		}
	}
	return r.crashed(p, f)
}

// RunBare runs target once, uninterrupted, outside any campaign: its processes use fsys
// directly, with no beats and no faults, under the same scheduler and virtual time. It serves
// to measure a target without chaoskit, or to smoke-test an adapter.
func RunBare(target Target, fsys afero.Fs, opts Options) (any, error) {
	o := opts.withDefaults()
	var tools []Tool
	if t, ok := target.(Tooler); ok {
		tools = t.Tools()
	}
	r := newRun(target, &o, tools, nil, maxGoldenBeats, 0)
	r.bare = fsys
	x := r.startAll()
	switch {
	case x.hung != "":
		return nil, errors.New(x.hung)
	case x.panicked != "":
		return nil, fmt.Errorf("panicked: %s", x.panicked)
	}
	return x.result, x.err
}
