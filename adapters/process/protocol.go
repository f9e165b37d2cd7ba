package process

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/chaoskit/chaoskit/harness"
)

// Version is the protocol version this package speaks (PROTOCOL.md).
const Version = 1

// The environment variables a child finds chaoskit in.
const (
	EnvSocket   = "CHAOSKIT_SOCKET"    // the Unix socket to connect to
	EnvToken    = "CHAOSKIT_TOKEN"     // the token the hello must carry
	EnvProtocol = "CHAOSKIT_PROTOCOL"  // the protocol version chaoskit speaks
	EnvStateDir = "CHAOSKIT_STATE_DIR" // the directory the harness keeps its durable state in
	EnvProcess  = "CHAOSKIT_PROCESS"   // the process's number: 0, then one more per process started
	EnvAttempt  = "CHAOSKIT_ATTEMPT"   // EnvProcess's number under its earlier name, for clients that read it
	EnvWorker   = "CHAOSKIT_WORKER"    // the worker the process belongs to, from 0
)

// request is one line a child sends: an operation and its arguments.
type request struct {
	ID     int64  `json:"id,omitempty"` // echoed in the response, for the client's own checks
	Op     string `json:"op"`
	V      int    `json:"v,omitempty"`      // hello
	Token  string `json:"token,omitempty"`  // hello
	Client string `json:"client,omitempty"` // hello: the client's name and version

	Tool      string          `json:"tool,omitempty"` // call, lookup
	Key       string          `json:"key,omitempty"`
	Ref       string          `json:"ref,omitempty"` // call, lookup: the harness's own reference for the effect
	Args      json.RawMessage `json:"args,omitempty"`
	Fence     uint64          `json:"fence,omitempty"`
	TimeoutMs int64           `json:"timeout_ms,omitempty"` // call, model, await: a virtual deadline

	Purpose   string `json:"purpose,omitempty"` // model
	Reply     string `json:"reply,omitempty"`
	LatencyMs int64  `json:"latency_ms,omitempty"`

	Ms    int64      `json:"ms,omitempty"`    // sleep
	Topic string     `json:"topic,omitempty"` // await, messages
	Name  string     `json:"name,omitempty"`  // acquire
	TTLMs int64      `json:"ttl_ms,omitempty"`
	Lease *leaseJSON `json:"lease,omitempty"` // renew, release
	Label string     `json:"label,omitempty"` // mark

	Result json.RawMessage `json:"result,omitempty"` // done
	Reason string          `json:"reason,omitempty"` // refuse
}

// response is one line chaoskit sends back: ok and the operation's results, or an error.
type response struct {
	ID       int64     `json:"id,omitempty"`
	OK       bool      `json:"ok"`
	Error    *protoErr `json:"error,omitempty"`
	V        int       `json:"v,omitempty"` // hello
	Process  *int      `json:"process,omitempty"`
	Attempt  *int      `json:"attempt,omitempty"` // Process, under its earlier name, for clients that read it
	Worker   *int      `json:"worker,omitempty"`
	StateDir string    `json:"state_dir,omitempty"`

	ReplyID  string `json:"reply_id,omitempty"` // call, lookup
	Replayed bool   `json:"replayed,omitempty"`
	Topic    string `json:"topic,omitempty"`
	Found    *bool  `json:"found,omitempty"` // lookup

	Text string `json:"text,omitempty"` // model

	NowMs *int64 `json:"now_ms,omitempty"` // now

	Messages *[]messageJSON `json:"messages,omitempty"` // await, messages: present, if empty, for those
	Lease    *leaseJSON     `json:"lease,omitempty"`    // acquire, renew
	Value    *uint64        `json:"value,omitempty"`    // random
}

// protoErr is an error a response carries: a stable code the client maps to its own error
// types, and a message for people.
type protoErr struct {
	Code         string `json:"code"`
	Message      string `json:"message"`
	RetryAfterMs int64  `json:"retry_after_ms,omitempty"`
}

