package process

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
)

// A front door is a server other than the protocol's socket through which a process of a
// Target reaches chaoskit's world: the model provider's HTTP API (adapters/provider), MCP
// (adapters/mcp), REST service doubles (adapters/rest). Each names the calling process by its
// token (rest.Token) and submits each request through Admit, so that the requests a process
// makes at once are admitted, and their replies handed back, by the same rules as the
// protocol's (admit.go): in canonical order, at quiescence, one reply at a time.
//
// A front door's server must also let chaoskit see what it owes: a connection not accepted,
// bytes not read, a request read and not yet submitted, a reply handed back and not yet
// written. A FrontDoor does that for an http.Server: serve on FrontDoor.Listener(ln) with the
// handler wrapped by FrontDoor.Handler and the server's ConnState set to FrontDoor.ConnState.
//
//	door := process.NewFrontDoor()
//	defer door.Close()
//	srv := &http.Server{Handler: door.Handler(mux), ConnState: door.ConnState}
//	go srv.Serve(door.Listener(ln))
//	// in a handler:
//	reply, err := process.Admit(r.Context(), token, process.Key{Op: "tools/call", Name: tool, Key: key, Args: args},
//		func(ctx context.Context, env *harness.Env) any { ... env.Call(ctx, call) ... })

// procs are the running processes, by token, for Admit.
var procs struct {
	mu sync.Mutex
	m  map[string]*proc
}

func registerProc(token string, p *proc) {
	procs.mu.Lock()
	defer procs.mu.Unlock()
	if procs.m == nil {
		procs.m = map[string]*proc{}
	}
	procs.m[token] = p
}

func unregisterProc(p *proc) {
	procs.mu.Lock()
	defer procs.mu.Unlock()
	for k, q := range procs.m {
		if q == p {
			delete(procs.m, k)
		}
	}
}

// ErrNoProcess is returned by Admit for a token that names no running process (a process
// that has ended, or a request that carried no token or another's).
var ErrNoProcess = errors.New("process: no running process has this token")

// Admit submits a request of the process whose token is token (CHAOSKIT_TOKEN, as the front
// door found it in the request) and blocks the calling goroutine until the process's serve
// loop has admitted it, run do in a thread of the process of its own (do's ctx is that
// thread's, done when the process ends: never the HTTP request's, which the simulation cannot
// order), and handed its reply back; it returns the reply. The rules:
//
//   - the requests a process makes at once are admitted when it is quiescent, in the order of
//     their keys (Key: op, name, idempotency key, canonical arguments), so build k from what the
//     request does, never from what differs between runs (an HTTP request id, a connection);
//   - replies are handed back one at a time, each once the process is quiescent again, in the
//     order of their requests (reversed in the counted golden runs);
//   - do may call every method of env (each Env call a beat, as for the protocol's requests)
//     and must not block outside it;
//   - if ctx is done first (the caller gave up), Admit returns ctx's error and the reply, when
//     it comes, is dropped; the request is served all the same;
//   - a request served through a FrontDoor's Handler is owed from the moment its bytes arrive
//     until the handler returns, except while Admit waits: write the reply and return.
//
// It returns ErrNoProcess if no running process has token.
func Admit(ctx context.Context, token string, k Key, do Do) (any, error) {
	procs.mu.Lock()
	p := procs.m[token]
	procs.mu.Unlock()
	if p == nil {
		return nil, ErrNoProcess
	}
	dc, _ := ctx.Value(doorConnKey{}).(*doorConn)
	got := make(chan any, 1)
	if dc != nil {
		dc.park(1)
		defer dc.park(-1)
	}
	var mu sync.Mutex
	waiting := true // the handler waits for the reply: once it has given up, nothing writes it
	var gone atomic.Bool
	if !p.adm.submitFrom(k, do, func(reply any) {
		mu.Lock()
		if dc != nil && waiting {
			dc.setBusy(true) // owed until the handler has written it (Handler clears it)
		}
		mu.Unlock()
		got <- reply
	}, &gone) {
		return nil, ErrNoProcess
	}
	if dc != nil {
		dc.setBusy(false) // submitted: the serve loop knows of it
	}
	select {
	case r := <-got:
		return r, nil
	case <-ctx.Done():
		mu.Lock()
		waiting = false
		mu.Unlock()
		gone.Store(true) // before the connection stops being owed (park(-1)): see Listener
		return nil, ctx.Err()
	}
}

// doors are the front doors open, whose debts every process's quiescence counts (a connection
// is not known to belong to a process before its request is read).
var doors struct {
	mu sync.Mutex
	m  map[*FrontDoor]bool
}

// doorsOwed sums what the open front doors owe.
func doorsOwed() (int, uint64) {
	doors.mu.Lock()
	defer doors.mu.Unlock()
	n, g := 0, uint64(0)
	for d := range doors.m {
		m, h := d.l.owed()
		n, g = n+m, g+h
	}
	return n, g
}

// doorsInFlight reports whether bytes or a handshake are on their way over loopback to or from
// an open front door's TCP port (inflight.go). It looks at the doors that have a connection
// open, and at every door if all (a command that has services, whose first connection may be
// under way): reading /proc/net/tcp takes some 2 ms, too much for every quiescence of every
// command.
func doorsInFlight(all bool) bool {
	ports := map[int]bool{}
	doors.mu.Lock()
	for d := range doors.m {
		d.mu.Lock()
		if all || len(d.conns) > 0 {
			for p := range d.ports {
				ports[p] = true
			}
		}
		d.mu.Unlock()
	}
	doors.mu.Unlock()
	return loopbackInFlight(ports)
}

