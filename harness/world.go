package harness

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/chaoskit/chaoskit/oracle"
)

// Contract says what a tool promises about repeated calls.
type Contract int

// The contracts.
const (
	// ReadOnly tools change nothing: calling them again is harmless and is not an effect.
	ReadOnly Contract = iota + 1
	// IdempotentByKey tools apply a call once per idempotency key: a repeated key returns the
	// first reply and applies nothing. A call without a key is applied every time.
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
	// Args: otherwise two workers making it are taken for a repeat (see Options.FleetReplicas). A
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
)

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

// world is the outside world of a run: tools, what they have applied, their memory of keys,
// the lease service, the topics, the model. It survives every crash. Every change to it is
// logged, so that its state at any beat of a golden run can be rebuilt.
type world struct {
	tools   map[string]Tool
	applied map[string]int   // applications per tool, to number replies
	byKey   map[string]keyed // tool + key -> first reply
	byRef   map[string]Reply // tool + ref -> the reply of the first effect applied with it
	fence   map[string]uint64
	leases  map[string]Lease
	token   uint64 // the last fencing token handed out, whatever the lease: tokens only grow
	topics  map[string][]Message
	pending []scheduled // effects and messages due later, in order of due time
	seq     int
	effects []oracle.Effect
	models  []string // purposes of answered model calls, in order
	log     []worldOp
	// counted is set for a counted golden run, whose world keeps no log, no model calls and no
	// effects, only effectSum: how many effects it applied and a running hash of them.
	counted   bool
	effectSum sum
}

type keyed struct {
	reply Reply
	at    time.Time
}

// scheduled is a change due at a virtual time: a late effect or a posted message.
type scheduled struct {
	at   time.Time
	seq  int
	post *Message // a message to post
	call *worldOp // or a call to apply (late)
}

func newWorld(tools []Tool) *world {
	w := &world{tools: map[string]Tool{}}
	w.reset()
	for _, t := range tools {
		if t.Name == "" {
			panic("harness: a Tool has no Name")
		}
		if t.Contract < ReadOnly || t.Contract > NotIdempotent {
			panic(fmt.Sprintf("harness: tool %q has no Contract (want ReadOnly, IdempotentByKey or NotIdempotent)", t.Name))
		}
		if _, dup := w.tools[t.Name]; dup {
			panic(fmt.Sprintf("harness: tool %q declared twice", t.Name))
		}
		w.tools[t.Name] = t
	}
	return w
}

// tool returns the declared tool of that name; an undeclared tool is a misuse and panics.
func (w *world) tool(name string) Tool {
	t, ok := w.tools[name]
	if !ok {
		panic(fmt.Sprintf("harness: call to undeclared tool %q (declare it in the target's Tools method)", name))
	}
	return t
}

// identity names the effect of c: its tool and its arguments.
func identity(c Call) string {
	b, ok := c.Args.(json.RawMessage)
	if !ok {
		var err error
		if b, err = json.Marshal(c.Args); err != nil {
			panic(fmt.Sprintf("harness: the Args of a call to %q cannot be encoded as JSON: %v", c.Tool, err))
		}
	}
	if len(b) > 96 {
		sum := sha256.Sum256(b)
		b = append(b[:80:80], "…#"+hex.EncodeToString(sum[:6])...)
	}
	return c.Tool + " " + string(b)
}

// worldOpKind names a change to the world.
type worldOpKind uint8

const (
	wCall    worldOpKind = iota // a tool call applied (or rejected)
	wLate                       // a tool call scheduled to be applied later
	wAcquire                    // a lease acquired (or refused)
	wRenew
	wRelease
	wModel   // a model call answered
	wAdvance // the clock advanced: due changes happen
)

// worldOp is one logged change to the world.
type worldOp struct {
	kind          worldOpKind
	at            time.Time
	call          Call
	identity      string
	beat, attempt int
	dupCallback   bool          // post an asynchronous completion twice
	name, holder  string        // lease
	ttl           time.Duration // lease
	token         uint64        // lease renewed or released
	delay         time.Duration // wLate: how long after at
}

// do logs op and performs it.
func (w *world) do(op worldOp) (Reply, Lease, error) {
	if !w.counted {
		w.log = append(w.log, op)
	}
	return w.exec(op)
}

func (w *world) exec(op worldOp) (Reply, Lease, error) {
	switch op.kind {
	case wCall:
		r, err := w.apply(op)
		return r, Lease{}, err
	case wLate:
		late := op
		late.kind, late.at = wCall, op.at.Add(op.delay)
		w.schedule(scheduled{at: late.at, call: &late})
	case wAcquire, wRenew, wRelease:
		l, err := w.lease(op)
		return Reply{}, l, err
	case wModel:
		if !w.counted {
			w.models = append(w.models, op.name)
		}
	case wAdvance:
		w.fire(op.at)
	}
	return Reply{}, Lease{}, nil
}

