package services_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/adapters/provider"
	"github.com/chaoskit/chaoskit/adapters/rest"
	"github.com/chaoskit/chaoskit/adapters/services"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
	"github.com/spf13/afero"
)

// cassette is the buyer's model: asked to order, it files a purchase order (or, answering
// otherwise after a crash, one for another amount), then reports.
const cassette = `{
  "interactions": [
    {"name": "order", "match": {"turn": 1},
     "answer": {"tool_calls": [{"name": "create_po", "arguments": {"vendor": "acme", "usd": 1200}}]},
     "alternatives": [{"tool_calls": [{"name": "create_po", "arguments": {"vendor": "acme", "usd": 1300}}]}]},
    {"name": "report", "match": {"turn": 2, "tool_result_of": "create_po"},
     "answer": {"text": "filed"}}
  ]
}`

// buyer is an agent as a Go team writes one against an OpenAI-compatible API and a REST
// purchasing service, through plain net/http: it asks the model, runs the tool calls it answers
// against POST /v1/purchase_orders with an Idempotency-Key, and keeps the conversation in a
// checkpoint written whole (a temporary file, fsynced, renamed, the directory fsynced) after
// the model's answer and after its tool calls. keyByCallID keys each order by the model's
// tool-call id instead of the step; wholeTurns keeps only whole turns (the model's answer with
// the results of its calls), so that a resumed agent asks the model again for a turn it had
// begun. Together they file an order twice: the answer asked again comes with a fresh id, as a
// provider's does.
type buyer struct{ keyByCallID, wholeTurns bool }

type message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content,omitempty"`
	ToolCalls  []toolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

type toolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

func (b buyer) Tools() []harness.Tool {
	return []harness.Tool{{Name: "purchase_orders", Contract: harness.IdempotentByKey}}
}

func (b buyer) Run(ctx context.Context, env *harness.Env) (any, error) {
	fsys, client := env.FS(), services.Client(env)
	var conv []message
	if data, err := afero.ReadFile(fsys, "conv.json"); err == nil {
		if err := json.Unmarshal(data, &conv); err != nil {
			return nil, fmt.Errorf("conv.json: %w", err)
		}
	} else {
		conv = []message{{Role: "user", Content: "order what the warehouse needs"}}
	}
	for {
		last := conv[len(conv)-1]
		if last.Role == "assistant" && len(last.ToolCalls) == 0 {
			return last.Content, nil
		}
		if last.Role == "assistant" { // run the calls it asked for, then ask again
			for _, tc := range last.ToolCalls {
				key := fmt.Sprintf("order-%d", len(conv))
				if b.keyByCallID {
					key = tc.ID
				}
				id, err := retry(ctx, env, func(ctx context.Context) (string, error) {
					return post(ctx, client, "/v1/purchase_orders", key, tc.Function.Arguments)
				})
				if err != nil {
					return nil, err
				}
				conv = append(conv, message{Role: "tool", ToolCallID: tc.ID, Content: id})
			}
			if err := save(fsys, conv); err != nil {
				return nil, err
			}
			continue
		}
		reply, err := retry(ctx, env, func(ctx context.Context) (string, error) {
			return post(ctx, client, "/v1/chat/completions", "", map[string]any{"model": "gpt-4o-mini", "messages": conv})
		})
		if err != nil {
			return nil, err
		}
		var answer struct {
			Choices []struct{ Message message } `json:"choices"`
		}
		if err := json.Unmarshal([]byte(reply), &answer); err != nil || len(answer.Choices) == 0 {
			return nil, fmt.Errorf("a model answer that does not read: %v: %.200s", err, reply)
		}
		conv = append(conv, answer.Choices[0].Message)
		if b.wholeTurns && len(answer.Choices[0].Message.ToolCalls) > 0 {
			continue // kept with its calls' results
		}
		if err := save(fsys, conv); err != nil {
			return nil, err
		}
	}
}

// retryable is an answer worth asking again: a 429 (after its retry-after), a 5xx, a connection
// lost before or during the answer.
type retryable struct {
	after time.Duration
	err   error
}

func (r *retryable) Error() string { return r.err.Error() }

// retry calls f until it succeeds or fails for good, waiting in virtual time between tries.
func retry(ctx context.Context, env *harness.Env, f func(ctx context.Context) (string, error)) (string, error) {
	for try := 0; ; try++ {
		cctx, cancel := env.WithTimeout(ctx, time.Minute)
		out, err := f(cctx)
		cancel()
		var r *retryable
		if err == nil || !errors.As(err, &r) || try == 8 {
			return out, err
		}
		if err := env.Sleep(ctx, max(r.after, time.Second)); err != nil {
			return "", err
		}
	}
}

// post sends a JSON body (a string is sent as it is) and returns the answer's body.
func post(ctx context.Context, c *http.Client, path, key string, body any) (string, error) {
	data, ok := body.(string)
	if !ok {
		b, err := json.Marshal(body)
		if err != nil {
			return "", err
		}
		data = string(b)
	}
	req, err := http.NewRequestWithContext(ctx, "POST", services.BaseURL+path, strings.NewReader(data))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", &retryable{err: err}
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	switch {
	case err != nil:
		return "", &retryable{err: err}
	case resp.StatusCode == 429:
		ms := 1000
		fmt.Sscan(resp.Header.Get("retry-after-ms"), &ms)
		return "", &retryable{after: time.Duration(ms) * time.Millisecond, err: errors.New(resp.Status)}
	case resp.StatusCode >= 500:
		return "", &retryable{err: errors.New(resp.Status)}
	case resp.StatusCode >= 300:
		return "", fmt.Errorf("%s %s: %s", path, resp.Status, out)
	}
	return string(out), nil
}