// FrontDoor accounts for what an HTTP server that submits requests through Admit owes the
// commands it serves: make one with NewFrontDoor, serve on its Listener with its Handler, and
// Close it when the server is done.
type FrontDoor struct {
	l     ledger
	mu    sync.Mutex
	conns map[string]*doorConn // by remote address
	ports map[int]bool         // the TCP ports it listens on
	// states says that the server tells ConnState its connections' states: a response is then
	// owed until the server has written all of it.
	states atomic.Bool
}

// ConnState is the http.Server's ConnState of a front door's server. A response is owed until
// its last byte is written: net/http writes some of it after the handler returns (what the
// handler left buffered, a chunked body's end), and a command waiting for those bytes while
// nothing is owed would be taken for quiescent, and its socket's timeout run out. The server
// says it has written all of a response when the connection goes idle, or is closed.
func (d *FrontDoor) ConnState(c net.Conn, s http.ConnState) {
	d.states.Store(true)
	dc, ok := c.(*doorConn)
	if !ok {
		return
	}
	switch s {
	case http.StateIdle, http.StateClosed, http.StateHijacked:
		dc.setBusy(false)
	}
}

// NewFrontDoor returns a front door, open.
func NewFrontDoor() *FrontDoor {
	d := &FrontDoor{conns: map[string]*doorConn{}}
	doors.mu.Lock()
	if doors.m == nil {
		doors.m = map[*FrontDoor]bool{}
	}
	doors.m[d] = true
	doors.mu.Unlock()
	return d
}

// Close closes the front door: what it owes counts no more.
func (d *FrontDoor) Close() {
	doors.mu.Lock()
	delete(doors.m, d)
	doors.mu.Unlock()
}

// Listener returns ln (a TCP or Unix listener) accepting by the busy-before-read rule: a
// connection waiting is owed, and so are the bytes of each connection it accepted until a
// handler submits the request they make.
func (d *FrontDoor) Listener(ln net.Listener) net.Listener {
	d.l.watch(ln, func() bool { return pendingConn(ln.(syscall.Conn)) })
	if a, ok := ln.Addr().(*net.TCPAddr); ok {
		d.mu.Lock()
		if d.ports == nil {
			d.ports = map[int]bool{}
		}
		d.ports[a.Port] = true
		d.mu.Unlock()
	}
	return &doorListener{Listener: ln, d: d}
}

type doorListener struct {
	net.Listener
	d *FrontDoor
}

func (l *doorListener) Accept() (net.Conn, error) {
	sc, ok := l.Listener.(interface {
		syscall.Conn
		Addr() net.Addr
		Accept() (net.Conn, error)
	})
	if !ok {
		return nil, errors.New("process: a front door listens on a TCP or Unix listener")
	}
	var dc *doorConn
	_, err := acceptMarked(sc, &l.d.l, nil, func(c net.Conn) {
		dc = &doorConn{Conn: c, d: l.d}
		// Owed: bytes not read; and, while a request of it waits in Admit, its client's
		// hang-up, until Admit has seen it and said so (gone), so that a quiescence never
		// comes between a client giving up and chaoskit knowing.
		l.d.l.watch(dc, func() bool {
			if dc.parked() == 0 {
				return unread(c.(syscall.Conn))
			}
			return peerClosed(c.(syscall.Conn))
		})
		l.d.mu.Lock()
		l.d.conns[c.RemoteAddr().String()] = dc
		l.d.mu.Unlock()
	})
	if err != nil {
		return nil, err
	}
	return dc, nil
}

func (l *doorListener) Close() error {
	l.d.l.forget(l.Listener)
	if a, ok := l.Listener.Addr().(*net.TCPAddr); ok {
		l.d.mu.Lock()
		delete(l.d.ports, a.Port)
		l.d.mu.Unlock()
	}
	return l.Listener.Close()
}

// doorConn is one connection of a front door: busy from the arrival of a request's bytes to
// its submission, and from the delivery of its reply to the handler's return; parked while a
// request of it waits in Admit (bytes that arrive meanwhile wait for it, and are not owed).
type doorConn struct {
	net.Conn
	d     *FrontDoor
	mu    sync.Mutex
	busy  bool
	parks int
}

type doorConnKey struct{}

func (c *doorConn) setBusy(b bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.busy != b {
		c.busy = b
		if b {
			c.d.l.mark(1)
		} else {
			c.d.l.mark(-1)
		}
	}
}

func (c *doorConn) parked() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.parks
}

func (c *doorConn) park(n int) {
	c.mu.Lock()
	c.parks += n
	c.mu.Unlock()
}

// Read waits until bytes are there, marks the connection busy, and reads them.
func (c *doorConn) Read(b []byte) (int, error) {
	if c.parked() == 0 {
		if sc, ok := c.Conn.(syscall.Conn); ok {
			if err := waitReadable(sc); err != nil {
				return 0, err
			}
		}
		c.setBusy(true)
	}
	n, err := c.Conn.Read(b)
	if n == 0 || err != nil {
		c.setBusy(false)
	}
	return n, err
}

func (c *doorConn) Close() error {
	c.setBusy(false)
	c.d.l.forget(c)
	c.d.mu.Lock()
	delete(c.d.conns, c.RemoteAddr().String())
	c.d.mu.Unlock()
	return c.Conn.Close()
}

// Handler returns h with its requests' connections known to Admit. With ConnState set on the
// server, a response is owed until the server has written all of it; without, until the handler
// has returned and its response been flushed (net/http may still write a chunked body's end).
func (d *FrontDoor) Handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		dc := d.conns[r.RemoteAddr]
		d.mu.Unlock()
		if dc == nil {
			h.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), doorConnKey{}, dc)))
		if d.states.Load() {
			return // still owed: ConnState says when the server has written all of it
		}
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		dc.setBusy(false)
	})
}
