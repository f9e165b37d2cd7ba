// Package sim is the simulation kernel: it runs a target written against package harness, once
// without faults (the golden run) and then under a fault schedule (a case), and judges the case
// with package oracle. Campaigns of many cases are package campaign's.
//
// # A case
//
// NewRunner runs the target once without faults, twice in fact, to check that it is
// deterministic: the golden run. The first run is only counted, so that a target that never ends
// is refused at a bound (Options.MaxBeats, MaxVirtualTime) in memory that does not grow
// with its beats; the second is recorded. NewRunnerContext's context stops every run at once.
// Runner.Run then runs a schedule: at a crash beat the process stops on the spot
// (runtime.Goexit, which a generic recover cannot swallow), the crash is applied to the disk, and
// a new process starts on what survived, over the same world, after Options.RestartDelay of
// virtual time. A process that fails is restarted too, as a supervisor would, while faults
// remain. The oracle then compares the run with the golden run. A case whose first fault is a
// crash starts from the crash state rebuilt from the golden recording rather than re-running the
// prefix.
//
// A fault fires at the beat its schedule names, if that beat admits its kind (Beat.Admits: a kill
// any beat, a diskfull a write, a tool fault a tool call leaving the process), and at no other;
// the case lists a fault that did not fire in Case.Unfired, saying why, so that every case has
// one name. Runner.Beats tells where a fault added to a schedule can fire. RunBare runs a target
// once with no beats and no faults, over a filesystem of the caller's.
//
// # Inside
//
// One concept per file:
//
//   - runner.go: the Runner, and a case run once, run again when it fails, and judged (Run,
//     RunOnce, RunBare); options.go, its settings and their defaults.
//   - golden.go: the golden run, counted and then recorded, and the check that two golden runs
//     agree (the tally of a counted run, where two runs part, BoundError).
//   - derive.go: crash states derived from the golden recording (the cursor kept before every
//     golden beat, CrashState), so that a case whose first fault is a crash runs only its
//     recovery.
//   - beat.go: beats, what they are and what faults they admit, and their accounting: the one
//     place where a beat is numbered, a fault fires and progress is counted (run.step).
//   - loop.go: the event loop whole: a run's processes and threads, the baton handed among them,
//     timers, and the virtual clock moved when every thread waits.
//   - supervisor.go: the supervisor: how a process that failed on its own is restarted, and how
//     many restarts a run may take; backoff.go, the wait before such a restart (Backoff).
//   - observation.go: what a finished run hands the oracle (oracle.Observation).
//   - case.go: a case's outcome, its trace and its text.
//   - env.go: the kernel's side of the Env a target is given, wrapped by package harness through
//     internal/envlink, and what it offers an adapter whose target runs outside the process
//     (envlink.Ext: waits that are not beats, the settling of an instant, the beat of a wait on
//     the target's own clock, the order of ties); the rate limit's window; the world the tools
//     act on is package sim/internal/world's.
package sim
