package sim

import (
	"fmt"
	"time"
)

// failed supervises process p of slot s, which ended on its own with an error or a panic, as
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
func (r *run) failed(p *process, s *slot) (ending, bool) {
	p.failed = true
	r.failedProcs++
	if rf := r.o.RestartFailed; rf == RestartNever || rf > 0 && r.failedProcs > rf {
		s.done = true
		return ending{}, false
	}
	now := r.clock.Now()
	if now.Sub(p.born) >= r.o.RestartBackoff.Reset {
		s.failures = 0
	}
	s.failures++
	_, worldDue := r.world.Next()
	disturbed := p.firstFault >= 0 || r.lastFault >= p.start || p.born.Before(r.quietAt) || worldDue
	if disturbed {
		s.stalled = false
		return r.restart(s, r.o.RestartBackoff.Delay(s.failures), false)
	}
	progressed := r.progressed(p)
	if s.stalled && !progressed {
		s.done = true
		s.gaveUp = fmt.Sprintf("the process fails every time after every fault has ended (processes %d and %d failed without progress)", s.lastFailed, p.attempt)
		return ending{}, false
	}
	s.stalled, s.lastFailed = !progressed, p.attempt
	return r.restart(s, r.o.RestartBackoff.Delay(s.failures), true)
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
		case b.Attempt == p.attempt && !before[b.Name]:
			return true
		}
	}
	return false
}

// restart schedules a new process for slot s after delay, unless the restarts are used up:
// Options.MaxRestarts of those that count (those after a crash or an undisturbed failure).
func (r *run) restart(s *slot, delay time.Duration, counts bool) (ending, bool) {
	if counts && r.counted >= r.o.MaxRestarts {
		r.killAll()
		err := fmt.Errorf("gave up after %d restarts; the last process %s", r.o.MaxRestarts, ending{err: s.err, panicked: s.panicked})
		if s.err == nil && s.panicked == "" {
			err = fmt.Errorf("gave up after %d restarts; the last process was crashed", r.o.MaxRestarts)
		}
		return ending{err: err, gaveUp: true}, true
	}
	if counts {
		r.counted++
	}
	s.done = false
	r.restarts = append(r.restarts, restart{at: r.clock.Now().Add(delay), slot: s})
	return ending{}, false
}
