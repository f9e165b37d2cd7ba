package process

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode"

	"golang.org/x/sys/unix"
)

// tailBytes is how much of a command's output a failure quotes.
const tailBytes = 2048

// child is a running command: the leader of its own process group, with every process it
// starts (see descendants).
type child struct {
	cmd  *exec.Cmd
	name string // its name for the reaper, and its cgroup's
	out  *tail
	all  *descendants
	// listener is its trap's (seccomp.go), or -1; virtual says the trap holds its clocks and
	// waits (it runs under the tracer, tr); fatal, that its sync calls kill it (SIGSYS): they
	// cannot be trapped here.
	listener int
	virtual  bool
	tr       *tracerStart
	fatal    bool
	exited   chan struct{} // closed once the command has exited and been reaped
	waitErr  error
	killed   bool // chaoskit killed it
	mu       sync.Mutex
}

// command is a command for startChild to start.
type command struct {
	argv   []string
	dir    string    // its working directory; "" for chaoskit's
	env    []string  // added to chaoskit's environment
	name   string    // its name for the reaper and its cgroup's, unique in chaoskit's directory
	marker string    // marks its processes (see descendants)
	stdout io.Writer // where its standard output goes; nil for the tail of its output
	// trapSyncs starts it with its sync(2) and syncfs(2) calls handed to chaoskit (child.listener),
	// where this machine allows it (seccomp.go).
	trapSyncs bool
	// virtual starts it under the tracer with its clocks and timed waits trapped too (watch.go),
	// where this machine allows it: else it runs on the wall clock, and chaoskit says so once.
	virtual bool
}

// startChild starts a command in a process group and a cgroup of its own, with its marker in
// its environment (see descendants), and records it with the reaper.
func startChild(cmd command) (*child, error) {
	argv, marker := cmd.argv, cmd.marker
	all, err := newDescendants(cmd.name, marker)
	if err != nil {
		return nil, err
	}
	c := &child{name: cmd.name, out: &tail{}, all: all, exited: make(chan struct{}), listener: -1}
	start := func() error {
		c.cmd = exec.Command(argv[0], argv[1:]...)
		c.cmd.Dir = cmd.dir
		c.cmd.Env = append(append(os.Environ(), cmd.env...), envMarker+"="+marker)
		c.cmd.Stdout, c.cmd.Stderr = c.out, c.out
		if cmd.stdout != nil {
			c.cmd.Stdout = cmd.stdout
		}
		c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		c.cmd.WaitDelay = time.Second // a grandchild that keeps the output open cannot hold up Wait
		register(c.name, c.all.record(0))
		err := c.launch(cmd)
		c.all.started()
		if err == nil {
			register(c.name, c.all.record(c.cmd.Process.Pid))
		}
		return err
	}
	err = start()
	if errors.Is(err, errNoVirtualTime) {
		noVirtualTime(err)
		cmd.virtual = false
		err = start()
	}
	if err != nil && all.cgroup != "" && startedOutsideCgroups(err) {
		all.kill() // the cgroup would not take it (clone3 refused): track it by its marker
		c.all = &descendants{marker: marker}
		err = start()
	}
	if err != nil {
		c.all.kill()
		unregister(c.name)
		return nil, fmt.Errorf("starting %s: %w", strings.Join(argv, " "), err)
	}
	go func() {
		err := c.cmd.Wait()
		c.mu.Lock()
		c.waitErr = err
		c.mu.Unlock()
		close(c.exited)
	}()
	return c, nil
}

