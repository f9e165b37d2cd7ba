package process

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chaoskit/chaoskit/harness"
)

// maxLine bounds a request line.
const maxLine = 16 << 20

// maxIdle bounds the requests a process may make in a row without a beat (reading the clock,
// polling messages): past it, the process is failed as flooding rather than left to spin.
const maxIdle = 10_000

// session is the protocol of one process (PROTOCOL.md): its socket, the connections the
// command makes (several: threads and subprocesses of the command, each with the process's
// token), and the requests they send, each the Env call it stands for, submitted for admission
// (admit.go) and answered, by id, when the serve loop delivers the reply.
type session struct {
	t        *Target
	env      *harness.Env
	stateDir string       // what the hello tells the command
	atBeat   func() error // run before every request that is a beat
	sock     string
	token    string
	ln       *net.UnixListener
	adm      *admission
	owed     *ledger
	helloErr chan error    // a refused hello, for the serve loop to fail the process with
	ended    chan struct{} // closed once no connection is accepted any more and every one has ended
	readers  sync.WaitGroup
	closing  atomic.Bool // the command has exited: accept ends once no connection waits

	connMu sync.Mutex
	conns  map[*pconn]bool // those whose hello was accepted

	// What requests leave, each run in a thread of the process, one at a time.
	result   any
	sentDone bool
	refused  string // the reason of a refuse request
	idle     int
	failed   error // a request that fails the process, once its answer is delivered
}

// pconn is one connection of the command: its ids in flight, for pipelining.
type pconn struct {
	c      *net.UnixConn
	wmu    sync.Mutex
	mu     sync.Mutex
	flight map[int64]bool
}

// listen makes the session of a process of t, listening on the socket sock, with token.
func listen(t *Target, env *harness.Env, sock, token, stateDir string, atBeat func() error, adm *admission, owed *ledger) (*session, error) {
	s := &session{t: t, env: env, stateDir: stateDir, atBeat: atBeat, sock: sock, token: token, adm: adm, owed: owed,
		helloErr: make(chan error, 1), ended: make(chan struct{}), conns: map[*pconn]bool{}}
	var err error
	if s.ln, err = net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"}); err != nil {
		return nil, fmt.Errorf("process: listening on %s: %w", sock, err)
	}
	owed.watch(s.ln, func() bool { return pendingConn(s.ln) })
	s.readers.Add(1)
	go s.accept()
	go func() {
		s.readers.Wait()
		close(s.ended)
	}()
	return s, nil
}

// accept takes the command's connections, each read by a goroutine of its own. It ends when
// the listener is closed or past its deadline (set once the command has exited, so that a
// connection made just before is still taken).
func (s *session) accept() {
	defer s.readers.Done()
	defer s.owed.forget(s.ln)
	for {
		c, err := acceptMarked(s.ln, s.owed, s.closing.Load, func(c net.Conn) {
			s.owed.watch(c, func() bool { return unread(c.(*net.UnixConn)) })
			s.readers.Add(1)
		})
		if err != nil {
			return
		}
		go s.read(&pconn{c: c.(*net.UnixConn), flight: map[int64]bool{}})
	}
}

// read reads a connection by the busy-before-read rule: it waits until bytes are there, marks
// itself busy, takes them, submits every whole line (the hello it answers itself), and unmarks.
func (s *session) read(pc *pconn) {
	defer s.readers.Done()
	defer s.owed.forget(pc.c)
	buf := make([]byte, 64<<10)
	var line []byte
	helloed := false
	for {
		if err := waitReadable(pc.c); err != nil {
			return
		}
		s.owed.mark(1)
		n, err := pc.c.Read(buf)
		rest := buf[:n]
		for len(rest) > 0 {
			i := bytes.IndexByte(rest, '\n')
			if i < 0 {
				line = append(line, rest...)
				break
			}
			line = append(line, rest[:i]...)
			rest = rest[i+1:]
			if !helloed {
				if herr := s.hello(pc, line); herr != nil {
					s.owed.mark(-1)
					select {
					case s.helloErr <- herr:
					default:
					}
					pc.c.Close()
					return
				}
				helloed = true
			} else {
				s.submit(pc, bytes.Clone(line))
			}
			line = line[:0]
		}
		if len(line) > maxLine {
			s.submit(pc, nil) // a request too long: its do fails the process
			line = nil
			err = errors.New("too long")
		}
		s.owed.mark(-1)
		if err != nil {
			return
		}
	}
}