type leaseJSON struct {
	Name      string `json:"name"`
	Holder    string `json:"holder,omitempty"`
	Token     uint64 `json:"token"`
	ExpiresMs int64  `json:"expires_ms,omitempty"`
}

type messageJSON struct {
	Topic string `json:"topic"`
	Body  string `json:"body"`
	Seq   int    `json:"seq"`
}

// The error codes of the protocol.
const (
	codeTransient     = "transient"      // the tool failed before applying the call: retry
	codeAmbiguous     = "ambiguous"      // the reply was lost: the call may have been applied
	codeTimeout       = "timeout"        // the call's deadline passed: it may still be applied
	codeFenced        = "fenced"         // the tool saw a newer fencing token
	codeKeyReused     = "key_reused"     // the call's key was first used with other arguments
	codeLeaseHeld     = "lease_held"     // another worker holds the lease
	codeLeaseLost     = "lease_lost"     // the lease expired or was taken over
	codeRateLimited   = "rate_limited"   // the model is rate limited: retry after retry_after_ms
	codeModelServer   = "model_server"   // the model failed (500)
	codeContextLength = "context_length" // the model refused: the context is too long
	codeDeadline      = "deadline"       // a wait's deadline passed
	codeBadRequest    = "bad_request"    // the request is malformed: the process is failed
	codeVersion       = "version"        // the hello's protocol version is not spoken here
)

// worldError turns an error of the Env into the protocol's.
func worldError(err error) *protoErr {
	e := &protoErr{Message: err.Error()}
	var rl *harness.RateLimitError
	var reused *harness.KeyReusedError
	switch {
	case errors.As(err, &reused):
		e.Code = codeKeyReused
		e.Message = fmt.Sprintf("%s (%s key %q was first used with %s; this call has %s)", err, reused.Tool, reused.Key, reused.FirstArgs, reused.NewArgs)
	case errors.Is(err, harness.ErrToolTransient):
		e.Code = codeTransient
	case errors.Is(err, harness.ErrToolAmbiguous):
		e.Code = codeAmbiguous
	case errors.Is(err, harness.ErrFenced):
		e.Code = codeFenced
	case errors.Is(err, harness.ErrLeaseHeld):
		e.Code = codeLeaseHeld
	case errors.Is(err, harness.ErrLeaseLost):
		e.Code = codeLeaseLost
	case errors.As(err, &rl):
		e.Code, e.RetryAfterMs = codeRateLimited, rl.RetryAfter.Milliseconds()
	case errors.Is(err, harness.ErrModelServer), errors.Is(err, harness.ErrModelUnavailable), errors.Is(err, harness.ErrModelCut):
		// A 503, or an answer cut off mid-stream: to a scripted model's caller, a failed call
		// to retry with backoff, as a 500 is.
		e.Code = codeModelServer
	case errors.Is(err, harness.ErrContextLength):
		e.Code = codeContextLength
	case errors.Is(err, context.DeadlineExceeded):
		e.Code = codeDeadline
	default:
		e.Code = codeBadRequest
	}
	return e
}

func leaseOf(l harness.Lease) *leaseJSON {
	return &leaseJSON{Name: l.Name, Holder: l.Holder, Token: l.Token, ExpiresMs: ms(l.Expires)}
}

// ms returns a virtual instant as Unix milliseconds.
func ms(t time.Time) int64 { return t.UnixMilli() }

// maxMs is the longest duration a request may give, a year of virtual time: what a schedule
// allows, far from where milliseconds would overflow a time.Duration.
const maxMs = 365 * 24 * 3600 * 1000

// dur returns a request's duration of ms milliseconds, or an error naming the field if it is
// negative or longer than maxMs.
func dur(field string, ms int64) (time.Duration, error) {
	if ms < 0 || ms > maxMs {
		return 0, fmt.Errorf("%s %d is not a duration chaoskit takes (0 to %d ms, a year)", field, ms, int64(maxMs))
	}
	return time.Duration(ms) * time.Millisecond, nil
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
	return decodeState(bytes.NewReader(raw), int64(len(raw)))
}
