// Package reference is chaoskit's reference agent: a small, complete checkpointing agent built
// the way the write-ups in shared/seeds say one should be, and a set of variants, each with one
// bug taken from those write-ups, that chaoskit must catch.
//
// The agent works through a Task, a plan of tool calls (by default the vendor onboarding of
// the durable-execution guide, with its $84,000 purchase order). Its run state is a document
// (plan, cursor, completed steps, side-effect ledger, transcript with per-message metadata, an
// in-progress flag) folded from a write-ahead log, run/wal.log, whose records each carry a
// length and a CRC-32C. Per step it records the model's plan, then its intent (the tool and a
// stable idempotency key) before acting, calls the tool, and commits the outcome; each record is
// fsynced before the next thing happens, and each is followed by a progress mark. Every second
// step it writes a snapshot, through a temporary file, an fsync, a rename and an fsync of the
// directory. On restart it reads the snapshot (if whole and not ahead of the log), replays the
// log after it, cuts off a torn tail, rebuilds a missing or stale snapshot, and retries a
// pending intent with its recorded key, which the tool deduplicates.
//
// The variants are listed by Variants with their bugs and the properties that catch them.
package reference
