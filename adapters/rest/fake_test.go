package rest_test

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"

	"github.com/chaoskit/chaoskit/adapters/rest"
	"github.com/chaoskit/chaoskit/harness"
)

// world is a fake rest.Tools: it records every call with its caller's token, applies keyed calls
// once per key (a repeated key is a replay, or a *harness.KeyReusedError with other arguments),
// and fails a call with fail's error when fail returns one (after applying it, for
// harness.ErrToolAmbiguous and context.DeadlineExceeded).
type world struct {
	mu      sync.Mutex
	calls   []seen
	applied map[string]int
	keys    map[string]keyed
	fail    func(c harness.Call) error
}

type seen struct {
	Token string
	Call  harness.Call
}

type keyed struct {
	args  json.RawMessage
	reply harness.Reply
}

func (w *world) Call(ctx context.Context, c harness.Call) (harness.Reply, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls = append(w.calls, seen{Token: rest.Token(ctx), Call: c})
	args := c.Args.(json.RawMessage)
	var err error
	if w.fail != nil {
		err = w.fail(c)
	}
	if err != nil && rest.OutcomeOf(err) != rest.Ambiguous && rest.OutcomeOf(err) != rest.Late {
		return harness.Reply{}, err
	}
	if w.keys == nil {
		w.keys, w.applied = map[string]keyed{}, map[string]int{}
	}
	id := c.Tool + "\x00" + c.Key
	if k, ok := w.keys[id]; ok && c.Key != "" {
		if string(k.args) != string(args) {
			return harness.Reply{}, &harness.KeyReusedError{Tool: c.Tool, Key: c.Key, FirstArgs: k.args, NewArgs: args}
		}
		r := k.reply
		r.Replayed = true
		return r, err
	}
	w.applied[c.Tool]++
	r := harness.Reply{ID: c.Tool + "-" + strconv.Itoa(w.applied[c.Tool])}
	if c.Key != "" {
		w.keys[id] = keyed{args: args, reply: r}
	}
	return r, err
}

// log returns the calls so far.
func (w *world) log() []seen {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]seen(nil), w.calls...)
}
