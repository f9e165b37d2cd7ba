// Package harness is what a target (the harness under test) is written against, and the
// simulation kernel that runs it: golden runs, one case under a schedule, crash states derived
// from a golden recording. Campaigns of many cases are package campaign's; go test integration
// is package chaoskittest's. It imports neither testing nor rapid, and registers no flag.
//
// # The target and its Env
//
// A Target is the harness's main: Run(ctx, env). It must do everything outside its own memory
// through the Env: files through Env.FS, tools through Env.Call, the model through Env.Model,
// waiting through Env.Sleep and Env.Await, leases through Env.Acquire and Env.Renew, progress
// through Env.Mark. Each of these is a beat, numbered from 0 across the whole run; faults are
// scheduled at beats (see package faults), which is what makes every case reproducible. A
// target may also declare its tools (Tooler), read its durable state back (Stater), and give
// go-cmp options (Comparer); Func adapts plain functions. A Runner builds a new instance of the
// target for every process (NewRunner takes a constructor; Fresh makes one from a template
// value), so that whatever a process keeps in memory dies with it.
//
// # A case
//
// NewRunner runs the target once without faults, twice in fact, to check that it is
// deterministic: the golden run. The first run is only counted, so that a target that never ends
// is refused at a bound (Options.MaxBeats, Options.MaxVirtualTime) in memory that does not grow
// with its beats; the second is recorded. NewRunnerContext's context stops every run at once. Runner.Run then runs a schedule: at a crash beat the process
// stops on the spot (runtime.Goexit, which a generic recover cannot swallow), the crash is
// applied to the disk, and a new process starts on what survived, over the same world, after
// Options.RestartDelay of virtual time. A process that fails is restarted too, as a supervisor
// would, while faults remain. The oracle then compares the run with the golden run. A case whose
// first fault is a crash starts from the crash state rebuilt from the golden recording rather
// than re-running the prefix.
//
// A fault fires at the beat its schedule names, if that beat admits its kind (Beat.Admits: a kill
// any beat, a diskfull a write, a tool fault a tool call leaving the process), and at no other;
// the case lists a fault that did not fire in Case.Unfired, saying why, so that every case has
// one name. Runner.Beats tells where a fault added to a schedule can fire.
//
// # Time and workers
//
// Time is virtual. A process's threads (its Run and those it starts with Env.Go) run one at a
// time; when all of them wait, the clock jumps to the next thing due, so a 52-hour approval wait
// costs nothing. Options.Replicas workers can run the target at once over one disk and world,
// switching only at beats under a seeded scheduler. Cases with a fleet fault (lease, deploy,
// switch) run with Options.FleetReplicas workers, so that a worker frozen past its lease can be
// taken over.
package harness