// save writes the conversation whole: to a temporary file, fsynced, renamed over the old one,
// and the directory fsynced.
func save(fsys afero.Fs, conv []message) error {
	data, err := json.Marshal(conv)
	if err != nil {
		return err
	}
	f, err := fsys.Create("conv.json.tmp")
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil || f.Sync() != nil || f.Close() != nil {
		return errors.New("writing conv.json.tmp failed")
	}
	if err := fsys.Rename("conv.json.tmp", "conv.json"); err != nil {
		return err
	}
	d, err := fsys.Open(".")
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func config(t *testing.T) services.Config {
	t.Helper()
	c, err := provider.Parse([]byte(cassette), "buyer.json")
	if err != nil {
		t.Fatal(err)
	}
	route, err := rest.ParseRoute("POST /v1/purchase_orders=idempotent-by-header:Idempotency-Key,name=purchase_orders")
	if err != nil {
		t.Fatal(err)
	}
	return services.Config{Cassette: c, Routes: []rest.Route{route}}
}

func runner(t *testing.T, b buyer) *sim.Runner {
	t.Helper()
	target := services.Wrap(b, config(t))
	rn, err := sim.NewRunner(func() harness.Target { return target }, sim.Options{Name: fmt.Sprintf("buyer%+v", b)})
	if err != nil {
		t.Fatal(err)
	}
	return rn
}

// every lists kind at every beat of the golden run where it fires.
func every(t *testing.T, rn *sim.Runner, kind faults.Kind) []faults.Schedule {
	t.Helper()
	g, err := rn.Golden(nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []faults.Schedule
	alt := false
	for k := range g.Len() {
		b := g.Beat(k)
		if info, _ := kind.Info(); b.Admits(kind) && (info.Listed != faults.AfterAlternative || alt) {
			out = append(out, faults.Schedule{{Kind: kind, Beat: k}})
		}
		alt = alt || b.Kind == sim.BeatModel && b.Alt
	}
	return out
}

// An agent written against the model's HTTP API and a REST service, through the services'
// client, passes a crash, every fault of the model and of the tools at every beat where it
// fires, and a model that answers otherwise when asked again after a crash.
func TestAgentOverHTTPPassesEveryFault(t *testing.T) {
	rn := runner(t, buyer{})
	g, _ := rn.Golden(nil)
	if got := strings.Join(g.Trace(), " | "); !strings.Contains(got, "model chat.completions turn 1") || !strings.Contains(got, "tool purchase_orders key=order-2 applied") {
		t.Fatalf("the golden run's beats: %s", got)
	}
	n := 0
	for _, kind := range []faults.Kind{faults.Kill, faults.ModelRateLimit, faults.ModelError, faults.ModelHang, faults.ModelCut, faults.ModelDiverge, faults.ToolTransient, faults.ToolAmbiguous} {
		for _, s := range every(t, rn, kind) {
			n++
			if c := rn.Run(s); c.Verdict.Outcome != oracle.Pass {
				t.Errorf("%s", c)
			}
		}
	}
	if n < 8 {
		t.Fatalf("only %d cases", n)
	}
}

// Keyed by the model's tool-call id, an order is filed twice when the agent, resumed after the
// order was filed and before its checkpoint, asks the model again: the answer comes with a
// fresh id, as a provider's does.
func TestKeyByToolCallIDFilesTwice(t *testing.T) {
	for _, b := range []buyer{{wholeTurns: true}, {keyByCallID: true}, {keyByCallID: true, wholeTurns: true}} {
		rn := runner(t, b)
		failed := 0
		for _, s := range every(t, rn, faults.Kill) {
			if c := rn.Run(s); c.Breaks("no-duplicate-effects") {
				failed++
			}
		}
		if want := b.keyByCallID && b.wholeTurns; (failed > 0) != want {
			t.Errorf("%+v: %d kills filed an order twice; want some: %v", b, failed, want)
		}
	}
}

// A request the cassette does not answer makes the run undecided: the golden run is refused,
// naming the diff, rather than answered with a near miss.
func TestUnansweredRequestIsUndecided(t *testing.T) {
	cfg := config(t)
	cfg.Cassette.Interactions = cfg.Cassette.Interactions[:1] // no answer after the tool result
	target := services.Wrap(buyer{}, cfg)
	_, err := sim.NewRunner(func() harness.Target { return target }, sim.Options{Name: "buyer"})
	if err == nil || !strings.Contains(err.Error(), "cannot be judged") || !strings.Contains(err.Error(), "cassette") {
		t.Fatalf("NewRunner = %v, want the golden run refused as undecided", err)
	}
}

// The client serves only the services' reserved host: no request of a Go target leaves the
// process.
func TestClientServesOnlyItsHost(t *testing.T) {
	target := services.Wrap(harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
		_, err := services.Client(env).Get("http://example.com/")
		env.Mark("asked")
		return fmt.Sprint(err), nil
	}}, services.Config{})
	rn, err := sim.NewRunner(func() harness.Target { return target }, sim.Options{Name: "escape"})
	if err != nil {
		t.Fatal(err)
	}
	if c := rn.Run(nil); !strings.Contains(fmt.Sprint(c.Result), "not a chaoskit service") {
		t.Fatalf("result %v", c.Result)
	}
}
