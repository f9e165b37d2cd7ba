package sim

import (
	"fmt"
	"time"

	"github.com/chaoskit/chaoskit/faults"
)

// derivable reports whether a case whose first fault is f can start from a crash state
// derived from the golden recording: f is a crash within the golden run, and the one worker's
// process is all there is to crash, at once (a deploy with a grace period lets the process run
// on: it is re-run).
func (rn *Runner) derivable(f faults.Fault, workers, goldenBeats int) bool {
	return !rn.o.NoDerive && !rn.limits.NoDerive && workers == 1 && f.Beat < goldenBeats && isCrash(f.Kind) && !rn.o.graceful(&f)
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
	p := r.newProcess(r.workers[0])
	p.start, p.marks, p.sinceMark, p.toMark = 0, at.marks, at.sinceMark, at.toMark
	r.prefixMarks = at.marks
	r.step(p, g.beats[k])
	return r.crashed(p, f)
}

// CrashState returns the durable state the target would find on restarting after crash fault
// f (kill, power, torn or corrupt) at beat f.Beat of the golden run: what a restarted process
// reads, without running it; or, for a power cut after the end (f.Beat faults.End), what the
// state read back after it is. The target must implement Stater and run with one worker.
func (rn *Runner) CrashState(f faults.Fault) (any, error) {
	g, _ := rn.Golden(nil)
	if info, _ := f.Kind.Info(); f.Beat == faults.End && info.AtEnd && rn.stater && rn.o.Workers == 1 {
		r := newRun(rn.newTarget, &rn.o, rn.tools, faults.Schedule{f}, 0)
		r.disk = g.r.disk.Replay(g.r.disk.LogLen(), faults.DiskOptions{Now: r.clock.Now, Sector: rn.o.Sector, Pending: keepsSubset(r.sched)})
		r.disk.Crash(f, r.crashRand(g.Len()))
		return rn.state().State(r.disk)
	}
	switch {
	case !rn.stater:
		return nil, fmt.Errorf("%s does not implement harness.Stater", rn.o.Name)
	case !isCrash(f.Kind):
		return nil, fmt.Errorf("CrashState: %s is not a crash", f)
	case f.Beat < 0 || f.Beat >= g.Len():
		return nil, fmt.Errorf("CrashState: beat %d is outside the golden run's %d beats", f.Beat, g.Len())
	case rn.o.Workers != 1:
		return nil, fmt.Errorf("CrashState: only with one worker (Options.Workers is %d)", rn.o.Workers)
	}
	r := newRun(rn.newTarget, &rn.o, rn.tools, faults.Schedule{f}, 0)
	rn.derive(r, g.r, f)
	return rn.state().State(r.disk)
}

// cursor is where a golden run stood just before a beat: enough to rebuild its disk, world,
// clock and scheduler at that beat without running it again, and what its first process had
// done by then, as progress is accounted.
type cursor struct {
	disk, world int
	now         time.Time
	sched       []byte // the scheduler's source
	marks       int    // marks made before the beat (by the first process: a derived run has one)
	sinceMark   int    // the first process's beats since its last mark
	toMark      int    // its beats before its first mark
}
