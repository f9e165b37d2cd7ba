package provider_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/adapters/provider"
)

// The requests the wire tests send, one per format, streamed or not.
const (
	chatRequest = `{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You restock."},{"role":"user","content":"restock A-1"}],
		"tools":[{"type":"function","function":{"name":"create_po","parameters":{"type":"object"}}}],"tool_choice":"auto"%s}`
	responsesRequest = `{"model":"gpt-4o-mini","instructions":"You restock.","input":[{"role":"user","content":"restock A-1"}],
		"tools":[{"type":"function","name":"create_po","parameters":{"type":"object"},"strict":true}],"store":false%s}`
	messagesRequest = `{"model":"claude-sonnet-4-5","max_tokens":1024,"system":"You restock.","messages":[{"role":"user","content":"restock A-1"}],
		"tools":[{"name":"create_po","input_schema":{"type":"object"}}]%s}`
)

// formatCase is one wire format: where it is served and its request.
type formatCase struct {
	name, path, request string
	headers             []string
}

var formatCases = []formatCase{
	{"chat", "/v1/chat/completions", chatRequest, nil},
	{"responses", "/v1/responses", responsesRequest, nil},
	{"messages", "/v1/messages", messagesRequest, []string{"anthropic-version", "2023-06-01", "x-api-key", "test-key"}},
}

// stream is the extra request members that ask for a stream (Chat: with usage).
func (f formatCase) body(stream bool) string {
	switch {
	case !stream:
		return fmt.Sprintf(f.request, "")
	case f.name == "chat":
		return fmt.Sprintf(f.request, `,"stream":true,"stream_options":{"include_usage":true}`)
	}
	return fmt.Sprintf(f.request, `,"stream":true`)
}

// replies are the answers each format is asked to write.
var replies = map[string]*provider.Reply{
	"text": {Text: "Hello there, <world> & all."},
	"tools": {Text: "Ordering now.", ToolCalls: []provider.ToolCall{
		{Name: "create_po", Arguments: json.RawMessage(`{"sku":"A-1","qty":3}`)},
		{Name: "notify", Arguments: json.RawMessage(`{"to":"ops","text":"restocking A-1 — ünïcode"}`)},
	}},
	"length": {Text: "A long answer cut at", Finish: "length", Usage: &provider.Usage{InputTokens: 30, OutputTokens: 5}},
}

// TestAnswers writes each reply in each format, whole and streamed, against the golden bytes.
func TestAnswers(t *testing.T) {
	for _, f := range formatCases {
		for _, kind := range []string{"text", "tools", "length"} {
			for _, stream := range []bool{false, true} {
				name := f.name + "-" + kind
				if stream {
					name += "-stream"
				}
				t.Run(name, func(t *testing.T) {
					b := &fixed{answer: &provider.Answer{Reply: replies[kind], Seed: 7, Created: created}}
					srv := serve(t, b, nil)
					golden(t, name+".http", post(t, srv, "POST", f.path, f.body(stream), f.headers...).dump())
				})
			}
		}
	}
}

// TestSameSeedSameBytes: an answer is a function of the request, the reply, the seed and the
// time; another seed gives other ids.
func TestSameSeedSameBytes(t *testing.T) {
	for _, f := range formatCases {
		body := func(seed uint64) string {
			b := &fixed{answer: &provider.Answer{Reply: replies["tools"], Seed: seed, Created: created}}
			return string(post(t, serve(t, b, nil), "POST", f.path, f.body(true), f.headers...).dump())
		}
		if body(1) != body(1) {
			t.Errorf("%s: the same seed gave different answers", f.name)
		}
		if body(1) == body(2) {
			t.Errorf("%s: seeds 1 and 2 gave the same answer, ids and all", f.name)
		}
	}
}

