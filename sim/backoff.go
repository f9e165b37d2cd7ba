package sim

import (
	"fmt"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/faults"
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
	s := faults.FormatDuration(b.Initial)
	if b.Max != b.Initial {
		s += ".." + faults.FormatDuration(b.Max)
	}
	if b.Reset != DefaultBackoff.Reset {
		s += ",reset=" + faults.FormatDuration(b.Reset)
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
