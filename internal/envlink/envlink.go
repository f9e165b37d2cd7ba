// Package envlink lets the kernel (package sim) make a harness.Env over its own implementation
// of it, which package harness does not export: harness imports nothing of the kernel's, and the
// kernel imports harness for the types a target is written against.
package envlink

// New returns a *harness.Env (as any) whose methods call k's, which must have every method of
// harness.Env. Package harness sets it when it is initialized, before any package that imports
// harness can call it.
var New func(k any) any
