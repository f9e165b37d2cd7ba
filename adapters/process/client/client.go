// Package client is the Go client of chaoskit's process protocol: what a harness that runs as
// its own process (adapters/process.Target, chaoskit run --exec) uses to reach chaoskit's world
// of tools, model, time, leases and messages, and to mark its progress. It is one file with no
// dependency beyond the standard library, so that it can be copied into any module; see
// adapters/process/PROTOCOL.md for the protocol it speaks.
//
// Under chaoskit, Connect finds the socket in the environment. Each request is a beat, at which
// chaoskit may SIGKILL the process: a call then never returns. A Client is safe for concurrent
// use: each request is sent at once with an id of its own and answered by id, so requests of
// several goroutines are in flight together, and chaoskit admits them in a canonical order, the
// same in every run.
package client

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"time"
)

// Version is the protocol version the client speaks.
const Version = 1

// ErrNotUnderChaoskit is returned by Connect when the process was not started by chaoskit.
var ErrNotUnderChaoskit = errors.New("chaoskit: CHAOSKIT_SOCKET is not set: not running under chaoskit")

// Client is a connection to chaoskit.
type Client struct {
	// Process numbers the process (0 for the first, one more per process started), Worker the
	// worker it belongs to, and StateDir is the directory to keep durable state in.
	Process, Worker int
	StateDir        string
	// Attempt is Process, under its earlier name.
	//
	// Deprecated: use Process.
	Attempt int

	conn    net.Conn
	in      *bufio.Reader
	wmu     sync.Mutex // one request written at a time
	mu      sync.Mutex
	id      int64
	waiting map[int64]chan []byte // the requests in flight, by id
	broken  error                 // why the connection is unusable, once it is
}

