package harness

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"

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
}

// Call is one call of a tool.
type Call struct {
	Tool string
	// Key is the idempotency key; an IdempotentByKey tool applies a key once.
	Key string
	// Args says what the call does. It is encoded as JSON to identify the effect, so two calls
	// with equal Args are the same effect whatever their keys: put in Args what the effect does
	// (the vendor, the amount), and leave out what may legitimately differ between runs. A
	// json.RawMessage is taken as already encoded, which saves encoding it on every call.
	Args any
}

// Reply is what a tool returns.
type Reply struct {
	// ID names what the call created, e.g. "create_po-2" for the second purchase order.
	ID string
	// Replayed says the tool recognised the key and returned its earlier reply.
	Replayed bool
}

// World is the outside world of a run: the tools, what they have applied, and their memory of
// idempotency keys. It survives every crash.
type World struct {
	tools   map[string]Tool
	applied map[string]int   // applications per tool, to number replies
	byKey   map[string]Reply // tool + key -> first reply
	calls   []worldCall      // every call, in order, for replay
	effects []oracle.Effect  // every application of a side effect
}

type worldCall struct {
	call          Call
	identity      string
	beat, attempt int
}

func newWorld(tools []Tool) *World {
	w := &World{tools: map[string]Tool{}, applied: map[string]int{}, byKey: map[string]Reply{}}
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

// tool returns the declared tool of that name; an undeclared tool is a misuse and panics.
func (w *World) tool(name string) Tool {
	t, ok := w.tools[name]
	if !ok {
		panic(fmt.Sprintf("harness: call to undeclared tool %q (declare it in the target's Tools method)", name))
	}
	return t
}

// apply performs a call and returns the tool's reply.
func (w *World) apply(c Call, id string, beat, attempt int) Reply {
	t := w.tool(c.Tool)
	w.calls = append(w.calls, worldCall{c, id, beat, attempt})
	if t.Contract == ReadOnly {
		return Reply{ID: c.Tool}
	}
	k := c.Tool + "\x00" + c.Key
	if t.Contract == IdempotentByKey && c.Key != "" {
		if r, ok := w.byKey[k]; ok {
			r.Replayed = true
			return r
		}
	}
	w.applied[c.Tool]++
	r := Reply{ID: c.Tool + "-" + strconv.Itoa(w.applied[c.Tool])}
	if t.Contract == IdempotentByKey && c.Key != "" {
		w.byKey[k] = r
	}
	w.effects = append(w.effects, oracle.Effect{Tool: c.Tool, Identity: id, Beat: beat, Attempt: attempt})
	return r
}

// replay returns a new world in the state w was in after its first n calls.
func (w *World) replay(n int) *World {
	r := &World{tools: w.tools, applied: map[string]int{}, byKey: map[string]Reply{}}
	for _, c := range w.calls[:n] {
		r.apply(c.call, c.identity, c.beat, c.attempt)
	}
	return r
}

// Effects returns every application of a side effect so far, in order.
func (w *World) Effects() []oracle.Effect { return append([]oracle.Effect(nil), w.effects...) }
