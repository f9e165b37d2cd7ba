// Package harness is what a target (the harness under test) is written against: the Target and
// the Env it runs in, the tools it declares, and nothing else. Running it, and the settings of
// its runs (sim.Options), are package sim's (golden runs, one case under a schedule, crash states
// derived from a golden recording); campaigns of many cases are package campaign's; go test
// integration is package chaoskittest's. It imports neither testing nor rapid, and registers no
// flag.
//
// # The target and its Env
//
// A Target is the harness's main: Run(ctx, env). It must do everything outside its own memory
// through the Env: files through Env.FS, tools through Env.Call, the model through Env.Model,
// waiting through Env.Sleep and Env.Await, leases through Env.Acquire and Env.Renew, progress
// through Env.Mark. Each of these is a beat, numbered from 0 across the whole run; faults are
// scheduled at beats (see package faults), which is what makes every case reproducible. A
// target may also declare its tools (Tooler), read its durable state back (Stater), and give
// go-cmp options (Comparer); Func adapts plain functions. A new instance of the target runs in
// every process (sim.NewRunner takes a constructor; Fresh makes one from a template value), so
// that whatever a process keeps in memory dies with it.
//
// # Time and workers
//
// Time is virtual. A process's threads (its Run and those it starts with Env.Go) run one at a
// time; when all of them wait, the clock jumps to the next thing due, so a 52-hour approval wait
// costs nothing. sim.Options.Workers workers can run the target at once over one disk and world,
// switching only at beats under a seeded scheduler. Cases with a fleet fault (lease, deploy,
// switch) run with sim.Options.FleetWorkers workers, so that a worker frozen past its lease can be
// taken over.
package harness
