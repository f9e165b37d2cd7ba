// Package harness runs a target (the harness under test) under faults and judges each run
// against an uninterrupted one.
//
// # The target and its Env
//
// A Target is the harness's main: Run(ctx, env). It must do everything outside its own memory
// through the Env: files through Env.FS, tools through Env.Call, the model through Env.Model,
// waiting through Env.Sleep and Env.Await, leases through Env.Acquire and Env.Renew, progress
// through Env.Mark. Each of these is a beat, numbered from 0 across the whole run; faults are
// scheduled at beats (see package faults), which is what makes every case reproducible. A
// target may also declare its tools (Tooler), read its durable state back (Stater), and give
// go-cmp options (Comparer); Func adapts plain functions.
//
// # A case
//
// NewRunner runs the target once without faults, twice in fact, to check that it is
// deterministic: the golden run. Runner.Run then runs a schedule: at a crash beat the process
// stops on the spot (runtime.Goexit, which a generic recover cannot swallow), the crash is
// applied to the disk, and a new process starts on what survived, over the same world, after
// Options.RestartDelay of virtual time. A process that fails is restarted too, as a supervisor
// would, while faults remain. The oracle then compares the run with the golden run. A case whose
// first fault is a crash starts from the crash state rebuilt from the golden recording rather
// than re-running the prefix.
//
// # Time and workers
//
// Time is virtual. A process's threads (its Run and those it starts with Env.Go) run one at a
// time; when all of them wait, the clock jumps to the next thing due, so a 52-hour approval wait
// costs nothing. Options.Replicas workers can run the target at once over one disk and world,
// switching only at beats under a seeded scheduler. Cases with a fleet fault (lease, deploy,
// switch) run with Options.FleetReplicas workers, so that a worker frozen past its lease can be
// taken over.
//
// # Campaigns
//
// Runner.Schedules lists a campaign's schedules: Exhaustive (every kind at every beat where it
// applies) or Random (several faults per schedule, drawn from the seed, failures shrunk).
// Runner.Explore runs them in parallel; results do not depend on the parallelism. Check does all
// of this from a go test and prints, for each failure, the command that replays it.
package harness
