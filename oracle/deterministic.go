package oracle

import "fmt"

// CheckDeterministic compares two golden runs of the same target. A target that does not do
// the same thing twice cannot be tested by replaying it; the violation names the first beat at
// which the runs diverge, like a workflow engine's non-determinism error.
func CheckDeterministic(first, second *Observation, opts Options) []Violation {
	fail := func(format string, args ...any) []Violation {
		return []Violation{{Property: Deterministic, Detail: fmt.Sprintf(format, args...)}}
	}
	for i := 0; i < min(len(first.Trace), len(second.Trace)); i++ {
		if first.Trace[i] != second.Trace[i] {
			return fail("two golden runs diverge at beat %d: the first did %q, the second %q", i, first.Trace[i], second.Trace[i])
		}
	}
	if len(first.Trace) != len(second.Trace) {
		return fail("two golden runs diverge at beat %d: one ended there, the other made %d beats", min(len(first.Trace), len(second.Trace)), max(len(first.Trace), len(second.Trace)))
	}
	if first.Completed != second.Completed || first.Err != second.Err {
		return fail("two golden runs ended differently: %q and %q", first.Err, second.Err)
	}
	if len(first.Effects) != len(second.Effects) {
		return fail("two golden runs applied %d and %d effects", len(first.Effects), len(second.Effects))
	}
	for i := range first.Effects {
		if first.Effects[i].Identity != second.Effects[i].Identity {
			return fail("two golden runs differ at effect %d: %s and %s", i, first.Effects[i].Identity, second.Effects[i].Identity)
		}
	}
	var out []Violation
	func() {
		defer func() {
			if p := recover(); p != nil {
				out = fail("cannot compare the golden runs' results: %v (give the target go-cmp options)", p)
			}
		}()
		if d := diff(first.Result, second.Result, opts.Compare); d != "" {
			out = fail("two golden runs returned different results (-first +second):\n%s", d)
		} else if d := diff(first.State, second.State, opts.Compare); d != "" {
			out = fail("two golden runs left different states (-first +second):\n%s", d)
		}
	}()
	return out
}