// launch starts c.cmd: under the tracer with virtual time; else trapping its sync calls if
// cmd.trapSyncs and seccomp allows it.
func (c *child) launch(cmd command) error {
	if cmd.virtual {
		t, err := startTraced(c.cmd, c.all.fd)
		var se *startError
		switch {
		case errors.As(err, &se):
			return se.err
		case err != nil:
			return err
		}
		c.tr, c.listener, c.virtual = t, t.listener, true
		if c.all.cgroup != "" && !t.inCgroup { // the cgroup would not take it: find it by its marker
			c.all.kill()
			c.all = &descendants{marker: cmd.marker}
		}
		return nil
	}
	c.all.attach(c.cmd.SysProcAttr)
	if !cmd.trapSyncs {
		return c.cmd.Start()
	}
	fd, err := startSyncTrapped(c.cmd)
	var se *startError
	switch {
	case errors.As(err, &se):
		return se.err
	case err != nil: // no seccomp filter at all here: the command runs, and its syncs make nothing durable
		return c.cmd.Start()
	}
	c.listener, c.fatal = fd, fd < 0
	return nil
}

// noSyncTrap makes sync calls fatal as on a machine without user notifications (the tests of
// that way set it).
var noSyncTrap atomic.Bool

// startSyncTrapped starts cmd with its sync(2) and syncfs(2) calls sent to a new listener, on
// the wall clock: cmd.Start runs on an OS thread of its own that first installs the filter,
// which the command inherits (and every process it starts); the thread then goes, taking the
// filter with it. Where seccomp has no user notifications (Linux before 5.0, a sandbox that
// forbids them), such a call kills the process with SIGSYS instead, which its failure explains
// (errSyncUnseen): a loud refusal, never a checkpoint silently left un-fsynced (the listener is
// then -1). If no filter can be installed at all, it returns that error and does not start cmd.
func startSyncTrapped(cmd *exec.Cmd) (int, error) {
	type started struct {
		fd       int
		err      error
		startErr error
	}
	ch := make(chan started, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread, filter and all, ends with this goroutine
		fd, err := -1, errors.New("user notifications turned off")
		if !noSyncTrap.Load() {
			fd, err = installFilter(unix.SECCOMP_RET_USER_NOTIF, false)
		}
		if err != nil {
			if _, terr := installFilter(unix.SECCOMP_RET_TRAP, false); terr == nil {
				ch <- started{fd: -1, startErr: cmd.Start()}
				return
			}
			ch <- started{fd: -1, err: err}
			return
		}
		ch <- started{fd: fd, startErr: cmd.Start()}
	}()
	s := <-ch
	if s.err != nil {
		return -1, s.err
	}
	if s.startErr != nil {
		if s.fd >= 0 {
			syscall.Close(s.fd)
		}
		return -1, &startError{s.startErr}
	}
	return s.fd, nil
}

// errSyncUnseen explains a command that died of SIGSYS under the filter that makes its sync
// calls fatal.
var errSyncUnseen = errors.New("killed by SIGSYS: it called sync(2) or syncfs(2), which a FUSE server is never told of " +
	"and which chaoskit cannot trap on this machine (seccomp user notifications need Linux 5.0): fsync the files and directories instead")

// noVirtual makes every command run on the wall clock, as on a machine without the trap (the
// tests of that way set it).
var noVirtual atomic.Bool

// noVirtualTime says once, on chaoskit's standard error, why virtual time is unavailable here,
// and makes every later command run on the wall clock.
func noVirtualTime(err error) {
	noVirtualOnce.Do(func() {
		noVirtual.Store(true)
		fmt.Fprintf(os.Stderr, "chaoskit: %v; sleeps of the commands take wall-clock time\n", err)
	})
}

var noVirtualOnce sync.Once

// startedOutsideCgroups reports whether a command that failed to start in a cgroup with err
// might start outside it: clone3 or its cgroup refused, not the command.
func startedOutsideCgroups(err error) bool {
	return errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) ||
		errors.Is(err, syscall.EBUSY) || errors.Is(err, syscall.EOPNOTSUPP)
}

