// Package fusefs mounts an afero.Fs as a real directory through FUSE, so that programs chaoskit
// runs as subprocesses (Python, Node, git, SQLite) keep their state on chaoskit's fault disk.
//
// That is its one job. In chaoskit the afero.Fs is a *faults.FS over a *faults.Disk: every
// mutating call a child process makes on the mount (create, write, truncate, fsync, rename,
// remove, mkdir, chmod, utimes) reaches the FS's Injector, so it is a beat at which chaoskit can
// crash the process, and power loss, torn writes, a full disk and failing fsyncs apply to the
// child's real files.
//
//	srv, err := fusefs.Mount(dir, faults.New(disk, injector), fusefs.Options{Do: onLoop})
//	... start the child with its state directory in dir; wait for it, or SIGKILL it ...
//	srv.Unmount()
//	disk.Crash(fault, rng) // then mount a new faults.FS over disk for the next process
//
// where onLoop runs each request's calls on the goroutine that owns the disk (see Options.Do and
// its example; chaoskit's process adapter runs them on the goroutine of the simulated process).
//
// # A helper process
//
// The kernel's side of a mount (go-fuse's server, answering /dev/fuse) and the backend that runs
// each request on fsys can run in two processes: a helper runs ServeHelper, and the process
// that owns fsys asks it for mounts with Helper.Mount. Each request then crosses a Unix socket
// of the mount's own as a value (one round trip, a few microseconds, per request). What this
// buys is a failure domain: the process that runs fsys may die at any moment (chaoskit
// SIGKILLed in the middle of a campaign) and the kernel never waits on it, because the helper
// sees its connection end, fails every request still waiting, unmounts (aborting the FUSE
// connection when the mount is busy) and exits once no mount is left. The helper makes no
// request on its own mounts and starts no process, so go-fuse's fork/exec deadlock (below)
// cannot reach it. chaoskit's process adapter serves every FUSE disk this way.
//
//	ctl, theirs, _ := fusefs.HelperPair() // start a copy of the program running ServeHelper, with theirs
//	srv, err := fusefs.NewHelper(ctl).Mount(dir, fsys, fusefs.Options{Do: onLoop})
//
// # One goroutine
//
// Options.Do runs every call on the afero.Fs, reads and closes included: chaoskit's simulation
// runs them on the goroutine of the target, one at a time. A Do that never returns (the
// simulated process crashed at that beat, its goroutine ended by runtime.Goexit) leaves the
// request failing with EIO or waiting until Unmount, which answers EIO to everything still
// waiting so that a SIGKILLed child, stuck in the kernel until its request is answered, can
// finish dying. Panics of the afero.Fs become EIO and are reported by Unmount.
//
// Options.DoRequest is Do told which request each op is for (Request: the calling thread's id,
// the operation, its path, whether it changes the disk): chaoskit's process adapter holds the
// changes a program's threads make at once and runs them in an order of its own, the same in
// every run, rather than in the order they happened to reach the kernel.
//
// # Nothing cached
//
// The kernel caches file data, attributes and directory entries of a FUSE filesystem unless
// told not to. A cached write would reach the disk late (and unfaulted), a cached read would
// show a restarted process bytes that a simulated power loss took away. So:
//
//   - Every open file uses direct I/O (FOPEN_DIRECT_IO): each read(2) and write(2) becomes one
//     ReadAt or WriteAt (or Write, for O_APPEND) on the afero file, at the size the program
//     asked for, up to 1 MiB. There is no writeback cache (go-fuse never asks for one) and no
//     read-ahead.
//   - Entry and attribute timeouts are zero and failed lookups are not cached: every path
//     lookup and every stat asks the afero.Fs. (Caching directory entries would be safe within
//     one mount, since names change only through it, but made no measurable difference: a
//     request's cost is the kernel round trip, whatever it asks.)
//   - Directory listings are read afresh at every opendir and rewinddir.
//   - Shared memory maps are allowed on direct-I/O files (FUSE_DIRECT_IO_ALLOW_MMAP, Linux 6.6
//     and later), which SQLite's WAL index needs. Their pages live in the kernel's page cache
//     and reach the afero.Fs when the kernel writes them back (at close, msync, or after about
//     30 s), not at the store: see SQLite below.
//
// A mount is meant to live as long as one process (or one group of processes that run
// together): the disk must change only through the mount while it is mounted. To apply a crash,
// SIGKILL the processes, Unmount, call Disk.Crash, and Mount afresh for the next process; a
// mount costs a few milliseconds, and a fresh one starts with no kernel state at all, so no
// cache invalidation (NotifyContent, NotifyEntry) is needed.
//
// # Starting processes on the mount
//
// The process that serves a mount must not make its own children touch the mount between fork
// and exec: go-fuse's known deadlock. os/exec forks with vfork, which suspends the forking
// thread until the child execs; a FUSE request from the child in that window (a chdir into
// exec.Cmd.Dir on the mount, an executable on the mount, exec.Cmd.ExtraFiles on the mount)
// needs the server's goroutines, and a garbage collection that starts meanwhile waits for the
// suspended thread forever, stopping them all. So leave exec.Cmd.Dir outside the mount and let
// the child change into its state directory itself, e.g. with
//
//	exec.Command("sh", "-c", `cd "$1" && shift && exec "$@"`, "sh", dir, "python3", "agent.py")
//
// or serve the mount from a process of its own. Children do not inherit the server's
// connection: its /dev/fuse descriptor is close-on-exec (go-fuse leaves it inheritable when it
// mounts by itself; Mount marks it).
//
// The serving process may use the mount itself (the tests do), but nothing answers its own
// requests once it dies: a process killed with a request pending on its own mount, or exiting
// with a file still open on it (the kernel flushes it at exit), waits in the kernel forever.
// Unmount therefore aborts the connection when the mount is busy (root can; other users need
// fusectl mounted at /sys/fs/fuse/connections), which makes any later request fail at once;
// after a hard kill, Cleanup on the next run does the same for the mount left behind and so
// frees a process stuck on it.
//
// # What the mount supports
//
// Regular files and directories: lookup, getattr, setattr (chmod, truncate(2) and ftruncate,
// utimensat, which sets the modification time through Chtimes; chown is passed on), create
// (with O_EXCL), open (O_TRUNC and O_APPEND honoured; O_SYNC and O_DSYNC make every write an
// fsync too), read and write at any offset, fsync and fdatasync (both are Sync on the afero
// file), fsync of a directory (Sync on the afero file of the directory, which a faults.Disk
// takes as making the directory's entries durable), mkdir, rmdir, unlink, rename (with
// RENAME_NOREPLACE), readdir, statfs. Errors keep their errno (see Errno): an injected full disk
// is ENOSPC in the child, an injected fsync failure EIO.
//
// Not supported, because a faults.Disk has no such thing: hard links and symbolic links (link
// and symlink fail with EPERM, the errno of a filesystem without them), device nodes, FIFOs and
// sockets (mknod: EPERM), extended attributes (ENOTSUP), fallocate (EOPNOTSUPP; glibc's
// posix_fallocate then writes zeros), RENAME_EXCHANGE (EINVAL). sync(2) and syncfs(2) (sync(1)
// without names) make nothing durable: the kernel sends FUSE_SYNCFS to virtiofs only
// (fs/fuse/virtio_fs.c sets fc->sync_fs; Linux 6.18), and go-fuse v2.12.1 has no handler for it,
// so they never reach the afero.Fs; programs must fsync (sync(1) with names does: "sync file
// dir"), or the process that starts them must see the calls some other way (chaoskit's process
// adapter traps them with seccomp).
// Changing O_APPEND with fcntl(F_SETFL) after open is not seen.
//
// POSIX advisory locks (fcntl F_SETLK, flock) are kept by the kernel, as on a local disk: the
// server does not ask for lock requests, so they work between all processes of this machine.
// An inode keeps its number for as long as the kernel knows it, so every process that opens a
// file locks the same inode.
//
// # SQLite
//
// Verified with python3's sqlite3 module (SQLite 3.40) in child processes, see TestSQLite:
//
//   - The default rollback journal (journal_mode=DELETE) works. On the strict disk SQLite's own
//     durability contract shows: synchronous=FULL (the default) does not fsync the directory
//     after deleting the journal, so a power loss right after a commit brings the journal back
//     and SQLite rolls that transaction back; synchronous=EXTRA keeps every commit.
//   - WAL works on this kernel (Linux 6.18): its -shm index is mapped shared, which needs
//     FUSE_DIRECT_IO_ALLOW_MMAP (Linux 6.6; on older kernels the map fails and SQLite reports a
//     disk I/O error; Server.SharedMaps tells which). The mapped pages reach the afero.Fs as one write of the whole region
//     when SQLite closes the -shm file (the kernel writes them back on close, after SQLite has
//     already unlinked it), or whenever the kernel writes dirty pages back on its own (memory
//     pressure, about 30 s): those beats come at moments the kernel chooses. For reproducible
//     schedules use PRAGMA locking_mode=EXCLUSIVE, with which WAL keeps its index in heap
//     memory and maps nothing, or the rollback journal. Committed WAL transactions survive a
//     power loss.
//   - POSIX locks exclude a second writer in another process ("database is locked").
//
// As root SQLite also fchowns its journal to the database's owner: a Chown on the afero.Fs,
// which is no beat.
//
// # git
//
// Verified with git 2.39, see TestGit. git init, add, commit, update-ref and fsck work: git
// creates lock files and objects with O_EXCL, renames them into place, and after link(2) fails
// with EPERM it renames new objects instead; init notices that symlink(2) fails and sets
// core.symlinks=false. With the default core.fsync a commit fsyncs nothing; with core.fsync=all
// it fsyncs objects, the index and refs (not reflogs), but git never fsyncs a directory, so on
// the strict disk a power loss takes every new object and ref away: the repository is back to
// its last durable state, consistent (fsck passes) but without the commits.
//
// # Cost
//
// A request costs a kernel round trip (tens of microseconds on a busy two-core VM). A small
// SQLite transaction makes about 70 of them: 100 commits from a python3 child took 0.2 to
// 0.3 s on the mount against about 9 ms on tmpfs (the whole process: about 3 to 4 times
// longer), see BenchmarkSQLite100Commits. The server's own CPU time is small; running every
// call on one goroutine through Options.Do adds little.
//
// # Hygiene
//
// Available says in one line what is missing to mount (the module, /dev/fuse, the permission,
// the fusermount3 helper) and how to install it. Mounts are of type FSType, and Mounts lists
// those under a directory; Cleanup tears down those left by a process that was killed before
// it could unmount. Put mount points under a directory of their own per run (the tests use
// $TMPDIR/chaoskit-fusefs-test-<uid>/<pid>), so that a later run can tell a dead run's mounts
// from a live one's.
package fusefs
