package world

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
)

// World is the outside world of a run: tools, what they have applied, their memory of keys,
// the lease service, the topics, the model. It survives every crash. Every change to it is
// logged, so that its state at any beat of a golden run can be rebuilt.
type World struct {
	tools   map[string]harness.Tool
	applied map[string]int           // applications per tool, to number replies
	byKey   map[string]keyed         // tool + key -> first reply
	byRef   map[string]harness.Reply // tool + ref -> the reply of the first effect applied with it
	fence   map[string]uint64
	leases  map[string]harness.Lease
	token   uint64 // the last fencing token handed out, whatever the lease: tokens only grow
	topics  map[string][]harness.Message
	pending []scheduled // effects and messages due later, in order of due time
	seq     int
	effects []oracle.Effect
	reuses  []oracle.KeyReuse // calls refused for a key first used with other arguments, in order
	models  []string          // purposes of answered model calls, in order
	asked   []string          // the distinct purposes of answered model calls, in order of first answer
	seen    map[string]bool
	log     []Op
	// Counted is set for a Counted golden run, whose world keeps no log, no model calls and no
	// effects, only effectSum: how many effects it applied and a running hash of them.
	Counted   bool
	effectSum Sum
}

// keyed is what an IdempotentByKey tool remembers of the first call applied under a key.
type keyed struct {
	reply         harness.Reply
	at            time.Time
	identity      string          // the effect it applied
	args          json.RawMessage // its arguments
	beat, process int             // where it was made
}

// scheduled is a change due at a virtual time: a late effect or a posted message.
type scheduled struct {
	at   time.Time
	seq  int
	post *harness.Message // a message to post
	call *Op              // or a call to apply (late)
}

func New(tools []harness.Tool) *World {
	w := &World{tools: map[string]harness.Tool{}}
	w.reset()
	for _, t := range tools {
		if t.Name == "" {
			panic("harness: a Tool has no Name")
		}
		if t.Contract < harness.ReadOnly || t.Contract > harness.NotIdempotent {
			panic(fmt.Sprintf("harness: tool %q has no Contract (want ReadOnly, IdempotentByKey or NotIdempotent)", t.Name))
		}
		if _, dup := w.tools[t.Name]; dup {
			panic(fmt.Sprintf("harness: tool %q declared twice", t.Name))
		}
		w.tools[t.Name] = t
	}
	return w
}

// Tool returns the declared tool of that name; an undeclared tool is a misuse and panics.
func (w *World) Tool(name string) harness.Tool {
	t, ok := w.tools[name]
	if !ok {
		panic(fmt.Sprintf("harness: call to undeclared tool %q (declare it in the target's Tools method)", name))
	}
	return t
}

// Args returns the arguments of c encoded as JSON: what identifies its effect, with its tool.
func Args(c harness.Call) json.RawMessage {
	b, ok := c.Args.(json.RawMessage)
	if !ok {
		var err error
		if b, err = json.Marshal(c.Args); err != nil {
			panic(fmt.Sprintf("harness: the Args of a call to %q cannot be encoded as JSON: %v", c.Tool, err))
		}
	}
	return b
}

// Identity names the effect of a call of tool with the arguments args (Args): the tool and its
// arguments, long ones cut short with a digest of the whole.
func Identity(tool string, args json.RawMessage) string {
	b := args
	if len(b) > 96 {
		h := sha256.Sum256(b)
		b = append(b[:80:80], "…#"+hex.EncodeToString(h[:6])...)
	}
	return tool + " " + string(b)
}

// OpKind names a change to the world.
type OpKind uint8

// The changes to the world.
const (
	Call    OpKind = iota // a tool call applied (or rejected)
	Late                  // a tool call scheduled to be applied later
	Acquire               // a lease acquired (or refused)
	Renew
	Release
	Model   // a model call answered
	Advance // the clock advanced: due changes happen
)

// Op is one logged change to the world.
type Op struct {
	Kind          OpKind
	At            time.Time
	Call          harness.Call
	Args          json.RawMessage // Args(Call)
	Identity      string          // Identity(Call.Tool, Args)
	Beat, Process int             // where the call was made
	DupCallback   bool            // post an asynchronous completion twice
	Name          string          // the lease, or the model call's purpose
	Holder        string          // the lease's would-be holder
	TTL           time.Duration
	Token         uint64        // the lease renewed or released
	Delay         time.Duration // Late: how long after At
}