// TestFaults writes each fault as each provider sends it, against the golden bytes.
func TestFaults(t *testing.T) {
	faults := []struct {
		name string
		err  error
	}{
		{"ratelimited", &provider.RateLimited{RetryAfter: 1500 * time.Millisecond}},
		{"server", provider.ErrServer},
		{"unavailable", fmt.Errorf("the simulation's fault: %w", provider.ErrUnavailable)},
		{"contextlength", provider.ErrContextLength},
		{"other", errors.New("the world's database is gone")},
	}
	for _, f := range formatCases {
		for _, fault := range faults {
			t.Run(f.name+"-"+fault.name, func(t *testing.T) {
				srv := serve(t, &fixed{err: fault.err}, nil)
				golden(t, f.name+"-fault-"+fault.name+".http", post(t, srv, "POST", f.path, f.body(false), f.headers...).dump())
			})
		}
	}
}

// TestCut: a cut stream ends after the events asked for without its last ones; a cut whole
// answer has its headers and half its body; both drop the connection.
func TestCut(t *testing.T) {
	for _, f := range formatCases {
		for _, stream := range []bool{false, true} {
			name := f.name + "-cut"
			if stream {
				name += "-stream"
			}
			t.Run(name, func(t *testing.T) {
				cut := &provider.Cut{Answer: &provider.Answer{Reply: replies["tools"], Seed: 7, Created: created}, AfterEvents: 3}
				e := post(t, serve(t, &fixed{err: cut}, nil), "POST", f.path, f.body(stream), f.headers...)
				if !e.dropped {
					t.Errorf("the connection was not dropped")
				}
				golden(t, name+".http", e.dump())
			})
		}
	}
	t.Run("past-the-end", func(t *testing.T) {
		cut := &provider.Cut{Answer: &provider.Answer{Reply: replies["text"], Seed: 7}, AfterEvents: 1000}
		e := post(t, serve(t, &fixed{err: cut}, nil), "POST", "/v1/chat/completions", formatCases[0].body(true))
		if !e.dropped || strings.Contains(string(e.body), "[DONE]") {
			t.Errorf("a cut past the end sent the whole stream:\n%s", e.dump())
		}
	})
}

// TestHang: a Backend that waits until the client gives up gets its context cancelled, and
// nothing is written.
func TestHang(t *testing.T) {
	done := make(chan error, 1)
	b := provider.BackendFunc(func(ctx context.Context, _ *provider.Call) (*provider.Answer, error) {
		<-ctx.Done()
		done <- ctx.Err()
		return nil, ctx.Err()
	})
	srv := serve(t, b, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/chat/completions", strings.NewReader(formatCases[0].body(false)))
	if _, err := srv.Client().Do(req); err == nil {
		t.Fatal("a hung request got an answer")
	}
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the Backend's context ended with %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the Backend's context was not cancelled when the client gave up")
	}
}

// TestRefusals: requests the stand-in does not serve get the provider's 400 or 404, naming why.
func TestRefusals(t *testing.T) {
	cases := []struct {
		name, method, path, body string
		headers                  []string
	}{
		{"previous-response-id", "POST", "/v1/responses", `{"model":"gpt-4o-mini","input":"hi","previous_response_id":"resp_123"}`, nil},
		{"item-reference", "POST", "/v1/responses", `{"model":"gpt-4o-mini","input":[{"type":"item_reference","id":"msg_1"}]}`, nil},
		{"no-messages", "POST", "/v1/chat/completions", `{"model":"gpt-4o-mini"}`, nil},
		{"not-json", "POST", "/v1/messages", `{"model":`, []string{"anthropic-version", "2023-06-01"}},
		{"unknown-path", "POST", "/v1/embeddings", `{}`, nil},
		{"get-chat", "GET", "/v1/chat/completions", ``, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := &fixed{}
			golden(t, "refusal-"+c.name+".http", post(t, serve(t, b, nil), c.method, c.path, c.body, c.headers...).dump())
			if len(b.seen()) != 0 {
				t.Errorf("a refused request reached the Backend")
			}
		})
	}
}

