package fusefs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/spf13/afero"
)

// FSType is the filesystem type of every mount this package makes, as /proc/self/mountinfo
// shows it ("fuse.chaoskit"); Cleanup recognises stale mounts by it.
const FSType = "fuse.chaoskit"

// Options configures a mount. The zero value is valid.
type Options struct {
	// Do executes op, one filesystem request's calls on fsys, and returns once op has returned.
	// The server calls every afero method, reads and closes included, only from inside an op
	// given to Do, so Do decides on which goroutine fsys runs: chaoskit's simulation passes
	// each op to the one goroutine that runs the target, between the target's other beats.
	//
	// Do may block for as long as it likes, and may never return at all, as when the op
	// crashed the simulated process (runtime.Goexit on Do's goroutine). The request that
	// asked for op then fails with EIO once op has exited without returning, or stays blocked
	// until Unmount, which fails it with EIO; the server itself never stops. If Do returns
	// without having run op, the request fails with EIO and op will never run.
	//
	// The default runs op at once, on a goroutine of the server's.
	Do func(op func())

	// DoRequest, if set, is Do told which request op is for: who made it and what it asks, so
	// that it can hold requests made at once and run them in an order of its choosing. It
	// replaces Do, with Do's rules. A helper's mount (Helper.Mount) then runs each request as it
	// arrives, without waiting for the ones before it.
	DoRequest func(r Request, op func())

	// Trace, if set, is told of every call the server makes on fsys, in the order of the
	// calls, on the goroutine that made it (inside Do), after the call returned.
	Trace func(Call)

	// Now gives the instant that utimensat(UTIME_NOW) and touch(1) set as a file's
	// modification time; the default is time.Now. chaoskit passes its virtual clock.
	Now func() time.Time

	// UID and GID own every file the mount shows; the defaults are the server process's own
	// effective user and group. The mount does not check permissions: run the programs that
	// use it as the user that mounted it.
	UID, GID *uint32

	// Debug logs every FUSE request and reply (go-fuse's debug log) to standard error.
	Debug bool

	// ServeOnly says that this process only serves the mount and never uses it itself: other
	// processes (its children) do. Mount then returns without waiting for the kernel's
	// handshake and without go-fuse's probe, an open and a poll of a file on the mount from
	// this process (which keeps the process's own polls of files on the mount from
	// deadlocking). So this process makes no request on its own mount: a process killed while
	// one of its threads waits on its own mount cannot finish dying, since nobody is left to
	// answer. Requests of other processes wait in the kernel until the handshake is done.
	ServeOnly bool
}

// Server serves an afero.Fs at a mount point: in this process (Mount), or in a helper process
// whose requests this one runs (Helper.Mount). Unmount it when done, also when a test fails.
type Server struct {
	dir string
	uid uint32
	gid uint32
	// run runs a request of the kernel's side: through Do on the backend (Mount), or over the
	// connection to the process that runs the backend (in a helper).
	run func(*request) reply

	fuse    *fuse.Server  // the kernel's side, if this process serves it
	conn    uint32        // the FUSE connection's number, for aborting it
	closing chan struct{} // closed by Unmount: every request still waiting fails with EIO

	exp *export // the backend's side of a mount a helper serves

	unmountOnce sync.Once
	unmountErr  error

	panicMu  sync.Mutex
	panicErr error // the first panic fsys raised, reported by Unmount
}

// ask runs r for the caller of ctx, the kernel's request context, which says who made it.
func (s *Server) ask(ctx context.Context, r *request) reply {
	if c, ok := fuse.FromContext(ctx); ok {
		r.Pid = c.Pid
	}
	return s.run(r)
}