// hello checks a connection's first line: the hello, with the token and the protocol version.
func (s *session) hello(pc *pconn, line []byte) error {
	c := pc.c
	var req request
	if err := json.Unmarshal(line, &req); err != nil || req.Op != "hello" {
		writeLine(c, response{Error: &protoErr{Code: codeBadRequest, Message: "the first request must be a hello"}})
		return fmt.Errorf("the command's first request was not a hello: %.80q", line)
	}
	if subtle.ConstantTimeCompare([]byte(req.Token), []byte(s.token)) != 1 {
		writeLine(c, response{Error: &protoErr{Code: codeBadRequest, Message: "wrong token"}})
		return errors.New("the command's hello had the wrong token (pass " + EnvToken + " on)")
	}
	if req.V != Version {
		msg := fmt.Sprintf("the command speaks protocol version %d; this chaoskit speaks version %d", req.V, Version)
		writeLine(c, response{ID: req.ID, Error: &protoErr{Code: codeVersion, Message: msg}})
		return errors.New(msg)
	}
	proc, worker := s.env.Process(), s.env.Worker()
	s.connMu.Lock()
	s.conns[pc] = true
	s.connMu.Unlock()
	writeLine(c, response{ID: req.ID, OK: true, V: Version, Process: &proc, Attempt: &proc, Worker: &worker, StateDir: s.stateDir})
	return nil
}

// submit submits one request line of pc for admission: its key is the request's canonical
// form, its reply goes back on pc with the request's id.
func (s *session) submit(pc *pconn, line []byte) {
	var req request
	var fail error
	key := Key{Args: string(line)} // a malformed request sorts first, by its bytes
	switch {
	case line == nil:
		fail = fmt.Errorf("the command sent a request longer than %d bytes", maxLine)
	default:
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			fail = fmt.Errorf("the command sent a malformed request (%v): %.120q", err, line)
			break
		}
		key = requestKey(&req)
		pc.mu.Lock()
		switch {
		case pc.flight[req.ID]:
			fail = fmt.Errorf("the command sent request id %d while a request with that id was in flight on its connection: pipelined requests need distinct ids", req.ID)
		case req.ID == 0 && len(pc.flight) > 0:
			fail = errors.New("the command sent a request without an id while another was in flight on its connection: pipelined requests need ids")
		default:
			pc.flight[req.ID] = true
		}
		pc.mu.Unlock()
	}
	submit := s.adm.submit
	if fail == nil && (req.Op == "now" || req.Op == "messages" || req.Op == "random") {
		submit = func(_ Key, do Do, deliver func(any)) bool { return s.adm.submitRead(do, deliver) }
	}
	submit(key, func(ctx context.Context, _ *harness.Env) any {
		if fail != nil {
			return reqReply{resp: response{Error: &protoErr{Code: codeBadRequest, Message: "malformed request"}}, fail: fail}
		}
		resp, err := s.do(ctx, &req)
		if err != nil {
			resp = response{Error: &protoErr{Code: codeBadRequest, Message: err.Error()}}
		}
		return reqReply{resp: resp, fail: err}
	}, func(reply any) {
		a := reply.(reqReply)
		a.resp.ID = req.ID
		a.resp.OK = a.resp.Error == nil
		pc.mu.Lock()
		delete(pc.flight, req.ID)
		pc.mu.Unlock()
		pc.write(a.resp)
		if a.fail != nil && s.failed == nil {
			s.failed = a.fail
		}
	})
}

// reqReply is a request's reply: the response, and the error that fails the process, if any.
type reqReply struct {
	resp response
	fail error
}

