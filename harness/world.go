package harness

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Contract says what a tool promises about repeated calls.
type Contract int

// The contracts.
const (
	// ReadOnly tools change nothing: calling them again is harmless and is not an effect.
	ReadOnly Contract = iota + 1
	// IdempotentByKey tools apply a call once per idempotency key: a repeated key returns the
	// first reply and applies nothing. A key used again with other arguments is refused with a
	// *KeyReusedError, as Stripe refuses it, and applies nothing either. A call without a key is
	// applied every time.
	IdempotentByKey
	// NotIdempotent tools apply every call.
	NotIdempotent
)

func (c Contract) String() string {
	switch c {
	case ReadOnly:
		return "read-only"
	case IdempotentByKey:
		return "idempotent-by-key"
	case NotIdempotent:
		return "not-idempotent"
	}
	return "Contract(" + strconv.Itoa(int(c)) + ")"
}

// Tool is an external system the target acts on: a payment API, a ticket tracker, git.
type Tool struct {
	Name     string
	Contract Contract
	// Latency is the virtual time a call takes to come back.
	Latency time.Duration
	// KeyTTL is how long an IdempotentByKey tool remembers a key (Stripe forgets after 24h);
	// zero means forever. A call with a forgotten key is applied again.
	KeyTTL time.Duration
	// Fenced tools reject a call whose fencing token is older than the newest they have seen
	// (ErrFenced). A call without a token is not checked.
	Fenced bool
	// Async, if positive, makes the tool asynchronous: a call is accepted at once (Reply.Topic
	// names where its completion will be posted) and completes Async later, when a message
	// carrying Outcome (or, if empty, the reply's ID) is posted on that topic.
	Async   time.Duration
	Outcome string
	// Ordered says the order of this tool's effects matters, relative to the other ordered
	// tools' (ordered-effects): a resume must not ship before it reserves.
	Ordered bool
}

// Call is one call of a tool.
type Call struct {
	Tool string
	// Key is the idempotency key; an IdempotentByKey tool applies a key once.
	Key string
	// Args says what the call does. It is encoded as JSON to identify the effect, so two calls
	// with equal Args are the same effect whatever their keys: put in Args what the effect does
	// (the vendor, the amount), and leave out what may legitimately differ between runs. An
	// effect each worker makes of its own (a worker announcing itself) names the worker in
	// Args: otherwise two workers making it are taken for a repeat (see sim.Options.FleetWorkers). A
	// json.RawMessage is taken as already encoded, which saves encoding it on every call.
	Args any
	// Fence is the caller's fencing token (from its Lease), for Fenced tools; 0 for none.
	Fence uint64
	// Ref is the caller's own reference for the effect (an order number, "run-7:step-3"),
	// which the tool keeps with the effect for ever, unlike an idempotency key it may forget:
	// Env.Lookup finds the effect by it. It does not identify the effect and is not a key.
	Ref string
}

// Reply is what a tool returns.
type Reply struct {
	// ID names what the call created, e.g. "create_po-2" for the second purchase order.
	ID string
	// Replayed says the tool recognised the key and returned its earlier reply.
	Replayed bool
	// Topic, for an asynchronous tool, is where its completion will be posted (see Env.Await).
	Topic string
}

