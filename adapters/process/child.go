package process

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"
)

// tailBytes is how much of a command's output a failure quotes.
const tailBytes = 2048

// child is a running command: the leader of its own process group, with every process it
// starts (see descendants).
type child struct {
	cmd     *exec.Cmd
	name    string // its name for the reaper, and its cgroup's
	out     *tail
	all     *descendants
	syncs   *syncTrap     // its sync(2) and syncfs(2) calls, if it was started trapping them
	fatal   bool          // its sync calls kill it (SIGSYS): they cannot be trapped here
	exited  chan struct{} // closed once the command has exited and been reaped
	waitErr error
	killed  bool // chaoskit killed it
	mu      sync.Mutex
}

// command is a command for startChild to start.
type command struct {
	argv   []string
	dir    string    // its working directory; "" for chaoskit's
	env    []string  // added to chaoskit's environment
	name   string    // its name for the reaper and its cgroup's, unique in chaoskit's directory
	marker string    // marks its processes (see descendants)
	stdout io.Writer // where its standard output goes; nil for the tail of its output
	// trapSyncs starts it with its sync(2) and syncfs(2) calls handed to chaoskit (child.syncs),
	// where this machine allows it (synctrap.go).
	trapSyncs bool
}

// startChild starts a command in a process group and a cgroup of its own, with its marker in
// its environment (see descendants), and records it with the reaper.
func startChild(cmd command) (*child, error) {
	argv, marker := cmd.argv, cmd.marker
	all, err := newDescendants(cmd.name, marker)
	if err != nil {
		return nil, err
	}
	c := &child{name: cmd.name, out: &tail{}, all: all, exited: make(chan struct{})}
	start := func() error {
		c.cmd = exec.Command(argv[0], argv[1:]...)
		c.cmd.Dir = cmd.dir
		c.cmd.Env = append(append(os.Environ(), cmd.env...), envMarker+"="+marker)
		c.cmd.Stdout, c.cmd.Stderr = c.out, c.out
		if cmd.stdout != nil {
			c.cmd.Stdout = cmd.stdout
		}
		c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		c.all.attach(c.cmd.SysProcAttr)
		c.cmd.WaitDelay = time.Second // a grandchild that keeps the output open cannot hold up Wait
		register(c.name, c.all.record(0))
		err := c.launch(cmd.trapSyncs)
		c.all.started()
		if err == nil {
			register(c.name, c.all.record(c.cmd.Process.Pid))
		}
		return err
	}
	err = start()
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

// launch starts c.cmd, trapping its sync calls if trap is set and seccomp allows it.
func (c *child) launch(trap bool) error {
	if !trap {
		return c.cmd.Start()
	}
	t, err := startTrapped(c.cmd)
	var se *startError
	switch {
	case errors.As(err, &se):
		return se.err
	case err != nil: // no seccomp filter at all here: the command runs, and its syncs make nothing durable
		return c.cmd.Start()
	}
	c.syncs, c.fatal = t, t == nil
	return nil
}

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
	if c.syncs != nil {
		c.syncs.stop()
	}
	select {
	case <-c.exited:
	case <-time.After(killTimeout): // a process in uninterruptible sleep; the reaper will see to it
		gone = false
	}
	if gone {
		unregister(c.name)
	}
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