// Mount serves fsys at dir, an existing empty directory, until Unmount. Every request of the
// kernel runs its calls on fsys through opts.Do.
//
// Nothing is cached by the kernel (see the package documentation), so every write reaches fsys
// when a program makes it and every read comes from fsys. Mount a given fsys at most once at a
// time, and change it only through the mount while it is mounted: to apply a crash to a
// faults.Disk, stop the processes that use the mount, Unmount, crash the disk, and Mount a new
// faults.FS over it for the next process.
func Mount(dir string, fsys afero.Fs, opts Options) (*Server, error) {
	if fsys == nil {
		panic("fusefs: Mount with a nil fsys")
	}
	abs, err := mountPoint(dir)
	if err != nil {
		return nil, err
	}
	s := newServer(abs, opts)
	b := newBackend(traced(fsys, opts.Trace), opts.Now)
	do := doer(opts, b)
	s.run = func(r *request) reply {
		var rep reply
		errno := runOp(r, do, s.closing, s.recordPanic, func() syscall.Errno {
			rep = b.do(r)
			return rep.Errno
		})
		if errno != 0 {
			return reply{Errno: errno}
		}
		return rep
	}
	if err := s.serve(abs, opts); err != nil {
		return nil, err
	}
	return s, nil
}

// mountPoint returns the absolute path of dir, an existing empty directory to mount on, or an
// error saying what it is instead.
func mountPoint(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("fusefs: mount point %s: %w", dir, err)
	}
	ents, err := os.ReadDir(abs)
	if errors.Is(err, syscall.ENOTCONN) {
		return "", fmt.Errorf("fusefs: mount point %s is a stale mount left by a dead server; fusefs.Cleanup removes it: %w", abs, err)
	}
	if err != nil {
		return "", fmt.Errorf("fusefs: mount point: %w", err)
	}
	if len(ents) > 0 {
		return "", fmt.Errorf("fusefs: mount point %s is not empty", abs)
	}
	return abs, nil
}

// newServer returns a server, not yet serving, of a mount at dir.
func newServer(dir string, opts Options) *Server {
	s := &Server{dir: dir, uid: uint32(os.Geteuid()), gid: uint32(os.Getegid()), closing: make(chan struct{})}
	if opts.UID != nil {
		s.uid = *opts.UID
	}
	if opts.GID != nil {
		s.gid = *opts.GID
	}
	return s
}

// traced returns fsys, reporting its calls to trace if it is not nil.
func traced(fsys afero.Fs, trace func(Call)) afero.Fs {
	if trace == nil {
		return fsys
	}
	return &tracedFs{base: fsys, trace: trace}
}

// doer returns the Do of opts: DoRequest, Do, or for neither one that runs op at once.
func doer(opts Options, b *backend) func(r *request, op func()) {
	switch {
	case opts.DoRequest != nil:
		return func(r *request, op func()) { opts.DoRequest(r.public(b), op) }
	case opts.Do != nil:
		return func(_ *request, op func()) { opts.Do(op) }
	}
	return func(_ *request, op func()) { op() }
}

// serve mounts dir and serves the kernel's requests with s.run until Unmount.
func (s *Server) serve(abs string, opts Options) error {
	var err error
	direct := os.Geteuid() == 0 && hasCapSysAdmin()
	zero := time.Duration(0)
	fsOpts := &fs.Options{
		// Zero timeouts: every lookup and stat asks fsys, so the kernel never answers from
		// a directory entry or size that fsys no longer has. Failed lookups are not cached
		// either (a nil NegativeTimeout).
		EntryTimeout: &zero,
		AttrTimeout:  &zero,
		MountOptions: fuse.MountOptions{
			FsName: "chaoskit",
			Name:   "chaoskit",
			// Root mounts directly (mount(2) on /dev/fuse), others through fusermount3.
			DirectMountStrict: direct,
			// No extended attributes: the kernel stops asking after the first ENOSYS.
			DisableXAttrs: true,
			// Plain READDIR: listing a directory does not stat every entry through fsys.
			DisableReadDirPlus: true,
			// Large requests, so that one write(2) of up to 1 MiB is one write on fsys.
			MaxWrite: 1 << 20,
			// O_TRUNC reaches Open (one truncating open, as in-process code makes), and
			// files opened with direct I/O may still be mapped shared (SQLite's WAL index).
			ExtraCapabilities: fuse.CAP_ATOMIC_O_TRUNC | fuse.CAP_DIRECT_IO_ALLOW_MMAP,
			Debug:             opts.Debug,
		},
		NullPermissions: true,
	}
	root := &node{srv: s}
	var srv *fuse.Server
	if direct {
		// go-fuse opens /dev/fuse without O_CLOEXEC when it mounts by itself, so every child
		// this process starts would inherit the connection of every mount, and a child blocked
		// on a mount whose server died would keep that connection alive, and itself stuck,
		// forever. Hold ForkLock for reading, as package syscall asks of code that creates
		// descriptors not yet close-on-exec, until the descriptor is marked.
		syscall.ForkLock.RLock()
		srv, err = serveRoot(abs, root, fsOpts, opts.ServeOnly)
		if err == nil {
			closeFuseOnExec()
		}
		syscall.ForkLock.RUnlock()
		if (errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES)) && fusermount() != "" {
			direct = false // mount(2) refused (a container's seccomp or LSM): try the helper
			fsOpts.DirectMountStrict = false
			root = &node{srv: s}
		}
	}
	if !direct {
		srv, err = serveRoot(abs, root, fsOpts, opts.ServeOnly) // fusermount3 hands over a close-on-exec descriptor
	}
	if err != nil {
		return fmt.Errorf("fusefs: mount %s: %w (%s)", abs, err, oneLine(Available()))
	}
	s.fuse = srv
	s.conn = connection(abs)
	return nil
}