// Do logs op and performs it.
func (w *World) Do(op Op) (harness.Reply, harness.Lease, error) {
	if !w.Counted {
		w.log = append(w.log, op)
	}
	return w.exec(op)
}

func (w *World) exec(op Op) (harness.Reply, harness.Lease, error) {
	switch op.Kind {
	case Call:
		r, err := w.apply(op)
		return r, harness.Lease{}, err
	case Late:
		late := op
		late.Kind, late.At = Call, op.At.Add(op.Delay)
		w.schedule(scheduled{at: late.At, call: &late})
	case Acquire, Renew, Release:
		l, err := w.lease(op)
		return harness.Reply{}, l, err
	case Model:
		if !w.Counted {
			w.models = append(w.models, op.Name)
		}
		if !w.seen[op.Name] { // kept when counted too: it grows with distinct requests, not calls
			w.seen[op.Name] = true
			w.asked = append(w.asked, op.Name)
		}
	case Advance:
		w.fire(op.At)
	}
	return harness.Reply{}, harness.Lease{}, nil
}

// apply performs a tool call at op.At.
func (w *World) apply(op Op) (harness.Reply, error) {
	c, t := op.Call, w.Tool(op.Call.Tool)
	if t.Contract == harness.ReadOnly {
		return harness.Reply{ID: c.Tool}, nil
	}
	if t.Fenced && c.Fence != 0 {
		if c.Fence < w.fence[c.Tool] {
			return harness.Reply{}, harness.ErrFenced
		}
		w.fence[c.Tool] = c.Fence
	}
	k := c.Tool + "\x00" + c.Key
	if t.Contract == harness.IdempotentByKey && c.Key != "" {
		if prev, ok := w.byKey[k]; ok && (t.KeyTTL == 0 || op.At.Sub(prev.at) <= t.KeyTTL) {
			if prev.identity != op.Identity { // the key of another effect: refused, as Stripe does
				if !w.Counted {
					w.reuses = append(w.reuses, oracle.KeyReuse{Tool: c.Tool, Key: c.Key, FirstArgs: string(prev.args), NewArgs: string(op.Args),
						FirstBeat: prev.beat, FirstProcess: prev.process, Beat: op.Beat, Process: op.Process})
				}
				return harness.Reply{}, &harness.KeyReusedError{Tool: c.Tool, Key: c.Key, FirstArgs: prev.args, NewArgs: op.Args}
			}
			prev.reply.Replayed = true
			return prev.reply, nil
		}
	}
	w.applied[c.Tool]++
	r := harness.Reply{ID: c.Tool + "-" + strconv.Itoa(w.applied[c.Tool])}
	if t.Async > 0 {
		r.Topic = c.Tool + "/" + c.Key
		if c.Key == "" {
			r.Topic = r.ID
		}
		body := t.Outcome
		if body == "" {
			body = r.ID
		}
		for n := 0; n < 1 || n < 2 && op.DupCallback; n++ {
			w.schedule(scheduled{at: op.At.Add(t.Async), post: &harness.Message{Topic: r.Topic, Body: body}})
		}
	}
	if t.Contract == harness.IdempotentByKey && c.Key != "" {
		w.byKey[k] = keyed{reply: r, at: op.At, identity: op.Identity, args: op.Args, beat: op.Beat, process: op.Process}
	}
	if c.Ref != "" {
		if _, seen := w.byRef[c.Tool+"\x00"+c.Ref]; !seen {
			w.byRef[c.Tool+"\x00"+c.Ref] = r
		}
	}
	if w.Counted {
		w.effectSum.Add(op.Identity)
	} else {
		e := oracle.Effect{Tool: c.Tool, Identity: op.Identity, Beat: op.Beat, Process: op.Process}
		if t.Contract == harness.IdempotentByKey {
			e.Key = c.Key
		}
		w.effects = append(w.effects, e)
	}
	return r, nil
}

