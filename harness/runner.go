package harness

import (
	"errors"
	"fmt"
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/google/go-cmp/cmp"
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
	x := r.process(0)
	r.attempts = []oracle.Attempt{{Start: 0, End: len(r.beats), FirstFault: -1}}
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
	if len(s) > 0 && !rn.o.NoDerive && s[0].Beat < g && isCrash(s[0].Kind) {
		rn.derive(r, s[0])
		x = ending{crash: &s[0]}
		if !r.ended(0, 0, &x) {
			x = r.processes(1)
		}
	} else {
		x = r.processes(0)
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

func isCrash(k faults.Kind) bool {
	info, _ := k.Info()
	return info.Crash
}

// derive puts r where a run crashed by f at beat f.Beat stands, from the golden recording: the
// golden prefix is what the first process did, because the target is deterministic.
func (rn *Runner) derive(r *run, f faults.Fault) {
	g, k := rn.golden, f.Beat
	at := g.rec.cursors[k]
	r.clock = faults.NewClock(at.now)
	r.disk = g.disk.Replay(at.disk, faults.DiskOptions{Now: r.clock.Now, Sector: rn.o.Sector})
	r.world = g.world.replay(at.calls)
	r.beats = append(make([]Beat, 0, cap(r.beats)+k+1), g.beats[:k+1]...)
	r.beats[k].Fault = 1
	r.fired[0] = k
}
