package process

import (
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// ledger counts what chaoskit owes a command: a reader that has seen bytes and not yet
// submitted what they hold, a connection not accepted yet, bytes not read yet. The command
// cannot be quiescent while anything is owed, for it is about to be answered or woken. Every
// reader marks itself busy before it takes bytes from a socket and unmarks once it has
// submitted them (the busy-before-read rule): otherwise bytes could leave the socket and not
// yet be a request while the quiescence check looks, and it would see neither.
type ledger struct {
	busy atomic.Int64
	gen  atomic.Uint64 // one more at every accept, read, submission and delivery
	mu   sync.Mutex
	ins  map[any]func() bool // each returns whether bytes or a connection wait on it
}

// owed returns what is owed now, and the activity count.
func (l *ledger) owed() (int, uint64) {
	g := l.gen.Load()
	n := int(l.busy.Load())
	l.mu.Lock()
	for _, waiting := range l.ins {
		if waiting() {
			n++
		}
	}
	l.mu.Unlock()
	return n, g
}

// watch adds a source whose waiting bytes or connections are owed; forget removes it.
func (l *ledger) watch(k any, waiting func() bool) {
	l.mu.Lock()
	if l.ins == nil {
		l.ins = map[any]func() bool{}
	}
	l.ins[k] = waiting
	l.mu.Unlock()
}

func (l *ledger) forget(k any) {
	l.mu.Lock()
	delete(l.ins, k)
	l.mu.Unlock()
}

// mark marks a reader busy (n = 1) or no longer (n = -1), and counts the activity.
func (l *ledger) mark(n int64) {
	l.gen.Add(1)
	l.busy.Add(n)
}

// waitReadable blocks until c has bytes to read, or its end, without taking any: the first half
// of the busy-before-read rule (mark busy, then read).
func waitReadable(c syscall.Conn) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	return rc.Read(func(fd uintptr) bool {
		var b [1]byte
		_, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		return err != unix.EAGAIN // ready: bytes, the end, or an error
	})
}

// unread reports whether bytes wait unread in c's socket.
func unread(c syscall.Conn) bool {
	rc, err := c.SyscallConn()
	if err != nil {
		return false
	}
	n := 0
	rc.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.SIOCINQ) })
	return n > 0
}

// peerClosed reports whether the other end of the connection c has closed it (or shut down its
// writing): an end of file waits to be read.
func peerClosed(c syscall.Conn) bool {
	rc, err := c.SyscallConn()
	if err != nil {
		return false
	}
	closed := false
	rc.Control(func(fd uintptr) {
		p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN | unix.POLLRDHUP}}
		if n, _ := unix.Poll(p, 0); n > 0 && p[0].Revents&(unix.POLLRDHUP|unix.POLLHUP) != 0 {
			closed = true
		}
	})
	return closed
}

// pendingConn reports whether a connection waits on the listener ln to be accepted.
func pendingConn(ln syscall.Conn) bool {
	rc, err := ln.SyscallConn()
	if err != nil {
		return false
	}
	ready := false
	rc.Control(func(fd uintptr) {
		p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if n, _ := unix.Poll(p, 0); n > 0 && p[0].Revents&unix.POLLIN != 0 {
			ready = true
		}
	})
	return ready
}

// waitAcceptable blocks until a connection waits on the listener ln, or the listener is
// closed, or past its deadline with none waiting (a listener's raw connection cannot wait for
// readability, so it polls, 20 ms at a time).
func waitAcceptable(ln interface {
	syscall.Conn
	Addr() net.Addr
}, pastDeadline func() bool) error {
	rc, err := ln.SyscallConn()
	if err != nil {
		return err
	}
	for {
		ready := false
		cerr := rc.Control(func(fd uintptr) {
			p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			if n, _ := unix.Poll(p, 20); n > 0 {
				ready = true
			}
		})
		switch {
		case cerr != nil:
			return cerr
		case ready:
			return nil
		case pastDeadline != nil && pastDeadline():
			return os.ErrDeadlineExceeded
		}
	}
}

// acceptMarked accepts a connection on ln by the busy-before-read rule: it waits until one is
// pending, marks l busy, accepts it, has watch register it (so that its unread bytes are
// owed), and unmarks.
func acceptMarked(ln interface {
	syscall.Conn
	Addr() net.Addr
	Accept() (net.Conn, error)
}, l *ledger, pastDeadline func() bool, watch func(c net.Conn)) (net.Conn, error) {
	if err := waitAcceptable(ln, pastDeadline); err != nil {
		return nil, err
	}
	l.mark(1)
	defer l.mark(-1)
	c, err := ln.Accept()
	if err != nil {
		return nil, err
	}
	watch(c)
	return c, nil
}
