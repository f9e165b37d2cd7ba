package process

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// tailBytes is how much of a command's output a failure quotes.
const tailBytes = 2048

// child is a running command: the leader of its own process group.
type child struct {
	cmd     *exec.Cmd
	out     *tail
	exited  chan struct{} // closed once the command has exited and been reaped
	waitErr error
	killed  bool // chaoskit killed it
	mu      sync.Mutex
}

// startChild starts argv in a process group of its own, with env added to chaoskit's
// environment, and records the group with the reaper.
func startChild(argv []string, dir string, env []string) (*child, error) {
	c := &child{out: &tail{}, exited: make(chan struct{})}
	c.cmd = exec.Command(argv[0], argv[1:]...)
	c.cmd.Dir = dir
	c.cmd.Env = append(os.Environ(), env...)
	c.cmd.Stdout, c.cmd.Stderr = c.out, c.out
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.cmd.WaitDelay = time.Second // a grandchild that keeps the output open cannot hold up Wait
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", strings.Join(argv, " "), err)
	}
	pgid := c.cmd.Process.Pid
	register(pgid)
	go func() {
		err := c.cmd.Wait()
		c.mu.Lock()
		c.waitErr = err
		c.mu.Unlock()
		close(c.exited)
	}()
	return c, nil
}

// kill SIGKILLs the command's whole process group and waits until the command has been reaped.
func (c *child) kill() {
	pgid := c.cmd.Process.Pid
	c.mu.Lock()
	c.killed = true
	c.mu.Unlock()
	syscall.Kill(-pgid, syscall.SIGKILL)
	select {
	case <-c.exited:
	case <-time.After(10 * time.Second): // a process in uninterruptible sleep; the reaper will see to it
	}
	syscall.Kill(-pgid, syscall.SIGKILL) // what the leader left behind
	unregister(pgid)
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
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			err = fmt.Errorf("killed by signal %s", ws.Signal())
		} else {
			err = fmt.Errorf("exited with status %d", ee.ExitCode())
		}
	}
	if t := c.out.String(); t != "" {
		return fmt.Errorf("%w; its output ends: %q", err, t)
	}
	return err
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
