package harness

import (
	"fmt"
	"strings"
	"time"
)

// Backoff is how long the supervisor waits before it restarts a process that failed on its own
// (returned an error, panicked, exited with another status than 0): Initial after the first
// failure, doubling after each failure in a row up to Max. Initial equal to Max is a constant
// delay, as systemd's RestartSec. A process that ran for Reset of virtual time before it failed
// starts the doubling over, as the kubelet does after ten minutes of a container running.
//
// A crashed process (kill, power, a deploy) is not a failure: it restarts after
// Options.RestartDelay.
type Backoff struct {
	Initial, Max, Reset time.Duration
}

// DefaultBackoff is Kubernetes' CrashLoopBackOff: 10s, doubling to 5 minutes, started over after
// 10 minutes of running.
var DefaultBackoff = Backoff{Initial: 10 * time.Second, Max: 5 * time.Minute, Reset: 10 * time.Minute}

// Delay returns the wait before the restart that follows the n-th failure in a row (n ≥ 1).
func (b Backoff) Delay(n int) time.Duration {
	d := b.Initial
	for i := 1; i < n && d < b.Max; i++ {
		d *= 2
	}
	return min(d, b.Max)
}

// String writes b as ParseBackoff reads it: "10s..5m" (doubling from 10s to 5m), or "10s" (a
// constant delay), each with ",reset=DUR" when Reset is not DefaultBackoff's.
func (b Backoff) String() string {
	s := shortDur(b.Initial)
	if b.Max != b.Initial {
		s += ".." + shortDur(b.Max)
	}
	if b.Reset != DefaultBackoff.Reset {
		s += ",reset=" + shortDur(b.Reset)
	}
	return s
}

// MarshalText writes b's String form.
func (b Backoff) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// UnmarshalText reads ParseBackoff's form.
func (b *Backoff) UnmarshalText(text []byte) error {
	v, err := ParseBackoff(string(text))
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// ParseBackoff reads a back-off: "INITIAL..MAX" doubles from INITIAL to MAX ("10s..5m",
// Kubernetes'), "DELAY" waits DELAY every time ("5s", systemd's RestartSec=5s), and either may
// end with ",reset=DUR" (default 10m). "0" restarts at once.
func ParseBackoff(text string) (Backoff, error) {
	b := DefaultBackoff
	spec, reset, hasReset := strings.Cut(text, ",")
	if hasReset {
		v, ok := strings.CutPrefix(reset, "reset=")
		d, err := time.ParseDuration(v)
		if !ok || err != nil || d < 0 {
			return Backoff{}, fmt.Errorf("back-off %q: after the comma want reset=DURATION (10m)", text)
		}
		b.Reset = d
	}
	first, last, doubling := strings.Cut(spec, "..")
	var err error
	if b.Initial, err = time.ParseDuration(first); err != nil || b.Initial < 0 {
		return Backoff{}, fmt.Errorf("back-off %q: %q is not a duration (want 10s..5m, or 5s for a constant delay)", text, first)
	}
	b.Max = b.Initial
	if doubling {
		if b.Max, err = time.ParseDuration(last); err != nil || b.Max < b.Initial {
			return Backoff{}, fmt.Errorf("back-off %q: %q is not a duration at least %s", text, last, first)
		}
	}
	return b, nil
}

// shortDur writes d as time.Duration does, without zero units: "5m", not "5m0s".
func shortDur(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

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
	_, worldDue := r.world.next()
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
