// Package world is the simulated outside world of a run, which survives every crash: the tools a
// target declared and what they have applied, their memory of idempotency keys and of callers'
// references, the lease service and its fencing tokens, the topics on which asynchronous
// completions and approvals are posted, and the model's answered calls. Every change is an Op,
// logged, so that the world's state at any beat of a golden run can be rebuilt (World.Replay).
//
// The kernel (package sim) performs Ops under its run's lock; nothing else changes a World.
package world
