// Package sim is the simulation kernel: it runs a target written against package harness, once
// without faults (the golden run) and then under a fault schedule (a case), and judges the case
// with package oracle. Campaigns of many cases are package campaign's.
//
// # A case
//
// NewRunner runs the target once without faults, twice in fact, to check that it is
// deterministic: the golden run. The first run is only counted, so that a target that never ends
// is refused at a bound (harness.Options.MaxBeats, MaxVirtualTime) in memory that does not grow
// with its beats; the second is recorded. NewRunnerContext's context stops every run at once.
// Runner.Run then runs a schedule: at a crash beat the process stops on the spot
// (runtime.Goexit, which a generic recover cannot swallow), the crash is applied to the disk, and
// a new process starts on what survived, over the same world, after harness.Options.RestartDelay of
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
// A run's event loop hands one baton among the threads of its processes and moves the virtual
// clock when every thread waits (run.go); the Env a target is given is the kernel's env (env.go),
// wrapped by package harness through internal/envlink; the world the tools act on is package
// internal/world's; the supervisor's restart policy is supervisor.go's.
package sim