// kill SIGKILLs the command and every process it started, and waits until the command has
// been reaped and the others are gone.
func (c *child) kill() {
	pgid := c.cmd.Process.Pid
	c.mu.Lock()
	c.killed = true
	c.mu.Unlock()
	if c.all.cgroup == "" { // a cgroup holds the group too, and cannot be reused as a pgid can
		syscall.Kill(-pgid, syscall.SIGKILL)
	}
	gone := c.all.kill()
	select {
	case <-c.exited:
	case <-time.After(killTimeout): // a process in uninterruptible sleep; the reaper will see to it
		gone = false
	}
	if gone {
		unregister(c.name)
	}
}

// terminate sends the command's process group SIGTERM, as a deploy does before it kills: systemd
// sends it to every process of the unit (KillMode=control-group), Kubernetes and Docker to the
// container's first process; the group holds the command and what it started, unless one left
// it (setsid). Under the tracer, the tracer ignores it and passes it on to the command. A
// command that has exited is left alone. The command starts with SIGTERM's default action even
// if chaoskit was started with it ignored (by a shell's trap): Go's runtime installs its own handler
// for SIGTERM whatever it inherits, and exec resets a handled signal.
func (c *child) terminate() {
	select {
	case <-c.exited:
		return
	default:
	}
	syscall.Kill(-c.cmd.Process.Pid, syscall.SIGTERM)
}

// dead reports whether the command has died: it is a zombie, or gone (reaped). Under the tracer
// the command is the tracer's child, not c.cmd.
func (c *child) dead() bool {
	pid := c.cmd.Process.Pid
	if c.tr != nil {
		pid = c.tr.pid
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH)
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && (b[i+2] == 'Z' || b[i+2] == 'X')
}

// err returns why the command failed once it has exited on its own, or nil for exit status 0.
func (c *child) err() error {
	c.mu.Lock()
	err := c.waitErr
	c.mu.Unlock()
	if err == nil {
		return nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGSYS && c.fatal {
			err = errSyncUnseen
		} else if ok && ws.Signaled() {
			err = fmt.Errorf("killed by signal %s", ws.Signal())
		} else {
			err = fmt.Errorf("exited with status %d", ee.ExitCode())
		}
	}
	return c.out.quoted(err)
}

// tail keeps the last tailBytes of what is written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*tailBytes {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailBytes:]...)
	}
	return len(p), nil
}

// tailLines is how many of the tail's last lines a failure quotes.
const tailLines = 30

// quoted returns err with the tail as a failure quotes it: its last line, quoted, on err's line
// (where a traceback says what went wrong, and all a one-line summary shows), then, if there are
// more, its last lines (at most tailLines) as they were printed, each on a line of its own indented by four spaces, with
// control characters but tabs escaped as Go escapes them (a terminal's colours, a carriage
// return). Without output it returns err.
func (t *tail) quoted(err error) error {
	s := strings.ReplaceAll(t.String(), "\r\n", "\n")
	if s == "" {
		return err
	}
	lines := strings.Split(s, "\n")
	if len(lines) == 1 {
		return fmt.Errorf("%w; its output ends: %q", err, s)
	}
	if len(lines) > tailLines {
		lines = lines[len(lines)-tailLines:]
	}
	var b strings.Builder
	for _, line := range lines {
		b.WriteString("\n    ")
		for _, r := range strings.TrimRight(line, " \t") {
			if r == '\t' || !unicode.IsControl(r) {
				b.WriteRune(r)
			} else {
				q := strconv.QuoteRune(r)
				b.WriteString(q[1 : len(q)-1])
			}
		}
	}
	return fmt.Errorf("%w; its output ends: %q%s", err, lines[len(lines)-1], b.String())
}

// String returns the tail, trimmed, cut to tailBytes at a line start if it can.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	if len(b) > tailBytes {
		b = b[len(b)-tailBytes:]
		if i := strings.IndexByte(string(b), '\n'); i >= 0 && i < len(b)-1 {
			b = b[i+1:]
		}
	}
	return strings.TrimSpace(string(b))
}