// Connect connects to the chaoskit that started the process, as the environment names it.
func Connect() (*Client, error) {
	sock := os.Getenv("CHAOSKIT_SOCKET")
	if sock == "" {
		return nil, ErrNotUnderChaoskit
	}
	conn, err := net.Dial("unix", sock)
	if err != nil {
		return nil, fmt.Errorf("chaoskit: connecting to %s: %w", sock, err)
	}
	c := &Client{conn: conn, in: bufio.NewReaderSize(conn, 64<<10), waiting: map[int64]chan []byte{}}
	go c.read()
	var r response
	if err := c.do(request{Op: "hello", V: Version, Token: os.Getenv("CHAOSKIT_TOKEN"), Client: "go/" + strconv.Itoa(Version)}, &r); err != nil {
		conn.Close()
		return nil, err
	}
	c.Process, c.Worker, c.StateDir = r.Attempt, r.Worker, r.StateDir
	if r.Process != nil {
		c.Process = *r.Process
	}
	c.Attempt = c.Process
	return c, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Call is one call of a tool.
type Call struct {
	Tool string
	// Key is the idempotency key: a tool that honours keys applies a key once.
	Key string
	// Args say what the call does; they identify the effect (encoded as JSON).
	Args any
	// Fence is the caller's fencing token, from its Lease, for fenced tools.
	Fence uint64
	// Ref is the harness's own reference for the effect, which the tool keeps with it for ever
	// (unlike a key it may forget): Lookup finds the effect by it.
	Ref string
	// Timeout, if positive, is the call's deadline in virtual time.
	Timeout time.Duration
}

// Reply is a tool's answer.
type Reply struct {
	ID       string // what the call created
	Replayed bool   // the tool recognised the key and returned its earlier reply
	Topic    string // an asynchronous tool's completion will be posted there
}

// Call calls a tool. Its errors are *Error values: ErrTransient (not applied: retry),
// ErrAmbiguous (the reply was lost: it may have been applied), ErrTimeout (the deadline passed:
// it may still be applied), ErrFenced, ErrKeyReused (the key was first used with other
// arguments: nothing was applied; a call with other arguments needs a key of its own).
func (c *Client) Call(call Call) (Reply, error) {
	args, err := json.Marshal(call.Args)
	if err != nil {
		return Reply{}, fmt.Errorf("chaoskit: call to %s: args: %w", call.Tool, err)
	}
	var r response
	err = c.do(request{Op: "call", Tool: call.Tool, Key: call.Key, Ref: call.Ref, Args: args, Fence: call.Fence, TimeoutMs: call.Timeout.Milliseconds()}, &r)
	return Reply{ID: r.ReplyID, Replayed: r.Replayed, Topic: r.Topic}, err
}

// Lookup asks the tool for the effect applied with the reference ref (Call.Ref): found is
// false if there is none. It is read-only, and outlives the tool's memory of keys.
func (c *Client) Lookup(tool, ref string) (reply Reply, found bool, err error) {
	var r response
	err = c.do(request{Op: "lookup", Tool: tool, Ref: ref}, &r)
	return Reply{ID: r.ReplyID}, r.Found, err
}

// Refuse records that the harness refuses to go on, not knowing what is safe (an effect it
// cannot tell was applied), with the reason a person should read. Exit after it: the run ends
// there, and passes as refused.
func (c *Client) Refuse(reason string) error { return c.do(request{Op: "refuse", Reason: reason}, nil) }

// Model calls the scripted model: purpose names the logical call ("plan step 3"), reply is what
// it answers, latency how long (virtual) the answer takes, timeout (if positive) the call's
// deadline. Errors: ErrRateLimited (with RetryAfter), ErrModelServer, ErrContextLength,
// ErrDeadline.
func (c *Client) Model(purpose, reply string, latency, timeout time.Duration) (string, error) {
	var r response
	err := c.do(request{Op: "model", Purpose: purpose, Reply: reply, LatencyMs: latency.Milliseconds(), TimeoutMs: timeout.Milliseconds()}, &r)
	return r.Text, err
}

// Now returns the virtual time. It is not a beat.
func (c *Client) Now() (time.Time, error) {
	var r response
	err := c.do(request{Op: "now"}, &r)
	return time.UnixMilli(r.NowMs).UTC(), err
}

// Sleep waits d of virtual time.
func (c *Client) Sleep(d time.Duration) error {
	return c.do(request{Op: "sleep", Ms: d.Milliseconds()}, nil)
}

// Message is a message posted on a topic.
type Message struct {
	Topic string `json:"topic"`
	Body  string `json:"body"`
	Seq   int    `json:"seq"`
}

// Await waits until a message is posted on topic and returns all of the topic's messages;
// timeout, if positive, is a virtual deadline (ErrDeadline).
func (c *Client) Await(topic string, timeout time.Duration) ([]Message, error) {
	var r response
	err := c.do(request{Op: "await", Topic: topic, TimeoutMs: timeout.Milliseconds()}, &r)
	return r.Messages, err
}

// Messages returns the messages posted on topic so far. It is not a beat.
func (c *Client) Messages(topic string) ([]Message, error) {
	var r response
	err := c.do(request{Op: "messages", Topic: topic}, &r)
	return r.Messages, err
}

// Lease is a time-limited claim on a named resource; pass Token to fenced tools as Call.Fence.
type Lease struct {
	Name      string `json:"name"`
	Holder    string `json:"holder,omitempty"`
	Token     uint64 `json:"token"`
	ExpiresMs int64  `json:"expires_ms,omitempty"`
}

// Acquire takes the named lease for ttl, unless another worker holds it (ErrLeaseHeld).
func (c *Client) Acquire(name string, ttl time.Duration) (Lease, error) {
	var r response
	err := c.do(request{Op: "acquire", Name: name, TTLMs: ttl.Milliseconds()}, &r)
	return r.lease(), err
}

// Renew extends a lease by ttl from now, unless it was lost (ErrLeaseLost).
func (c *Client) Renew(l Lease, ttl time.Duration) (Lease, error) {
	var r response
	err := c.do(request{Op: "renew", Lease: &l, TTLMs: ttl.Milliseconds()}, &r)
	return r.lease(), err
}

// Release gives a lease up.
func (c *Client) Release(l Lease) error { return c.do(request{Op: "release", Lease: &l}, nil) }

// Mark declares progress: call it right after a step has become durable, with a label unique to
// the step.
func (c *Client) Mark(label string) error { return c.do(request{Op: "mark", Label: label}, nil) }

// Random returns a number from the process's seeded random source. It is not a beat.
func (c *Client) Random() (uint64, error) {
	var r response
	err := c.do(request{Op: "random"}, &r)
	return r.Value, err
}

// Done sends the run's result, which the oracle compares with the golden run's. Exit with
// status 0 after it.
func (c *Client) Done(result any) error {
	b, err := json.Marshal(result)
	if err != nil {
		return fmt.Errorf("chaoskit: done: result: %w", err)
	}
	return c.do(request{Op: "done", Result: b}, nil)
}

// Error is an error chaoskit answered a request with. errors.Is matches it against the Err
// values by code.
type Error struct {
	Code       string
	Message    string
	RetryAfter time.Duration // ErrRateLimited: when to retry
}

func (e *Error) Error() string { return "chaoskit: " + e.Message }

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// The errors chaoskit's world answers with, by code.
var (
	ErrTransient     = &Error{Code: "transient", Message: "the tool failed before applying the call: retry"}
	ErrAmbiguous     = &Error{Code: "ambiguous", Message: "the reply was lost: the call may have been applied"}
	ErrTimeout       = &Error{Code: "timeout", Message: "the call's deadline passed: it may still be applied"}
	ErrFenced        = &Error{Code: "fenced", Message: "the tool has seen a newer fencing token"}
	ErrKeyReused     = &Error{Code: "key_reused", Message: "the call's key was first used with other arguments"}
	ErrLeaseHeld     = &Error{Code: "lease_held", Message: "another worker holds the lease"}
	ErrLeaseLost     = &Error{Code: "lease_lost", Message: "the lease expired or was taken over"}
	ErrRateLimited   = &Error{Code: "rate_limited", Message: "the model is rate limited"}
	ErrModelServer   = &Error{Code: "model_server", Message: "the model failed (500)"}
	ErrContextLength = &Error{Code: "context_length", Message: "the context is too long"}
	ErrDeadline      = &Error{Code: "deadline", Message: "the deadline passed"}
	ErrBadRequest    = &Error{Code: "bad_request", Message: "chaoskit refused the request"}
	ErrVersion       = &Error{Code: "version", Message: "chaoskit speaks another protocol version"}
)

type request struct {
	ID        int64           `json:"id"`
	Op        string          `json:"op"`
	V         int             `json:"v,omitempty"`
	Token     string          `json:"token,omitempty"`
	Client    string          `json:"client,omitempty"`
	Tool      string          `json:"tool,omitempty"`
	Key       string          `json:"key,omitempty"`
	Ref       string          `json:"ref,omitempty"`
	Args      json.RawMessage `json:"args,omitempty"`
	Fence     uint64          `json:"fence,omitempty"`
	TimeoutMs int64           `json:"timeout_ms,omitempty"`
	Purpose   string          `json:"purpose,omitempty"`
	Reply     string          `json:"reply,omitempty"`
	LatencyMs int64           `json:"latency_ms,omitempty"`
	Ms        int64           `json:"ms,omitempty"`
	Topic     string          `json:"topic,omitempty"`
	Name      string          `json:"name,omitempty"`
	TTLMs     int64           `json:"ttl_ms,omitempty"`
	Lease     *Lease          `json:"lease,omitempty"`
	Label     string          `json:"label,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Reason    string          `json:"reason,omitempty"`
}

type response struct {
	ID    int64 `json:"id"`
	OK    bool  `json:"ok"`
	Error *struct {
		Code         string `json:"code"`
		Message      string `json:"message"`
		RetryAfterMs int64  `json:"retry_after_ms"`
	} `json:"error"`
	Process  *int      `json:"process"`
	Attempt  int       `json:"attempt"` // Process, from a chaoskit that sends only its earlier name
	Worker   int       `json:"worker"`
	StateDir string    `json:"state_dir"`
	ReplyID  string    `json:"reply_id"`
	Replayed bool      `json:"replayed"`
	Topic    string    `json:"topic"`
	Found    bool      `json:"found"`
	Text     string    `json:"text"`
	NowMs    int64     `json:"now_ms"`
	Messages []Message `json:"messages"`
	Lease    *Lease    `json:"lease"`
	Value    uint64    `json:"value"`
}

func (r *response) lease() Lease {
	if r.Lease == nil {
		return Lease{}
	}
	return *r.Lease
}

// do sends a request and reads its response into out (if not nil).
func (c *Client) do(req request, out *response) error {
	ch := make(chan []byte, 1)
	c.mu.Lock()
	if c.broken != nil {
		err := c.broken
		c.mu.Unlock()
		return fmt.Errorf("chaoskit: %s: %w", req.Op, err)
	}
	c.id++
	req.ID = c.id
	c.waiting[req.ID] = ch
	c.mu.Unlock()
	b, err := json.Marshal(req)
	if err == nil {
		c.wmu.Lock()
		_, err = c.conn.Write(append(b, '\n'))
		c.wmu.Unlock()
	}
	if err != nil {
		c.mu.Lock()
		delete(c.waiting, req.ID)
		c.mu.Unlock()
		return fmt.Errorf("chaoskit: %s: %w", req.Op, err)
	}
	line, ok := <-ch
	if !ok {
		c.mu.Lock()
		err := c.broken
		c.mu.Unlock()
		return fmt.Errorf("chaoskit: %s: no response: %w", req.Op, err)
	}
	var r response
	if err := json.Unmarshal(line, &r); err != nil {
		return fmt.Errorf("chaoskit: %s: malformed response: %w", req.Op, err)
	}
	if out != nil {
		*out = r
	}
	if !r.OK {
		if r.Error == nil {
			return &Error{Code: "bad_request", Message: req.Op + ": refused without a reason"}
		}
		return &Error{Code: r.Error.Code, Message: r.Error.Message, RetryAfter: time.Duration(r.Error.RetryAfterMs) * time.Millisecond}
	}
	return nil
}

// read hands each response line to the request whose id it carries (a line without an id to
// the one request in flight), until the connection ends; then every request waiting fails.
func (c *Client) read() {
	for {
		line, err := c.in.ReadBytes('\n')
		if err != nil {
			c.fail(err)
			return
		}
		var head struct {
			ID int64 `json:"id"`
		}
		json.Unmarshal(line, &head)
		c.mu.Lock()
		id := head.ID
		if id == 0 && len(c.waiting) == 1 {
			for k := range c.waiting {
				id = k
			}
		}
		ch := c.waiting[id]
		delete(c.waiting, id)
		c.mu.Unlock()
		if ch == nil {
			c.fail(fmt.Errorf("a response (id %d) to no request in flight", head.ID))
			return
		}
		ch <- line
	}
}

// fail makes the client unusable for err's reason, failing every request waiting.
func (c *Client) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken == nil {
		c.broken = err
	}
	for id, ch := range c.waiting {
		close(ch)
		delete(c.waiting, id)
	}
}
