// Package oracle judges a faulty run against the golden run. Each property is a pure function
// of two observations; Check evaluates them all and measures the case.
//
// The properties, by their stable names:
//
//   - completes: the run finishes, within the restart budget and without hanging, once the
//     faults stop. A target that stops with an error after a fault destroyed durable data (a
//     corruption it detected) has failed loudly; that is reported as detected, not as a
//     violation, because it is not silent divergence.
//   - same-result: the last process returned what the golden run returned.
//   - same-state: the durable state read back after the run equals the golden run's.
//   - no-duplicate-effects: no effect was applied more often than in the golden run.
//   - no-lost-effects: every golden effect was applied as often as in the golden run.
//   - no-phantom-effects: nothing was applied that the golden run never applied (an action
//     with stale arguments, say).
//   - no-key-reuse: no idempotency key was used again with other arguments. An
//     idempotent-by-key tool refuses such a call (harness.KeyReusedError), as Stripe does,
//     rather than answer it as a replay of the first: the key names another effect. The
//     violation names both argument sets. A golden run that does it has the bug without any
//     fault, and every case says so.
//   - bounded-work-lost: each restart redid at most the work that was in flight, that is, the
//     beats since the last progress mark before the crash; without marks, a restart must not
//     start over (ask the run's first model call again once the run had gone past it), plus
//     Options.WorkLostSlack. A
//     corruption is judged too, as the kill it includes; only when the target stopped loudly
//     on it (detected) is work lost not judged. What a corrupted run redid because the flipped
//     bit destroyed a record is for a caller that can run the kill alone to excuse
//     (Verdict.Excuse; package sim does).
//   - ordered-effects: the effects of the tools Options.Ordered names were first applied in
//     the golden run's order (checked only for such tools).
//   - deterministic: two golden runs agree, beat for beat (CheckDeterministic).
//
// # Comparing
//
// Results and states are compared with go-cmp; the difference is printed "-golden +faulty".
// Targets pass go-cmp options to ignore what legitimately differs between runs (a timestamp, a
// run id). Values that go-cmp cannot compare (unexported fields without an option) make the
// verdict unknown, naming the type.
//
// # Effects
//
// An effect is identified by its tool and its arguments, not by its idempotency key: a key that
// changes on resume is exactly the bug that duplicates a purchase order, so the same order under
// two keys counts as one effect applied twice. An application the golden run never made is a
// phantom; one it made that the faulty run did not is lost.
//
// # Work lost
//
// Work is measured from the progress marks the target makes (harness.Env.Mark) right after each
// step becomes durable. The golden run's marks give golden positions; a restarted process that
// first makes mark k resumed right after mark k-1, so it redid the golden beats between there
// and where the run had got to. Without marks, work lost is measured from calls (Observation.Calls):
// the tool calls and model calls a restarted process makes again that earlier processes had
// made, beyond the golden run's count, counted as work lost; the bound is that a restart does not
// start over (asks the run's first model call again once the run had gone past it), for
// without marks the agent's durable points cannot be told: a framework may resume from several
// turns back (the Agents SDK's RunState, from the last approval pause). A retry within one process is not a call made again, nor
// is a call after a diverging model's other answer. A target with neither marks nor model calls
// is not measured, and the case says so under not_checked.
package oracle
