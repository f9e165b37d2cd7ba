package process

import (
	"bufio"
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/chaoskit/chaoskit/harness"
)

// maxLine bounds a request line.
const maxLine = 16 << 20

// maxIdle bounds the requests a process may make in a row without a beat (reading the clock,
// polling messages): past it, the process is failed as flooding rather than left to spin.
const maxIdle = 10_000

// session is the protocol of one process (PROTOCOL.md): its socket, the connection the command
// makes, and the requests it sends, each the Env call it stands for.
type session struct {
	t        *Target
	env      *harness.Env
	stateDir string       // what the hello tells the command
	atBeat   func() error // run before every request that is a beat
	sock     string
	token    string
	ln       *net.UnixListener
	lines    chan []byte // the connection's request lines; closed at its end
	connMu   sync.Mutex
	conn     net.Conn   // set once the hello is accepted
	helloErr chan error // a refused hello, for the serve loop to fail the process with

	result   any
	sentDone bool
	refused  string // the reason of a refuse request
	idle     int
}

// listen makes the session of a process of t, listening on the socket sock, with token.
func listen(t *Target, env *harness.Env, sock, token, stateDir string, atBeat func() error) (*session, error) {
	s := &session{t: t, env: env, stateDir: stateDir, atBeat: atBeat, sock: sock, token: token,
		lines: make(chan []byte, 16), helloErr: make(chan error, 1)}
	var err error
	if s.ln, err = net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"}); err != nil {
		return nil, fmt.Errorf("process: listening on %s: %w", sock, err)
	}
	go s.accept()
	return s, nil
}

// accept takes the child's connection, and refuses any other. It ends when the listener is
// closed or past its deadline (set once the child has exited, so that a connection the child
// made just before is still taken). Whoever ends last of it and the connection's reader closes
// s.lines.
func (s *session) accept() {
	reading := false
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			if !reading {
				close(s.lines)
			}
			return
		}
		if reading {
			writeLine(c, response{Error: &protoErr{Code: codeBadRequest, Message: "one connection per process: this one already has its connection"}})
			c.Close()
			continue
		}
		reading = true
		go s.read(c)
	}
}

// read reads the hello, then hands each request line to the serve loop, and closes s.lines
// when the connection ends.
func (s *session) read(c net.Conn) {
	defer close(s.lines)
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	if !sc.Scan() {
		c.Close()
		return
	}
	if err := s.hello(c, sc.Bytes()); err != nil {
		s.helloErr <- err
		c.Close()
		return
	}
	for sc.Scan() {
		s.lines <- bytes.Clone(sc.Bytes())
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		s.lines <- nil // a request too long: the serve loop fails the process
	}
}

// hello checks a connection's first line: the hello, with the token and the protocol version.
func (s *session) hello(c net.Conn, line []byte) error {
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
	s.conn = c
	s.connMu.Unlock()
	writeLine(c, response{ID: req.ID, OK: true, V: Version, Process: &proc, Attempt: &proc, Worker: &worker, StateDir: s.stateDir})
	return nil
}

// endAccepting lets accept end once no connection is pending: the command has exited.
func (s *session) endAccepting() { s.ln.SetDeadline(time.Now()) }

// close closes the socket and the connection.
func (s *session) close() {
	s.ln.Close()
	s.connMu.Lock()
	if s.conn != nil {
		s.conn.Close()
	}
	s.connMu.Unlock()
}

// outcome is how the session ended once the command has exited and its connection closed: a
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

// connected reports whether the command's hello was accepted.
func (s *session) connected() bool {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	return s.conn != nil
}

// handle answers one request. It returns an error for a request that fails the process.
func (s *session) handle(ctx context.Context, line []byte) error {
	if line == nil {
		return fmt.Errorf("the command sent a request longer than %d bytes", maxLine)
	}
	var req request
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		s.reply(response{Error: &protoErr{Code: codeBadRequest, Message: "malformed request: " + err.Error()}})
		return fmt.Errorf("the command sent a malformed request (%v): %.120q", err, line)
	}
	resp, fail := s.do(ctx, &req)
	if fail != nil {
		resp = response{Error: &protoErr{Code: codeBadRequest, Message: fail.Error()}}
	}
	resp.ID = req.ID
	resp.OK = resp.Error == nil
	s.reply(resp)
	return fail
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

// reply writes a response to the connection.
func (s *session) reply(r response) {
	s.connMu.Lock()
	c := s.conn
	s.connMu.Unlock()
	if c != nil {
		writeLine(c, r)
	}
}

func writeLine(c net.Conn, r response) {
	b, _ := json.Marshal(r) // a response holds only encodable values
	c.Write(append(b, '\n'))
}