// apply performs a tool call at op.at.
func (w *world) apply(op worldOp) (Reply, error) {
	c, t := op.call, w.tool(op.call.Tool)
	if t.Contract == ReadOnly {
		return Reply{ID: c.Tool}, nil
	}
	if t.Fenced && c.Fence != 0 {
		if c.Fence < w.fence[c.Tool] {
			return Reply{}, ErrFenced
		}
		w.fence[c.Tool] = c.Fence
	}
	k := c.Tool + "\x00" + c.Key
	if t.Contract == IdempotentByKey && c.Key != "" {
		if prev, ok := w.byKey[k]; ok && (t.KeyTTL == 0 || op.at.Sub(prev.at) <= t.KeyTTL) {
			prev.reply.Replayed = true
			return prev.reply, nil
		}
	}
	w.applied[c.Tool]++
	r := Reply{ID: c.Tool + "-" + strconv.Itoa(w.applied[c.Tool])}
	if t.Async > 0 {
		r.Topic = c.Tool + "/" + c.Key
		if c.Key == "" {
			r.Topic = r.ID
		}
		body := t.Outcome
		if body == "" {
			body = r.ID
		}
		for n := 0; n < 1 || n < 2 && op.dupCallback; n++ {
			w.schedule(scheduled{at: op.at.Add(t.Async), post: &Message{Topic: r.Topic, Body: body}})
		}
	}
	if t.Contract == IdempotentByKey && c.Key != "" {
		w.byKey[k] = keyed{r, op.at}
	}
	if c.Ref != "" {
		if _, seen := w.byRef[c.Tool+"\x00"+c.Ref]; !seen {
			w.byRef[c.Tool+"\x00"+c.Ref] = r
		}
	}
	if w.counted {
		w.effectSum.add(op.identity)
	} else {
		w.effects = append(w.effects, oracle.Effect{Tool: c.Tool, Identity: op.identity, Beat: op.beat, Attempt: op.attempt})
	}
	return r, nil
}

// lease performs a lease operation at op.at.
func (w *world) lease(op worldOp) (Lease, error) {
	cur, held := w.leases[op.name]
	live := held && op.at.Before(cur.Expires)
	switch op.kind {
	case wAcquire:
		if live && cur.Holder != op.holder {
			return cur, ErrLeaseHeld
		}
		w.token++
		l := Lease{Name: op.name, Holder: op.holder, Token: w.token, Expires: op.at.Add(op.ttl)}
		w.leases[op.name] = l
		return l, nil
	case wRenew:
		if !live || cur.Token != op.token {
			return cur, ErrLeaseLost
		}
		cur.Expires = op.at.Add(op.ttl)
		w.leases[op.name] = cur
		return cur, nil
	default: // wRelease
		if live && cur.Token == op.token {
			delete(w.leases, op.name)
		}
		return Lease{}, nil
	}
}

// schedule queues a change, keeping the queue ordered by due time, then by scheduling order.
func (w *world) schedule(s scheduled) {
	w.seq++
	s.seq = w.seq
	i := len(w.pending)
	for i > 0 && w.pending[i-1].at.After(s.at) {
		i--
	}
	w.pending = append(w.pending, scheduled{})
	copy(w.pending[i+1:], w.pending[i:])
	w.pending[i] = s
}

// next returns when the next scheduled change is due.
func (w *world) next() (time.Time, bool) {
	if len(w.pending) == 0 {
		return time.Time{}, false
	}
	return w.pending[0].at, true
}

// fire performs the changes due by now.
func (w *world) fire(now time.Time) {
	for len(w.pending) > 0 && !w.pending[0].at.After(now) {
		s := w.pending[0]
		w.pending = w.pending[1:]
		if s.post != nil {
			m := *s.post
			m.Seq = len(w.topics[m.Topic])
			w.topics[m.Topic] = append(w.topics[m.Topic], m)
		} else {
			w.apply(*s.call)
		}
	}
}

// settle performs every change still scheduled, as the world goes on after a run ends: a call
// that outlived its caller's deadline lands whether or not anyone is still waiting for it.
func (w *world) settle() {
	if len(w.pending) > 0 {
		w.do(worldOp{kind: wAdvance, at: w.pending[len(w.pending)-1].at})
	}
}

// reset empties the world of everything but its tools.
func (w *world) reset() {
	w.applied, w.byKey, w.byRef, w.fence = map[string]int{}, map[string]keyed{}, map[string]Reply{}, map[string]uint64{}
	w.leases, w.topics = map[string]Lease{}, map[string][]Message{}
}

// replay returns a new world in the state w was in after its first n changes.
func (w *world) replay(n int) *world {
	r := &world{tools: w.tools}
	r.reset()
	for _, op := range w.log[:n] {
		r.do(op)
	}
	return r
}

// Effects returns every application of a side effect so far, in order.
