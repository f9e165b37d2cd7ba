package process

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/chaoskit/chaoskit/adapters/process/fusefs"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/spf13/afero"
)

// maxLine bounds a request line.
const maxLine = 16 << 20

// maxIdle bounds the requests a process may make in a row without a beat (reading the clock,
// polling messages): past it, the process is failed as flooding rather than left to spin.
const maxIdle = 10_000

// proc is one process of a Target: the child, its socket, its state directory.
type proc struct {
	t        *Target
	env      *harness.Env
	disk     afero.Fs // the disk itself, outside the fault layer: what Plain copies in and out
	dir      string   // this process's own directory, under the root
	state    string   // the state directory the child sees
	sock     string
	token    string
	ln       *net.UnixListener
	child    *child
	srv      *fusefs.Server // the state directory's mount (FUSE)
	fsops    chan fsop      // the mount's filesystem operations, for the serve loop to run
	dead     chan struct{}  // closed once the process is stopping: the mount runs nothing more
	lines    chan []byte    // the connection's request lines; closed at its end
	conn     net.Conn       // set once the hello is accepted
	connMu   sync.Mutex
	helloErr chan error // a refused hello, for the serve loop to fail the process with

	result   any
	sentDone bool
	refused  string // the reason of a refuse request
	idle     int
	fsOps    int // the mount's operations run

	stopOnce sync.Once
	stopErr  error
}

// start prepares the process's directory and socket and starts the command.
func start(t *Target, env *harness.Env) (*proc, error) {
	root, err := root()
	if err != nil {
		return nil, err
	}
	p := &proc{t: t, env: env, disk: unwrap(env.FS()), lines: make(chan []byte, 16), helloErr: make(chan error, 1),
		fsops: make(chan fsop), dead: make(chan struct{})}
	if p.dir, err = os.MkdirTemp(root, "p"); err != nil {
		return nil, fmt.Errorf("process: %w", err)
	}
	p.state, p.sock = filepath.Join(p.dir, "state"), filepath.Join(p.dir, "sock")
	p.token = newToken()
	if err := p.prepare(); err != nil {
		os.RemoveAll(p.dir)
		return nil, err
	}
	if p.ln, err = net.ListenUnix("unix", &net.UnixAddr{Name: p.sock, Net: "unix"}); err != nil {
		p.unmount()
		p.cleanup()
		return nil, fmt.Errorf("process: listening on %s: %w", p.sock, err)
	}
	vars := []string{EnvSocket + "=" + p.sock, EnvProtocol + "=" + strconv.Itoa(Version),
		EnvStateDir + "=" + p.state, EnvAttempt + "=" + strconv.Itoa(env.Attempt()), EnvWorker + "=" + strconv.Itoa(env.Worker())}
	cmd := command{argv: t.Argv, dir: t.Dir, env: append(append([]string(nil), t.Env...), vars...), name: filepath.Base(p.dir), marker: p.token}
	if p.child, err = startChild(cmd); err != nil { // the token is the marker: CHAOSKIT_TOKEN
		p.ln.Close()
		p.unmount()
		p.cleanup()
		return nil, err
	}
	go p.accept()
	return p, nil
}

// newToken returns a new random token.
func newToken() string {
	var tok [16]byte
	rand.Read(tok[:])
	return hex.EncodeToString(tok[:])
}

// unwrap returns the filesystem under the fault layer's, for copying outside any beat.
func unwrap(fsys afero.Fs) afero.Fs {
	if f, ok := fsys.(*faults.FS); ok {
		return f.Unwrap()
	}
	return fsys
}

// prepare makes the state directory: the disk mounted (FUSE), or a copy of it (Plain).
func (p *proc) prepare() error {
	if err := os.Mkdir(p.state, 0o700); err != nil {
		return fmt.Errorf("process: %w", err)
	}
	if p.t.Disk == FUSE {
		fsys := p.env.FS() // every operation a beat
		if p.t.Beats == CallBeats {
			fsys = p.disk // no operation a beat: storage faults fire at requests
		}
		var err error
		// The FUSE helper serves the mount, and forwards each request here, where it runs on
		// the serve loop: if chaoskit dies, the helper's connection ends and it fails what is
		// left, so that nothing ever waits on a dead process.
		p.srv, err = mountFUSE(p.state, fsys, fusefs.Options{Do: p.onLoop, Now: p.env.Now})
		if err != nil {
			return fmt.Errorf("process: mounting the disk on %s: %w", p.state, err)
		}
		return nil
	}
	if err := copyIn(p.disk, p.state); err != nil {
		return fmt.Errorf("process: copying the disk into %s: %w", p.state, err)
	}
	return nil
}

