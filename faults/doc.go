// Package faults is chaoskit's fault layer: a filesystem that knows what has reached the disk,
// an injector that faults the operations of any afero.Fs, virtual time, and fault schedules.
//
// # The durability model
//
// A Disk is an in-memory afero.Fs that keeps, per file, the bytes processes see (the page
// cache) and the bytes at its last successful fsync, and per directory, its live entries and its
// entries at its last directory fsync. Disk.Crash applies a crash:
//
//   - kill: everything written survives, synced or not;
//   - power: each file reverts to its last fsync and each directory to its last directory fsync,
//     so a file created or renamed without an fsync of its directory may vanish or come back
//     under its old name;
//   - power, mode subset: a seeded subset of the writes and directory operations issued since
//     each file's and directory's last fsync is kept, in issue order, the rest lost: a later
//     write may survive an earlier one, as ALICE and pebble's CrashClone model a disk that
//     writes back in its own order;
//   - torn: power, with the last un-fsynced write landing as a sector-aligned prefix, or with a
//     garbage tail;
//   - corrupt: kill, then one bit of a durable byte flips.
//
// This is the strict POSIX model that ALICE and CrashMonkey test against: it promises only what
// fsync promises. Real filesystems often keep more (ext4 commits every directory entry created
// before a file it fsyncs), so a harness that passes here survives them too, while one that
// passes only on ext4's kindness is caught. DiskOptions.Model chooses another persistence model
// for power, power:subset and torn: Ext4Ordered, what ext4 with its default options keeps (see
// FSModel, which defines both).
//
// # Injection
//
// FS wraps any afero.Fs and asks an Injector before every mutating operation (create, write,
// truncate, fsync, rename, remove, mkdir). The injector can fail it: DiskFull makes writes that
// need more blocks than a budget leaves fail with ENOSPC, the first landing up to a block
// boundary (a filesystem allocates whole blocks), and the disk stays full (for every
// FS over the Disk: every process and worker, across restarts) until the fault's duration has
// passed on the Disk's clock, or to the end; FsyncFail makes an fsync fail with
// EIO and drops the file's dirty data, so that a retried fsync succeeds and the data is lost
// anyway, the Linux behaviour that bit PostgreSQL. Injected errors are *fs.PathError values
// around the real errno and also wrap ErrInjected. Crashes are the injector's own: it stops the
// process (chaoskit's harness does so at a beat) and the caller applies Disk.Crash.
//
// # The other faults
//
// Beyond the disk, the table of kinds (Kinds) holds the faults of the fleet, which chaoskit's
// harness applies: lease (a worker frozen past its lease), deploy (every worker restarted),
// switch (a worker preempted); of the tools: tool-transient, tool-ambiguous, tool-timeout,
// callback-dup; and of the model: model-ratelimit, model-error, model-context, model-hang,
// model-cut, model-diverge.
//
// # Adding a fault kind
//
// A kind is one entry of the table in kind.go (KindInfo, keyed fields) plus its behaviour in one
// place: a crash that reaches the disk in Disk.Crash (crash.go); a fault of the world in the
// kernel's Env (package sim's env.go, where a tool or model call meets it). Everything else reads the table: which
// beats it fires at (On), what it ends (Ends) and whether the disk sees it (Disk), how long it
// holds (End), how a schedule writes it (Arg, Modes, Lasts), how an exhaustive campaign lists it
// (Listed) and how shrinking simplifies it (its Arg). A world fault that answers a process target
// with a new error code also adds the code to the process adapter's table, which a test checks
// every client's list against.
//
// # Schedules
//
// A Schedule lists faults by beat, in a text form that round-trips: "power@17",
// "kill@4,kill@9", "diskfull@12:4096+1m", "torn@30:garbage", "power@9:subset", "lease@20+45s",
// "switch@8:1".
// ParseSchedule's errors point at the offending column.
package faults