// Errors of the outside world. They are what a harness sees from its tools, model and lease
// service; faults make them happen.
var (
	// ErrToolTransient: the tool failed before applying the call; retrying is safe.
	ErrToolTransient = errors.New("service unavailable (503): not applied, retry")
	// ErrToolAmbiguous: the connection dropped before the reply; the call may have been applied.
	ErrToolAmbiguous = errors.New("connection reset before the reply: the call may have been applied")
	// ErrFenced: the tool has seen a newer fencing token; the call was rejected.
	ErrFenced = errors.New("stale fencing token: rejected")
	// ErrLeaseHeld: another holder has the lease and it has not expired.
	ErrLeaseHeld = errors.New("lease held by another worker")
	// ErrLeaseLost: the lease expired or was taken over; the holder must stop acting for it.
	ErrLeaseLost = errors.New("lease lost")
	// ErrModelServer: the model failed with a server error (500); retrying may work.
	ErrModelServer = errors.New("model: server error (500)")
	// ErrModelUnavailable: the model is overloaded (503); retrying later may work.
	ErrModelUnavailable = errors.New("model: service unavailable (503)")
	// ErrModelCut: the answer was cut off mid-stream: the model did the work (and the call is
	// counted as made), but the caller got only part of it.
	ErrModelCut = errors.New("model: the answer was cut off mid-stream")
	// ErrContextLength: the model refused the call because the context is too long.
	ErrContextLength = errors.New("model: context length exceeded")
	// ErrRefused is what a harness wraps in the error it stops with when it refuses to go on
	// because it cannot know what is safe (an effect it cannot tell was applied, and no way to
	// look it up): a loud refusal that asks for a person. Such a run is not restarted, and its
	// case passes as refused (see oracle.Verdict.Refused) unless it broke another property; a
	// campaign counts refusals and lists each. A harness should not refuse over damage to its
	// own files: after a crash, chaoskit cannot tell such a refusal from a real doubt, and one
	// where the tools are idempotent usually hides durable state lost to a power cut or a torn
	// write (a gate refused==0 fails those).
	ErrRefused = errors.New("refused to go on without a person")
	// ErrUndecided is what an adapter wraps in the error a process ends with when the run
	// cannot be judged: it asked what nothing can answer (a model request its cassette does
	// not hold, say). The run ends there, and its case is unknown, saying why; a golden run
	// that ends so is refused.
	ErrUndecided = errors.New("the run cannot be judged")
	// ErrTerminated is the cause (context.Cause) of a process's context cancelled by a deploy
	// (an upgrade fault with a grace period, sim.Options.Grace): the Go equivalent of the
	// SIGTERM a deploy sends. The process goes on, its beats counted as usual; one that
	// finishes its step, checkpoints and returns within the grace period has stopped on its
	// own, and one still running when the period ends is killed as by SIGKILL. Either way its
	// worker's next process runs the next version.
	ErrTerminated = errors.New("terminated by a deploy (SIGTERM)")
	// ErrKeyReused: an IdempotentByKey tool was called again under a key it had seen with other
	// arguments, and refused the call. Every *KeyReusedError matches it (errors.Is).
	ErrKeyReused = errors.New("idempotency key reused with other arguments")
)

// KeyReusedError is an IdempotentByKey tool's answer to a call under a key it first saw with
// other arguments: nothing is applied, as Stripe answers such a request with an error (a 422)
// rather than the first call's reply. It is a bug of the harness, not a fault: a key must name
// one effect, so a step whose arguments changed needs a key of its own. Its text is Stripe's,
// which is what an SDK shows; FirstArgs and NewArgs say what differs.
type KeyReusedError struct {
	Tool string
	Key  string
	// FirstArgs and NewArgs are the arguments, as JSON, of the first call made under Key and of
	// the one refused.
	FirstArgs, NewArgs json.RawMessage
}

// Error returns Stripe's text for a reused key.
func (e *KeyReusedError) Error() string {
	return fmt.Sprintf("Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '%s' if you meant to execute a different request.", e.Key)
}

// Is reports whether target is ErrKeyReused, so that errors.Is(err, ErrKeyReused) finds a
// *KeyReusedError in err's chain.
func (e *KeyReusedError) Is(target error) bool { return target == ErrKeyReused }

// RateLimitError is the model's answer when it is rate limited: retry after RetryAfter.
type RateLimitError struct{ RetryAfter time.Duration }

func (e *RateLimitError) Error() string {
	return fmt.Sprintf("model: rate limited (429), retry after %s", e.RetryAfter)
}

// Lease is a time-limited claim on a named resource (a run), from the world's lease service.
// Its Token grows with every acquisition of any lease: pass it to Fenced tools as Call.Fence.
type Lease struct {
	Name    string
	Holder  string
	Token   uint64
	Expires time.Time
}

// Message is a message posted on a topic: an asynchronous completion, a human's approval.
type Message struct {
	Topic string
	Body  string
	Seq   int // its position on the topic, from 0
}
