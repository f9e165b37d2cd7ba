// Package envlink lets the kernel (package sim) make a harness.Env over its own implementation
// of it, which package harness does not export: harness imports nothing of the kernel's, and the
// kernel imports harness for the types a target is written against.
//
// It also carries what the kernel offers an adapter beyond harness.Env (Ext): an adapter in
// this module that runs its target outside the Go process (adapters/process) reaches it with
// Kernel and a type assertion, so that harness.Env's API stays what a target is written
// against.
package envlink

import (
	"context"
	"time"
)

// New returns a *harness.Env (as any) whose methods call k's, which must have every method of
// harness.Env. Package harness sets it when it is initialized, before any package that imports
// harness can call it.
var New func(k any) any

// Kernel returns the kernel behind a *harness.Env (env, as any), for an assertion to Ext.
// Package harness sets it with New.
var Kernel func(env any) any

// Ext is what the kernel offers an adapter whose target's threads run outside the simulation
// (a real process): waits that are not beats, the settling of an instant, a beat for a wait of
// the target's own clock, which way this run breaks ties, and a deploy's request to stop.
type Ext interface {
	// Hold blocks the calling thread, letting the others run, until the virtual clock reaches
	// at (the zero time: no deadline) or ctx is done, and returns nil or ctx's error. It is not
	// a beat and does not count as progress.
	Hold(ctx context.Context, at time.Time) error
	// Settle blocks the calling thread until no other thread of the run can run before the
	// clock moves: everything due at this instant has happened.
	Settle()
	// Waited records a beat of the target's own: a wait on its clock (what, e.g.
	// "clock_nanosleep") that timed out after d, the clock having just reached its deadline. A
	// fault may fire there, as at any beat. It does not count as progress for the hang
	// detector: a command whose only doings are timed waits has stopped talking.
	Waited(d time.Duration, what string)
	// Reversed reports whether this run delivers the answers due at one instant in the
	// reverse of their canonical order: the golden runs that are counted (the first, and the
	// third that looks for where two runs part) do, the recorded golden run and every case do
	// not, so that a target whose next requests depend on that order differs between its two
	// golden runs.
	Reversed() bool
	// AtStop registers f to be called, on the kernel's goroutine while the process's threads
	// wait, when a deploy asks the process to stop (an upgrade fault with a grace period):
	// instead of its context being cancelled, the adapter tells its target in the target's own
	// terms (adapters/process sends the command SIGTERM). It must return at once; the process
	// goes on until it ends on its own or the grace period ends and it is killed.
	AtStop(f func())
}