// requestKey is a request's place among those admitted with it (PROTOCOL.md, "Requests made at
// once"): its op, what it acts on, its key, then the whole request's canonical JSON without its
// id.
func requestKey(req *request) Key {
	name := req.Tool
	for _, n := range []string{req.Purpose, req.Topic, req.Name, req.Label} {
		if name == "" {
			name = n
		}
	}
	if req.Lease != nil && name == "" {
		name = req.Lease.Name
	}
	r := *req
	r.ID = 0
	b, _ := json.Marshal(r)
	args, err := canonical(b)
	if err != nil {
		args = b
	}
	return Key{Op: req.Op, Name: name, Key: req.Key, Args: string(args)}
}

// endAccepting lets accept end once no connection is pending: the command has exited.
func (s *session) endAccepting() { s.closing.Store(true) }

// close closes the socket and the connections.
func (s *session) close() {
	s.ln.Close()
	s.connMu.Lock()
	for pc := range s.conns {
		pc.c.Close()
	}
	s.connMu.Unlock()
}

// peersGone reports whether the command has closed every connection whose hello was accepted.
func (s *session) peersGone() bool {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	for pc := range s.conns {
		if !peerClosed(pc.c) {
			return false
		}
	}
	return true
}

// outcome is how the session ended once the command has exited and its connections closed: a
// refused hello, a refusal, or the result it sent with done.
func (s *session) outcome() (any, error) {
	select {
	case err := <-s.helloErr: // refused while the loop was busy, then the connection closed
		return nil, err
	default:
	}
	if s.refused != "" {
		return nil, fmt.Errorf("%s: %w", s.refused, harness.ErrRefused)
	}
	return s.result, nil
}

// connected reports whether a hello was accepted.
func (s *session) connected() bool {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	return len(s.conns) > 0
}

// do performs a request: the Env call it stands for. It returns the response, or an error for a
// request that fails the process.
func (s *session) do(ctx context.Context, req *request) (response, error) {
	env := s.env
	if beat := req.Op != "now" && req.Op != "messages" && req.Op != "random" && req.Op != "refuse" && req.Op != "done"; beat {
		s.idle = 0
		if err := s.atBeat(); err != nil {
			return response{}, err
		}
	} else if s.idle++; s.idle > maxIdle {
		return response{}, fmt.Errorf("the command made %d requests in a row without a beat (a busy loop? wait with sleep or await)", maxIdle)
	}
	var resp response
	switch req.Op {
	case "call":
		if !s.declared(req.Tool) {
			return resp, fmt.Errorf("call to undeclared tool %q (declare it with --tool or Target.ToolList)", req.Tool)
		}
		args, err := canonical(req.Args)
		if err != nil {
			return resp, fmt.Errorf("call to %s: args: %w", req.Tool, err)
		}
		cctx, cancel := s.deadline(ctx, req.TimeoutMs)
		defer cancel()
		r, err := env.Call(cctx, harness.Call{Tool: req.Tool, Key: req.Key, Ref: req.Ref, Args: args, Fence: req.Fence})
		if err != nil {
			resp.Error = worldError(err)
			if resp.Error.Code == codeDeadline {
				resp.Error.Code = codeTimeout // a call past its deadline may still be applied
			}
			return resp, nil
		}
		resp.ReplyID, resp.Replayed, resp.Topic = r.ID, r.Replayed, r.Topic
	case "lookup":
		if !s.declared(req.Tool) {
			return resp, fmt.Errorf("lookup in undeclared tool %q (declare it with --tool or Target.ToolList)", req.Tool)
		}
		if req.Ref == "" {
			return resp, errors.New("lookup without a ref")
		}
		cctx, cancel := s.deadline(ctx, req.TimeoutMs)
		defer cancel()
		r, found, err := env.Lookup(cctx, req.Tool, req.Ref)
		if err != nil {
			resp.Error = worldError(err)
			return resp, nil
		}
		resp.ReplyID, resp.Found = r.ID, &found
	case "refuse":
		if req.Reason == "" {
			return resp, errors.New("refuse without a reason")
		}
		s.refused = req.Reason
	case "model":
		if req.Purpose == "" {
			return resp, errors.New("model call without a purpose")
		}
		latency, err := dur("latency_ms", req.LatencyMs)
		if err != nil {
			return resp, err
		}
		cctx, cancel := s.deadline(ctx, req.TimeoutMs)
		defer cancel()
		text, err := env.Model(cctx, harness.ModelCall{Purpose: req.Purpose, Reply: req.Reply, Latency: latency})
		if err != nil {
			resp.Error = worldError(err)
			return resp, nil
		}
		resp.Text = text
	case "now":
		now := ms(env.Now())
		resp.NowMs = &now
	case "sleep":
		d, err := dur("ms", req.Ms)
		if err != nil {
			return resp, err
		}
		if err := env.Sleep(ctx, d); err != nil {
			resp.Error = worldError(err)
		}
	case "await", "messages":
		if req.Topic == "" {
			return resp, fmt.Errorf("%s without a topic", req.Op)
		}
		var msgs []harness.Message
		if req.Op == "messages" {
			msgs = env.Messages(req.Topic)
		} else {
			cctx, cancel := s.deadline(ctx, req.TimeoutMs)
			defer cancel()
			var err error
			if msgs, err = env.Await(cctx, req.Topic); err != nil {
				resp.Error = worldError(err)
				return resp, nil
			}
		}
		list := []messageJSON{}
		for _, m := range msgs {
			list = append(list, messageJSON{Topic: m.Topic, Body: m.Body, Seq: m.Seq})
		}
		resp.Messages = &list
	case "acquire", "renew", "release":
		return s.lease(ctx, req)
	case "mark":
		if req.Label == "" {
			return resp, errors.New("mark without a label")
		}
		env.Mark(req.Label)
	case "random":
		v := env.Rand().Uint64()
		resp.Value = &v
	case "done":
		if s.sentDone {
			return resp, errors.New("done sent twice")
		}
		res, err := decode(req.Result)
		if err != nil {
			return resp, fmt.Errorf("done: the result is not JSON: %w", err)
		}
		if s.result, err = s.t.ignore(res); err != nil {
			return resp, err
		}
		s.sentDone = true
	case "hello":
		return resp, errors.New("hello sent twice")
	default:
		return resp, fmt.Errorf("unknown operation %q", req.Op)
	}
	return resp, nil
}