// fsop is one filesystem operation of the mount, for the serve loop to run.
type fsop struct {
	op   func()
	done chan struct{}
}

// onLoop runs op, a filesystem operation of the mount, on the goroutine that runs the process
// (the serve loop), where every Env call is made, and returns when it has run. If the process
// is stopping, or op crashed it (ending the serve loop's goroutine), onLoop returns without
// waiting: the mount answers EIO.
func (p *proc) onLoop(op func()) {
	o := fsop{op: op, done: make(chan struct{})}
	select {
	case p.fsops <- o:
	case <-p.dead:
		return
	}
	select {
	case <-o.done:
	case <-p.dead:
	}
}

// accept takes the child's connection, and refuses any other. It ends when the listener is
// closed or past its deadline (set once the child has exited, so that a connection the child
// made just before is still taken). Whoever ends last of it and the connection's reader closes
// p.lines.
func (p *proc) accept() {
	reading := false
	for {
		c, err := p.ln.AcceptUnix()
		if err != nil {
			if !reading {
				close(p.lines)
			}
			return
		}
		if reading {
			writeLine(c, response{Error: &protoErr{Code: codeBadRequest, Message: "one connection per process: this one already has its connection"}})
			c.Close()
			continue
		}
		reading = true
		go p.read(c)
	}
}

// read reads the hello, then hands each request line to the serve loop, and closes p.lines
// when the connection ends.
func (p *proc) read(c net.Conn) {
	defer close(p.lines)
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	if !sc.Scan() {
		c.Close()
		return
	}
	if err := p.hello(c, sc.Bytes()); err != nil {
		p.helloErr <- err
		c.Close()
		return
	}
	for sc.Scan() {
		p.lines <- bytes.Clone(sc.Bytes())
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		p.lines <- nil // a request too long: the serve loop fails the process
	}
}

// hello checks a connection's first line: the hello, with the token and the protocol version.
func (p *proc) hello(c net.Conn, line []byte) error {
	var req request
	if err := json.Unmarshal(line, &req); err != nil || req.Op != "hello" {
		writeLine(c, response{Error: &protoErr{Code: codeBadRequest, Message: "the first request must be a hello"}})
		return fmt.Errorf("the command's first request was not a hello: %.80q", line)
	}
	if subtle.ConstantTimeCompare([]byte(req.Token), []byte(p.token)) != 1 {
		writeLine(c, response{Error: &protoErr{Code: codeBadRequest, Message: "wrong token"}})
		return errors.New("the command's hello had the wrong token (pass " + EnvToken + " on)")
	}
	if req.V != Version {
		msg := fmt.Sprintf("the command speaks protocol version %d; this chaoskit speaks version %d", req.V, Version)
		writeLine(c, response{ID: req.ID, Error: &protoErr{Code: codeVersion, Message: msg}})
		return errors.New(msg)
	}
	attempt, worker := p.env.Attempt(), p.env.Worker()
	p.connMu.Lock()
	p.conn = c
	p.connMu.Unlock()
	writeLine(c, response{ID: req.ID, OK: true, V: Version, Attempt: &attempt, Worker: &worker, StateDir: p.state})
	return nil
}