// TestNotFound: a request the cassette cannot answer, refused by the Backend with the call's
// Miss, is a 400 whose message holds the diff against the nearest recorded request.
func TestNotFound(t *testing.T) {
	c := mustParse(t, `{"interactions":[
		{"name":"plan","match":{"request":{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You restock."},{"role":"user","content":"restock B-2"}],
			"tools":[{"name":"create_po","parameters":{"type":"object"}}],"tool_choice":"auto"}},"answer":{"text":"ok"}},
		{"name":"later","match":{"turn":3},"answer":{"text":"done"}}]}`)
	e := post(t, serve(t, &fixed{}, c), "POST", "/v1/chat/completions", formatCases[0].body(false))
	golden(t, "chat-notfound.http", e.dump())
	var body struct{ Error struct{ Message string } }
	json.Unmarshal(e.body, &body)
	for _, want := range []string{`-       "content": "restock B-2"`, `+       "content": "restock A-1"`, `interactions[1] "later": turn is 1, not 3`} {
		if !strings.Contains(body.Error.Message, want) {
			t.Errorf("the refusal does not say %q:\n%s", want, body.Error.Message)
		}
	}
}

// TestModels: GET /v1/models lists the cassette's models and Options.Models, as each provider
// lists them.
func TestModels(t *testing.T) {
	c := mustParse(t, `{"models":["o3"],"interactions":[{"match":{"model":"gpt-4o-mini"},"answer":{"text":"hi","model":"gpt-4o-mini-2024-07-18"}}]}`)
	srv := serve(t, &fixed{}, c)
	golden(t, "models-openai.http", post(t, srv, "GET", "/v1/models", "").dump())
	golden(t, "models-anthropic.http", post(t, srv, "GET", "/v1/models", "", "anthropic-version", "2023-06-01", "x-api-key", "k").dump())
	golden(t, "models-one.http", post(t, srv, "GET", "/v1/models/o3", "").dump())
	golden(t, "models-unknown.http", post(t, srv, "GET", "/v1/models/gpt-5", "").dump())
}

// TestCall: the Backend's Call carries the API, the normalized request and digest, the stream
// flag, the key, the place among distinct requests, how often it was asked, and the proposal.
func TestCall(t *testing.T) {
	c := mustParse(t, `{"interactions":[{"match":{"nth":1},"answer":{"text":"first"},"alternatives":[{"text":"other"}]}]}`)
	b := &fixed{}
	srv := serve(t, b, c)
	post(t, srv, "POST", "/v1/chat/completions", formatCases[0].body(false))
	post(t, srv, "POST", "/v1/chat/completions", formatCases[0].body(true))
	post(t, srv, "POST", "/v1/messages", formatCases[2].body(false), formatCases[2].headers...)
	calls := b.seen()
	if len(calls) != 3 {
		t.Fatalf("%d calls, want 3", len(calls))
	}
	first, again, other := calls[0], calls[1], calls[2]
	if first.API != provider.ChatCompletions || first.Stream || !again.Stream || first.Key != "test-key" || other.Key != "test-key" || other.API != provider.Messages {
		t.Errorf("api, stream or key wrong: %+v / %+v / %+v", first, again, other)
	}
	if first.Digest != again.Digest || first.Nth != 1 || again.Nth != 1 || first.Asked != 0 || again.Asked != 1 || other.Nth != 2 {
		t.Errorf("nth and asked: first %d/%d, again %d/%d, other %d/%d", first.Nth, first.Asked, again.Nth, again.Asked, other.Nth, other.Asked)
	}
	if first.Proposal == nil || first.Proposal.Answer.Text != "first" || first.Proposal.Alternatives[0].Text != "other" || first.Miss != nil {
		t.Errorf("the first call's proposal: %+v, miss %v", first.Proposal, first.Miss)
	}
	var nf *provider.NotFound
	if other.Proposal != nil || !errors.As(other.Miss, &nf) || nf.Nth != 2 {
		t.Errorf("the third call (nth 2) should miss: %+v, %v", other.Proposal, other.Miss)
	}
	if first.Seed(0) == again.Seed(0) || first.Seed(0) != first.Seed(0) {
		t.Errorf("Call.Seed must differ when the request is asked again and be stable otherwise")
	}
}
