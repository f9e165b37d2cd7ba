package harness

import (
	"errors"
	"fmt"
	"sync"
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
// the outcome against the golden run. Cases with a fleet fault (lease, deploy, switch) need
// several workers; they are judged against a golden run of Options.FleetReplicas workers.
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

	mu      sync.Mutex
	goldens map[int]*golden // by number of workers
}

// golden is a recorded golden run.
type golden struct {
	r   *run
	obs *oracle.Observation
	err error
}

// NewRunner records the golden run of target and checks that a second one does the same. It
// returns an error if the golden run does not complete, hangs, panics, or is not deterministic
// (wrapping ErrNondeterministic). If Options.Faults holds fleet faults it records the golden run
// with Options.FleetReplicas workers too.
func NewRunner(target Target, opts Options) (*Runner, error) {
	if target == nil {
		panic("harness: NewRunner with a nil Target")
	}
	rn := &Runner{target: target, o: opts.withDefaults(), goldens: map[int]*golden{}}
	if t, ok := target.(Tooler); ok {
		rn.tools = t.Tools()
	}
	rn.stater, _ = target.(Stater)
	if c, ok := target.(Comparer); ok {
		rn.cmp = c.CmpOptions()
	}
	newWorld(rn.tools) // panics now, not in a case, on a malformed tool list
	if g := rn.golden(rn.o.Replicas); g.err != nil {
		return nil, g.err
	}
	if g := rn.golden(rn.replicas(faults.Schedule(kindsAsFaults(rn.o.Faults)))); g.err != nil {
		return nil, g.err
	}
	return rn, nil
}

func kindsAsFaults(ks []faults.Kind) []faults.Fault {
	out := make([]faults.Fault, len(ks))
	for i, k := range ks {
		out[i].Kind = k
	}
	return out
}

// replicas returns how many workers run schedule s: Options.Replicas, or FleetReplicas when s
// holds a fleet fault.
func (rn *Runner) replicas(s faults.Schedule) int {
	for _, f := range s {
		if info, _ := f.Kind.Info(); info.Family == faults.FleetFamily {
			return max(rn.o.Replicas, rn.o.FleetReplicas)
		}
	}
	return rn.o.Replicas
}

// golden returns the golden run of the target with n workers, recording it (twice) the first
// time.
func (rn *Runner) golden(n int) *golden {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	if g, ok := rn.goldens[n]; ok {
		return g
	}
	g := &golden{}
	rn.goldens[n] = g
	name := rn.o.Name
	if n > 1 {
		name = fmt.Sprintf("%s with %d workers", rn.o.Name, n)
	}
	r, obs, err := rn.record(n, name)
	if err != nil {
		g.err = err
		return g
	}
	_, again, err := rn.record(n, name)
	if err != nil {
		g.err = fmt.Errorf("%s: second %w", name, errors.Unwrap(err))
		return g
	}
	if v := oracle.CheckDeterministic(obs, again, oracle.Options{Compare: rn.cmp}); len(v) > 0 {
		g.err = fmt.Errorf("%s: %w: %s", name, ErrNondeterministic, v[0].Detail)
		return g
	}
	obs.Trace = nil // only the determinism check needed it
	g.r, g.obs = r, obs
	return g
}

// record runs the target once without faults, recording where it stood at every beat.
func (rn *Runner) record(replicas int, name string) (*run, *oracle.Observation, error) {
	o := rn.o
	o.Replicas = replicas
	r := newRun(rn.target, &o, rn.tools, nil, maxGoldenBeats, 64)
	r.disk.StartLog()
	r.rec = &recorder{}
	x := r.startAll()
	if x.hung != "" || x.over || x.err != nil || x.panicked != "" {
		why := x.String()
		if x.over {
			why = fmt.Sprintf("made %d beats without finishing", maxGoldenBeats)
		}
		return nil, nil, fmt.Errorf("%s: %w %s", name, errGolden, why)
	}
	return r, r.observe(x, rn.stater, true), nil
}

// GoldenBeats returns the number of beats of the golden run (with Options.Replicas workers).
func (rn *Runner) GoldenBeats() int { return rn.golden(rn.o.Replicas).obs.Beats }

// GoldenTrace returns the labels of the golden run's beats, in order.
func (rn *Runner) GoldenTrace() []string {
	g := rn.golden(rn.o.Replicas).r
	out := make([]string, len(g.beats))
	for i, b := range g.beats {
		out[i] = b.Label()
	}
	return out
}

// Options returns the runner's options, with defaults filled in.
func (rn *Runner) Options() Options { return rn.o }

// Run runs one case: the target under schedule s, restarted after every crash, judged against
// the golden run. It panics on a schedule that ParseSchedule would refuse (Schedule.Validate).
func (rn *Runner) Run(s faults.Schedule) *Case {
	if err := s.Validate(); err != nil {
		panic("harness: Runner.Run: " + err.Error())
	}
	start := time.Now()
	c := &Case{Target: rn.o.Name, Seed: rn.o.Seed, Schedule: s, Repro: rn.o.Repro(s)}
	o := rn.o
	o.Replicas = rn.replicas(s)
	gold := rn.golden(o.Replicas)
	if gold.err != nil {
		c.Verdict = oracle.Verdict{Verdict: reports.Unknown, Reason: gold.err.Error()}
		return c
	}
	g := gold.obs.Beats
	r := newRun(rn.target, &o, rn.tools, s, 10*g+1000, g)
	var x ending
	if len(s) > 0 && rn.derivable(s[0], o.Replicas, g) {
		if x0, stop := rn.derive(r, gold.r, s[0]); stop {
			x = x0
		} else {
			x = r.loop()
		}
	} else {
		x = r.startAll()
	}
	obs := r.observe(x, rn.stater, false)
	c.Verdict = oracle.Check(gold.obs, obs, oracle.Options{Compare: rn.cmp, WorkLostSlack: rn.o.WorkLostSlack})
	c.Result, c.State = obs.Result, obs.State
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
func (rn *Runner) derivable(f faults.Fault, replicas, goldenBeats int) bool {
	return !rn.o.NoDerive && replicas == 1 && f.Beat < goldenBeats && isCrash(f.Kind)
}

// derive puts r where a run crashed by f at beat f.Beat stands, from the golden recording: the
// golden prefix is what the first process did, because the target is deterministic. It returns
// true if the crash ends the run.
func (rn *Runner) derive(r *run, g *run, f faults.Fault) (ending, bool) {
	k := f.Beat
	at := g.rec.cursors[k]
	r.clock = faults.NewClock(at.now)
	r.disk = g.disk.Replay(at.disk, faults.DiskOptions{Now: r.clock.Now, Sector: rn.o.Sector})
	r.world = g.world.replay(at.world)
	if err := r.pcg.UnmarshalBinary(at.sched); err != nil {
		panic(err) // it was marshalled by the same type
	}
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
	if fsys == nil {
		panic("harness: RunBare with a nil filesystem")
	}
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
