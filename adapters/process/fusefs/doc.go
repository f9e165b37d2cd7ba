// Package fusefs mounts an afero.Fs as a real directory through FUSE, so that programs chaoskit
// runs as subprocesses (Python, Node, git, SQLite) keep their state on chaoskit's fault disk.
//
// That is its one job. In chaoskit the afero.Fs is a *faults.FS over a *faults.Disk: every
// mutating call a child process makes on the mount (create, write, truncate, fsync, rename,
// remove, mkdir, chmod, utimes) reaches the FS's Injector, so it is a beat at which chaoskit can
// crash the process, and power loss, torn writes, a full disk and failing fsyncs apply to the
// child's real files.
//
//	srv, err := fusefs.Mount(dir, faults.New(disk, injector), fusefs.Options{Do: sim.Do})
//	... start the child with its state directory in dir; wait for it, or SIGKILL it ...
//	srv.Unmount()
//	disk.Crash(fault, rng) // then mount a new faults.FS over disk for the next process
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
//     lookup and every stat asks the afero.Fs.
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
// or serve the mount from a process of its own.
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
// posix_fallocate then writes zeros), RENAME_EXCHANGE (EINVAL). sync(1) and syncfs(2) make
// nothing durable: the kernel sends FUSE_SYNCFS to virtiofs only, so they never reach the
// afero.Fs; programs must fsync. Changing O_APPEND with fcntl(F_SETFL) after open is not seen.
//
// POSIX advisory locks (fcntl F_SETLK, flock) are kept by the kernel, as on a local disk: the
// server does not ask for lock requests, so they work between all processes of this machine.
// An inode keeps its number for as long as the kernel knows it, so every process that opens a
// file locks the same inode.
//
// # SQLite
//
// The default rollback journal works. WAL works too on this kernel (6.6 or later), but its
// -shm file is mapped shared and its writes reach the disk when the kernel writes the pages
// back, so beats on -shm come at moments the kernel chooses: for reproducible schedules use
// PRAGMA journal_mode=DELETE, or PRAGMA locking_mode=EXCLUSIVE, with which WAL keeps its index
// in heap memory and maps nothing. SQLite's default synchronous=FULL does not fsync the
// directory after deleting the journal, so on the strict disk a power loss may bring the
// journal back and roll the last transaction back; synchronous=EXTRA makes commits durable.
//
// # git
//
// git init, commit and update-ref work: git creates files with O_EXCL, renames lock files into
// place, and falls back from link(2) to rename for new objects. By default git fsyncs nothing
// for a loose commit; core.fsync=all makes it fsync files, but git never fsyncs a directory, so
// on the strict disk a power loss may still take new objects and refs away.
//
// # Hygiene
//
// Available says in one line what is missing to mount (the module, /dev/fuse, the permission,
// the fusermount3 helper) and how to install it. Mounts are of type FSType; Cleanup tears
// down those left under a directory by a process that was killed before it could unmount.
package fusefs
