package sim

import (
	"fmt"
	"time"
)

// failed supervises process p of worker w, which ended on its own with an error or a panic, as
// a supervisor does: it restarts it after the back-off, and gives up only on a failure that
// repeats once every fault has ended and nothing in the world is still to come, for only then
// would restarting it again change nothing.
//
// A process is disturbed when a fault fired in its lifetime, or was still in force when it
// started, or when the world still had something to deliver (a late effect, a message) at its
// end. The failure of a disturbed process does not count against Options.MaxRestarts: a disk
// full for an hour is waited out, restart after restart, however many the back-off takes. The
// failure of an undisturbed process does; two in a row that made no progress (no mark the run had
// not made before them) end the run, failed: nothing is left that could make a third process
// fare otherwise. (Their errors are not compared: a process's output may hold its pid or the
// time.)
func (r *run) failed(p *process, w *worker) (ending, bool) {
	p.failed = true
	r.failedProcs++
	if rf := r.o.RestartFailed; rf == RestartNever || rf > 0 && r.failedProcs > rf {
		w.done = true
		return ending{}, false
	}
	now := r.clock.Now()
	if now.Sub(p.born) >= r.o.RestartBackoff.Reset {
		w.failures = 0
	}
	w.failures++
	_, worldDue := r.world.Next()
	disturbed := p.firstFault >= 0 || r.lastFault >= p.start || p.born.Before(r.quietAt) || worldDue
	if disturbed {
		w.stalled = false
		return r.restart(w, r.o.RestartBackoff.Delay(w.failures), false)
	}
	progressed := r.progressed(p)
	if w.stalled && !progressed {
		w.done = true
		w.gaveUp = fmt.Sprintf("the process fails every time after every fault has ended (processes %d and %d failed without progress)", w.lastFailed, p.id)
		return ending{}, false
	}
	w.stalled, w.lastFailed = !progressed, p.id
	return r.restart(w, r.o.RestartBackoff.Delay(w.failures), true)
}

// progressed reports whether process p made a mark that no process of the run had made before it
// started: progress, as the oracle counts it.
func (r *run) progressed(p *process) bool {
	before := map[string]bool{}
	for i, b := range r.allBeats() {
		switch {
		case b.Kind != BeatMark:
		case i < p.start:
			before[b.Name] = true
		case b.Process == p.id && !before[b.Name]:
			return true
		}
	}
	return false
}

// restart schedules a new process for worker w after delay, unless the restarts are used up:
// Options.MaxRestarts of those that count (those after a crash or an undisturbed failure).
func (r *run) restart(w *worker, delay time.Duration, counts bool) (ending, bool) {
	if counts && r.counted >= r.o.MaxRestarts {
		r.killAll()
		err := fmt.Errorf("gave up after %d restarts; the last process %s", r.o.MaxRestarts, ending{err: w.err, panicked: w.panicked})
		if w.err == nil && w.panicked == "" {
			err = fmt.Errorf("gave up after %d restarts; the last process was crashed", r.o.MaxRestarts)
		}
		return ending{err: err, gaveUp: true}, true
	}
	if counts {
		r.counted++
	}
	w.done = false
	r.restarts = append(r.restarts, restart{at: r.clock.Now().Add(delay), worker: w})
	return ending{}, false
}