// serveRoot mounts root at dir and starts serving it: as fs.Mount does, waiting for the kernel's
// handshake and answering go-fuse's probe, unless serveOnly (Options.ServeOnly).
func serveRoot(dir string, root fs.InodeEmbedder, opts *fs.Options, serveOnly bool) (*fuse.Server, error) {
	if !serveOnly {
		return fs.Mount(dir, root, opts)
	}
	srv, err := fuse.NewServer(fs.NewNodeFS(root, opts), dir, &opts.MountOptions)
	if err != nil {
		return nil, err
	}
	go srv.Serve()
	return srv, nil
}

// closeFuseOnExec marks every /dev/fuse descriptor of the process close-on-exec.
func closeFuseOnExec() {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && target == "/dev/fuse" {
			syscall.CloseOnExec(fd)
		}
	}
}

func oneLine(err error) string {
	if err == nil {
		return "FUSE looks available"
	}
	return err.Error()
}

// Dir returns the absolute path of the mount point.
func (s *Server) Dir() string { return s.dir }

// SharedMaps reports whether programs can map files of the mount shared (mmap MAP_SHARED),
// which SQLite's WAL mode needs for its -shm index: the kernel allows it on direct-I/O files
// from Linux 6.6 (FUSE_DIRECT_IO_ALLOW_MMAP). If it is false, WAL fails with "disk I/O error";
// tell users to run SQLite with PRAGMA locking_mode=EXCLUSIVE (WAL without shared memory) or
// PRAGMA journal_mode=DELETE.
func (s *Server) SharedMaps() bool {
	if s.exp != nil {
		return s.exp.sharedMaps()
	}
	return s.fuse.KernelSettings().Flags64()&fuse.CAP_DIRECT_IO_ALLOW_MMAP != 0
}

// Unmount stops serving and detaches the mount. Requests still waiting for Do fail with EIO at
// once, so that a killed process blocked on the mount can finish dying. If the mount is still
// busy after a few tries (some process still holds a file open on it), Unmount aborts the FUSE
// connection, so that every request on it fails at once with ENOTCONN, and detaches it: the
// mount point is free on return and nothing can hang on the old mount. (Root aborts with
// umount -f; other users through /sys/fs/fuse/connections, if fusectl is mounted there, and
// otherwise only detach: then the server answers EIO until the last file on the mount is
// closed, and the serving process must close its own files on the mount before it exits.)
//
// Unmount is idempotent and safe to call from several goroutines; every call returns the
// first call's result. It also reports the first panic fsys raised while serving, which the
// server turned into EIO.
func (s *Server) Unmount() error {
	s.unmountOnce.Do(func() {
		close(s.closing)
		var err error
		if s.exp != nil {
			err = s.exp.unmount()
		} else {
			err = s.detach()
		}
		s.panicMu.Lock()
		s.unmountErr = errors.Join(err, s.panicErr)
		s.panicMu.Unlock()
	})
	return s.unmountErr
}

func (s *Server) detach() error {
	done := make(chan error, 1)
	go func() { done <- s.fuse.Unmount() }() // retries for about 300 ms, then waits for its loops
	select {
	case err := <-done:
		if err == nil {
			return nil
		}
	case <-time.After(3 * time.Second):
	}
	return forceUnmount(s.dir, s.conn)
}