// serve runs the process: it answers the command's requests, one at a time and in order, until
// the command has exited and its connection is closed.
func (p *proc) serve(ctx context.Context) (any, error) {
	lines, exited := p.lines, p.child.exited
	for lines != nil || exited != nil {
		select {
		case line, ok := <-lines:
			if !ok {
				lines = nil
				continue
			}
			if err := p.handle(ctx, line); err != nil {
				p.stop()
				return nil, err
			}
		case o := <-p.fsops:
			p.fsOps++
			o.op()
			close(o.done)
		case err := <-p.helloErr:
			p.stop()
			return nil, err
		case <-exited:
			exited = nil
			p.ln.SetDeadline(time.Now()) // no connection will come: let accept end
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	select {
	case err := <-p.helloErr: // refused while the loop was busy, then the connection closed
		return nil, err
	default:
	}
	if p.refused != "" {
		return nil, fmt.Errorf("%s: %w", p.refused, harness.ErrRefused)
	}
	if err := p.child.err(); err != nil {
		return nil, err
	}
	if p.env.Attempt() == 0 && !p.connected() && p.fsOps == 0 {
		return nil, errNoConnection
	}
	return p.result, nil
}

// errNoConnection fails a first process that exits without having connected or touched its
// FUSE disk: chaoskit saw nothing it did (a program that is not a harness, or one that forgot
// its client). A command that only works on files is a target on a FUSE disk, whose every file
// operation is a beat; later processes may exit at once on their own (a restart that finds the
// work done).
var errNoConnection = errors.New("the command exited without connecting to chaoskit: a harness connects to $" + EnvSocket +
	" with a client of the protocol (PROTOCOL.md: Python ck = chaoskit.connect(), JavaScript await connect(), Go client.Connect()), " +
	"makes its requests through it (call, model, sleep, mark after each durable step) and ends with done")

// connected reports whether the command's hello was accepted.
func (p *proc) connected() bool {
	p.connMu.Lock()
	defer p.connMu.Unlock()
	return p.conn != nil
}

// handle answers one request. It returns an error for a request that fails the process.
func (p *proc) handle(ctx context.Context, line []byte) error {
	if line == nil {
		return fmt.Errorf("the command sent a request longer than %d bytes", maxLine)
	}
	var req request
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		p.reply(response{Error: &protoErr{Code: codeBadRequest, Message: "malformed request: " + err.Error()}})
		return fmt.Errorf("the command sent a malformed request (%v): %.120q", err, line)
	}
	resp, fail := p.do(ctx, &req)
	if fail != nil {
		resp = response{Error: &protoErr{Code: codeBadRequest, Message: fail.Error()}}
	}
	resp.ID = req.ID
	resp.OK = resp.Error == nil
	p.reply(resp)
	return fail
}

// do performs a request: the Env call it stands for. It returns the response, or an error for a
// request that fails the process.
func (p *proc) do(ctx context.Context, req *request) (response, error) {
	env := p.env
	if beat := req.Op != "now" && req.Op != "messages" && req.Op != "random" && req.Op != "refuse" && req.Op != "done"; beat {
		p.idle = 0
		if p.srv == nil { // a plain disk: the disk holds at this beat what a kill here leaves
			if err := syncOut(p.state, p.disk); err != nil {
				return response{}, err
			}
		}
	} else if p.idle++; p.idle > maxIdle {
		return response{}, fmt.Errorf("the command made %d requests in a row without a beat (a busy loop? wait with sleep or await)", maxIdle)
	}
	var resp response
	switch req.Op {
	case "call":
		if !p.declared(req.Tool) {
			return resp, fmt.Errorf("call to undeclared tool %q (declare it with --tool or Target.ToolList)", req.Tool)
		}
		args, err := canonical(req.Args)
		if err != nil {
			return resp, fmt.Errorf("call to %s: args: %w", req.Tool, err)
		}
		cctx, cancel := p.deadline(ctx, req.TimeoutMs)
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
		if !p.declared(req.Tool) {
			return resp, fmt.Errorf("lookup in undeclared tool %q (declare it with --tool or Target.ToolList)", req.Tool)
		}
		if req.Ref == "" {
			return resp, errors.New("lookup without a ref")
		}
		cctx, cancel := p.deadline(ctx, req.TimeoutMs)
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
		p.refused = req.Reason
	case "model":
		if req.Purpose == "" {
			return resp, errors.New("model call without a purpose")
		}
		latency, err := dur("latency_ms", req.LatencyMs)
		if err != nil {
			return resp, err
		}
		cctx, cancel := p.deadline(ctx, req.TimeoutMs)
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
			cctx, cancel := p.deadline(ctx, req.TimeoutMs)
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
		return p.lease(ctx, req)
	case "mark":
		if req.Label == "" {
			return resp, errors.New("mark without a label")
		}
		env.Mark(req.Label)
	case "random":
		v := env.Rand().Uint64()
		resp.Value = &v
	case "done":
		if p.sentDone {
			return resp, errors.New("done sent twice")
		}
		res, err := decode(req.Result)
		if err != nil {
			return resp, fmt.Errorf("done: the result is not JSON: %w", err)
		}
		if p.result, err = p.t.ignore(res); err != nil {
			return resp, err
		}
		p.sentDone = true
	case "hello":
		return resp, errors.New("hello sent twice")
	default:
		return resp, fmt.Errorf("unknown operation %q", req.Op)
	}
	return resp, nil
}

// lease performs acquire, renew or release.
func (p *proc) lease(ctx context.Context, req *request) (response, error) {
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
		l, err = p.env.Acquire(ctx, req.Name, ttl)
	default:
		if req.Lease == nil || req.Lease.Name == "" {
			return resp, fmt.Errorf("%s needs the lease acquire returned", req.Op)
		}
		held := harness.Lease{Name: req.Lease.Name, Holder: req.Lease.Holder, Token: req.Lease.Token}
		if req.Op == "release" {
			err = p.env.Release(ctx, held)
			break
		}
		if req.TTLMs <= 0 {
			return resp, errors.New("renew needs a positive ttl_ms")
		}
		ttl, derr := dur("ttl_ms", req.TTLMs)
		if derr != nil {
			return resp, derr
		}
		l, err = p.env.Renew(ctx, held, ttl)
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
func (p *proc) deadline(ctx context.Context, ms int64) (context.Context, context.CancelFunc) {
	if ms <= 0 {
		return ctx, func() {}
	}
	return p.env.WithTimeout(ctx, time.Duration(min(ms, maxMs))*time.Millisecond)
}

func (p *proc) declared(tool string) bool {
	for _, t := range p.t.ToolList {
		if t.Name == tool {
			return true
		}
	}
	return false
}

// reply writes a response to the connection.
func (p *proc) reply(r response) {
	p.connMu.Lock()
	c := p.conn
	p.connMu.Unlock()
	if c != nil {
		writeLine(c, r)
	}
}

func writeLine(c net.Conn, r response) {
	b, _ := json.Marshal(r) // a response holds only encodable values
	c.Write(append(b, '\n'))
}

// stop ends the process, once: it kills the command's process group and waits for it, closes
// the socket, unmounts the state directory (FUSE) or copies it back to the disk (Plain), and
// removes the process's directory. It runs when Run returns and, through Env.AtEnd, when a
// fault crashes the process, before the crash reaches the disk.
func (p *proc) stop() {
	p.stopOnce.Do(func() {
		close(p.dead) // first: a request the dying command left on the mount fails, and it can die
		p.child.kill()
		p.ln.Close()
		p.connMu.Lock()
		if p.conn != nil {
			p.conn.Close()
		}
		p.connMu.Unlock()
		if p.srv != nil {
			if err := p.srv.Unmount(); err != nil {
				p.stopErr = fmt.Errorf("process: %w", err)
			}
		} else if err := syncOut(p.state, p.disk); err != nil {
			p.stopErr = err
		}
		p.cleanup()
	})
}

// unmount unmounts the state directory, if it is mounted, when the process could not start.
func (p *proc) unmount() {
	if p.srv != nil {
		close(p.dead)
		p.srv.Unmount()
	}
}

// cleanup removes the process's directory, unless something is still mounted in it (an unmount
// failed): the reaper, which aborts and detaches mounts first, removes it then.
func (p *proc) cleanup() {
	if err := removeUnmounted(p.dir); err != nil && p.stopErr == nil {
		p.stopErr = err
	}
}

// removeUnmounted removes the directory dir, unless a FUSE disk is still mounted under it.
func removeUnmounted(dir string) error {
	if left, err := fusefs.Mounts(dir); len(left) > 0 || err != nil {
		return fmt.Errorf("process: %s is left for the reaper: still mounted: %v %v", dir, left, err)
	}
	return os.RemoveAll(dir)
}

// canonical re-encodes a call's arguments with sorted keys, so that the same effect written
// with its keys in another order is the same effect.
func canonical(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 {
		return json.RawMessage("null"), nil
	}
	v, err := decode(raw)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(v)
	return b, err
}

// decode decodes JSON, keeping numbers as they were written.
func decode(raw json.RawMessage) (any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value")
	}
	return v, nil
}