// lease performs acquire, renew or release.
func (s *session) lease(ctx context.Context, req *request) (response, error) {
	var resp response
	var l harness.Lease
	var err error
	switch req.Op {
	case "acquire":
		if req.Name == "" || req.TTLMs <= 0 {
			return resp, errors.New("acquire needs a name and a positive ttl_ms")
		}
		ttl, derr := dur("ttl_ms", req.TTLMs)
		if derr != nil {
			return resp, derr
		}
		l, err = s.env.Acquire(ctx, req.Name, ttl)
	default:
		if req.Lease == nil || req.Lease.Name == "" {
			return resp, fmt.Errorf("%s needs the lease acquire returned", req.Op)
		}
		held := harness.Lease{Name: req.Lease.Name, Holder: req.Lease.Holder, Token: req.Lease.Token}
		if req.Op == "release" {
			err = s.env.Release(ctx, held)
			break
		}
		if req.TTLMs <= 0 {
			return resp, errors.New("renew needs a positive ttl_ms")
		}
		ttl, derr := dur("ttl_ms", req.TTLMs)
		if derr != nil {
			return resp, derr
		}
		l, err = s.env.Renew(ctx, held, ttl)
	}
	if err != nil {
		resp.Error = worldError(err)
	} else if req.Op != "release" {
		resp.Lease = leaseOf(l)
	}
	return resp, nil
}

// deadline returns ctx with a virtual deadline ms from now, if ms is positive (at most a year:
// a longer one is as good as none).
func (s *session) deadline(ctx context.Context, ms int64) (context.Context, context.CancelFunc) {
	if ms <= 0 {
		return ctx, func() {}
	}
	return s.env.WithTimeout(ctx, time.Duration(min(ms, maxMs))*time.Millisecond)
}

func (s *session) declared(tool string) bool {
	for _, t := range s.t.ToolList {
		if t.Name == tool {
			return true
		}
	}
	return false
}

// write writes a response to the connection, one line at a time.
func (pc *pconn) write(r response) {
	pc.wmu.Lock()
	defer pc.wmu.Unlock()
	writeLine(pc.c, r)
}

func writeLine(c net.Conn, r response) {
	b, _ := json.Marshal(r) // a response holds only encodable values
	c.Write(append(b, '\n'))
}