// forceUnmount detaches the mount at dir, whose FUSE connection is conn, even if it is busy. It
// first aborts the connection, so that every request still pending and every later one fails
// at once and no process can hang on the mount, not even this one (a process that dies with a
// request pending on a mount it serves itself waits forever, since its own server is gone):
// umount2(MNT_FORCE) does that for root; for others, the connection's abort file under
// /sys/fs/fuse/connections, which belongs to the user who mounted it, when fusectl is mounted
// there. Then MNT_DETACH, and fusermount3 -u -z for a process that may not unmount by itself.
func forceUnmount(dir string, conn uint32) error {
	err := syscall.Unmount(dir, syscall.MNT_FORCE)
	if err == nil || err == syscall.EINVAL { // EINVAL: not a mount point (any more)
		return nil
	}
	if conn != 0 {
		os.WriteFile(fmt.Sprintf("/sys/fs/fuse/connections/%d/abort", conn), []byte("1"), 0)
	}
	if err = syscall.Unmount(dir, syscall.MNT_DETACH); err == nil || err == syscall.EINVAL {
		return nil
	}
	for _, bin := range []string{"fusermount3", "fusermount"} {
		if path, lerr := exec.LookPath(bin); lerr == nil {
			out, xerr := exec.Command(path, "-u", "-z", dir).CombinedOutput()
			if xerr == nil {
				return nil
			}
			err = fmt.Errorf("%w; %s -u -z: %v: %s", err, bin, xerr, out)
		}
	}
	return fmt.Errorf("fusefs: unmount %s: %w", dir, err)
}

// connection returns the number of the FUSE connection mounted at dir (the minor number of its
// device, which is how /sys/fs/fuse/connections names it), or 0.
func connection(dir string) uint32 {
	// From the mount table, resolving the parent's symbolic links only: a stat of dir itself
	// (as resolving it would make) is a request on the mount.
	parent, err := cleanPrefix(filepath.Dir(dir))
	if err != nil {
		return 0
	}
	at := filepath.Join(parent, filepath.Base(dir))
	ms, _ := mountTable(at)
	for _, m := range ms {
		if m.dir == at {
			return m.conn
		}
	}
	return 0
}

// The states of a call.
const (
	pending   int32 = iota // handed to Do, not started
	running                // started
	returned               // fn returned
	abandoned              // will never run: Do gave up on it, or the server is closing
)

type call struct {
	state atomic.Int32
	done  chan struct{}
	once  sync.Once
	errno syscall.Errno // valid once state is returned
}

func (c *call) signal() { c.once.Do(func() { close(c.done) }) }

// runOp runs fn, the fsys calls of one request, through do, and returns fn's errno, or EIO if
// fn did not return (it crashed, do gave up on it, or closing closed first). A panic of fn is
// answered EIO and handed to panicked. fn must keep its results in its own variables: the
// caller reads them only after a nil errno.
func runOp(r *request, do func(r *request, op func()), closing <-chan struct{}, panicked func(what string, r any), fn func() syscall.Errno) syscall.Errno {
	select {
	case <-closing:
		return syscall.EIO
	default:
	}
	c := &call{done: make(chan struct{})}
	run := func() {
		if !c.state.CompareAndSwap(pending, running) {
			return
		}
		defer c.signal() // also when fn leaves through runtime.Goexit
		defer func() {
			if p := recover(); p != nil {
				panicked(r.Op.String(), p)
			}
		}()
		errno := fn()
		c.errno = errno
		c.state.Store(returned)
	}
	go func() {
		do(r, run)
		c.state.CompareAndSwap(pending, abandoned)
		c.signal()
	}()
	select {
	case <-c.done:
	case <-closing:
		c.state.CompareAndSwap(pending, abandoned)
	}
	if c.state.Load() == returned {
		return c.errno
	}
	return syscall.EIO
}

func (s *Server) recordPanic(what string, r any) {
	s.panicMu.Lock()
	defer s.panicMu.Unlock()
	if s.panicErr == nil {
		s.panicErr = fmt.Errorf("fusefs: fsys panicked in %s (answered EIO): %v\n%s", what, r, debug.Stack())
	}
}
