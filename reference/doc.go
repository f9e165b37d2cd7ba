// Package reference is chaoskit's reference agent: a small, complete checkpointing agent built
// the way the write-ups in shared/seeds say one should be, and a set of variants, each with one
// bug taken from those write-ups, that chaoskit must catch.
//
// # The agent
//
// The agent works through a Task, a plan of tool calls (by default the vendor onboarding of
// the durable-execution guide, with its $84,000 purchase order). Its run state is a document
// (plan, cursor, completed steps, side-effect ledger, transcript with per-message metadata, an
// in-progress flag) folded from a write-ahead log, run/wal.log, whose records each carry a
// length, a CRC-32C and the writer's lease token. Per step it records the model's plan, then its
// intent (the tool and a stable idempotency key) before acting, calls the tool with its lease's
// fencing token, and commits the outcome; each record is fsynced before the next thing happens,
// and each of these is followed by a progress mark. Every second step it writes a snapshot, through a
// temporary file, an fsync, a rename and an fsync of the directory. It works only while it holds
// the run's lease, renewed by a per-turn watchdog that counts only waiting on the model as
// idle; at an asynchronous step or an approval it records that it waits and releases the lease.
// On restart it reads the snapshot (if whole and not ahead of the log), replays the log after
// it, continues past a torn tail with an epoch record, stops with ErrCorrupt on damage in the
// middle, rebuilds a missing or stale snapshot, and retries a pending intent with its recorded
// key, which the tool deduplicates. On a full disk it neither fails (a restart would find the
// disk as full) nor retries at once: it gives the lease up, waits with a growing pause in
// virtual time, and takes the run up again from the disk as after a crash.
//
// agent.go reads as that algorithm, top to bottom; store.go keeps the log and the snapshot,
// wal.go frames the records, state.go folds them.
//
// # The variants
//
// The agent reaches everything outside its memory through a few seams, each set by New to the
// reference's choice, the way a well-factored agent would be written anyway: the Env it is
// given (its filesystem, its tool calls, its lease service), the store that keeps its run, and
// three small policies: which tool calls need an intent recorded first, which idempotency key a
// call carries, and which phases the watchdog counts as idle. A variant changes exactly one
// seam, and so carries exactly one bug. Most wrap the Env: in-memory gives the agent a
// filesystem of its own that dies with the process; no-fsync, no-dirsync and swallow-enospc
// wrap its files; no-fencing and ambiguous-as-failed its tool calls; no-heartbeat its lease
// renewals. no-checksum and meta-drift change the store; act-then-save, unstable-key,
// retry-without-key and idle-tools a policy.
//
// Variants lists them with their bugs, where each comes from, and the properties that catch it;
// in variant.go each bug's injection stands next to its description.
package reference