// lease performs a lease operation at op.At.
func (w *World) lease(op Op) (harness.Lease, error) {
	cur, held := w.leases[op.Name]
	live := held && op.At.Before(cur.Expires)
	switch op.Kind {
	case Acquire:
		if live && cur.Holder != op.Holder {
			return cur, harness.ErrLeaseHeld
		}
		w.token++
		l := harness.Lease{Name: op.Name, Holder: op.Holder, Token: w.token, Expires: op.At.Add(op.TTL)}
		w.leases[op.Name] = l
		return l, nil
	case Renew:
		if !live || cur.Token != op.Token {
			return cur, harness.ErrLeaseLost
		}
		cur.Expires = op.At.Add(op.TTL)
		w.leases[op.Name] = cur
		return cur, nil
	default: // Release
		if live && cur.Token == op.Token {
			delete(w.leases, op.Name)
		}
		return harness.Lease{}, nil
	}
}

// schedule queues a change, keeping the queue ordered by due time, then by scheduling order.
func (w *World) schedule(s scheduled) {
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

// Next returns when the next scheduled change is due.
func (w *World) Next() (time.Time, bool) {
	if len(w.pending) == 0 {
		return time.Time{}, false
	}
	return w.pending[0].at, true
}

// fire performs the changes due by now.
func (w *World) fire(now time.Time) {
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

// Settle performs every change still scheduled, as the world goes on after a run ends: a call
// that outlived its caller's deadline lands whether or not anyone is still waiting for it.
func (w *World) Settle() {
	if len(w.pending) > 0 {
		w.Do(Op{Kind: Advance, At: w.pending[len(w.pending)-1].at})
	}
}

// reset empties the world of everything but its tools.
func (w *World) reset() {
	w.applied, w.byKey, w.byRef, w.fence = map[string]int{}, map[string]keyed{}, map[string]harness.Reply{}, map[string]uint64{}
	w.leases, w.topics = map[string]harness.Lease{}, map[string][]harness.Message{}
	w.seen = map[string]bool{}
}

// Replay returns a new world in the state w was in after its first n changes.
func (w *World) Replay(n int) *World {
	r := &World{tools: w.tools}
	r.reset()
	for _, op := range w.log[:n] {
		r.Do(op)
	}
	return r
}

// Sum counts a sequence of strings and hashes it as it goes (64-bit FNV-1a, each string followed
// by a zero byte), so that two sequences can be compared without keeping either.
type Sum struct {
	N    int    // strings added
	Hash uint64 // their FNV-1a hash
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// Add counts text and hashes it in.
func (s *Sum) Add(text string) {
	h := s.Hash
	if s.N == 0 {
		h = fnvOffset
	}
	for i := 0; i < len(text); i++ {
		h ^= uint64(text[i])
		h *= fnvPrime
	}
	s.Hash = h * fnvPrime
	s.N++
}

// ByRef returns the reply of the first effect tool applied with the caller's reference ref.
func (w *World) ByRef(tool, ref string) (harness.Reply, bool) {
	r, ok := w.byRef[tool+"\x00"+ref]
	return r, ok
}

// Messages returns a copy of the messages posted on topic so far.
func (w *World) Messages(topic string) []harness.Message {
	return append([]harness.Message(nil), w.topics[topic]...)
}

// Effects returns every application of a side effect so far, in order (none if Counted).
func (w *World) Effects() []oracle.Effect { return w.effects }

// KeyReuses returns the calls refused so far because their key had been used with other
// arguments, in order (none if Counted).
func (w *World) KeyReuses() []oracle.KeyReuse { return w.reuses }

// Models returns the purposes of the model calls answered so far, in order (none if Counted).
func (w *World) Models() []string { return w.models }

// Asked returns the distinct purposes of the model calls answered so far, in the order each
// was first answered. A Counted world keeps them too.
func (w *World) Asked() []string { return w.asked }

// EffectSum is what a Counted world keeps of its effects: their number and a hash of them.
func (w *World) EffectSum() Sum { return w.effectSum }

// Changes returns how many changes have been logged: Replay's argument for the state now.
func (w *World) Changes() int { return len(w.log) }
