package provider_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/chaoskit/chaoskit/adapters/provider"
)

// upstream is a fake provider: a Handler answering from its own cassette through backend,
// which records the credentials each request brought.
type upstream struct {
	*httptest.Server
	mu   sync.Mutex
	keys []string
}

// newUpstream serves h as the fake provider.
func newUpstream(t *testing.T, h http.Handler) *upstream {
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.keys = append(u.keys, r.Header.Get("Authorization")+r.Header.Get("X-Api-Key"))
		u.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(u.Close)
	return u
}

// recorder starts a Recorder to u with the key "real-key".
func recorder(t *testing.T, u *upstream) (*provider.Recorder, *httptest.Server) {
	rec := provider.NewRecorder(provider.RecordOptions{Upstream: u.URL + "/v1", Key: "real-key"})
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	return rec, srv
}

// TestRecord: the Recorder passes answers through as the provider sent them, with the real
// key upstream, and writes one interaction per distinct request, streams reassembled; the
// cassette then answers the same requests with the same replies.
func TestRecord(t *testing.T) {
	truth := mustParse(t, `{"interactions":[
		{"match":{"model":"claude-sonnet-4-5"},"answer":{"text":"Claude orders.","tool_calls":[{"name":"create_po","arguments":{"sku":"A-1","qty":3}}],"usage":{"input_tokens":40,"output_tokens":9}}},
		{"match":{"turn":1},"answer":{"text":"Ordering now.","tool_calls":[{"name":"create_po","arguments":{"sku":"A-1","qty":3}},{"name":"notify","arguments":{"to":"ops"}}],"model":"gpt-4o-mini-2024-07-18","usage":{"input_tokens":50,"output_tokens":30}}}]}`)
	u := newUpstream(t, provider.New(provider.Replay{Seed: 3}, truth, provider.Options{}))
	rec, proxy := recorder(t, u)
	for _, f := range formatCases {
		for _, stream := range []bool{false, true} {
			e := post(t, proxy, "POST", f.path, f.body(stream), f.headers...)
			direct := post(t, u.Server, "POST", f.path, f.body(stream), f.headers...)
			if e.status != 200 || e.dropped || len(e.body) == 0 || e.header.Get("Content-Type") != direct.header.Get("Content-Type") {
				t.Fatalf("%s through the recorder:\n%s", f.name, e.dump())
			}
		}
	}
	for i := 0; i < len(u.keys); i += 2 { // the even ones came through the recorder
		k, want := u.keys[i], "Bearer real-key"
		if formatCases[i/4].name == "messages" {
			want = "real-key" // as x-api-key, the client's Authorization dropped
		}
		if k != want {
			t.Errorf("upstream request %d carried %q, want %q", i, k, want)
		}
	}
	c, err := rec.Cassette()
	if err != nil {
		t.Fatal(err)
	}
	// One interaction per format: streamed or not, a request is the same request (the three
	// requests differ: Responses' tool is strict, Messages has max_tokens).
	if len(c.Interactions) != 3 {
		t.Fatalf("%d interactions, want 3:\n%s", len(c.Interactions), encode(t, c))
	}
	golden(t, "recorded.json", []byte(encode(t, c)))
	srv := serve(t, provider.Replay{Seed: 9}, c)
	for _, f := range formatCases {
		for _, stream := range []bool{false, true} {
			want := post(t, u.Server, "POST", f.path, f.body(stream), f.headers...)
			got := post(t, srv, "POST", f.path, f.body(stream), f.headers...)
			if got.status != 200 || !sameContent(f, want.body, got.body, stream) {
				t.Errorf("%s (stream %v) replayed differently:\n%s\nrecorded from:\n%s", f.name, stream, got.dump(), want.dump())
			}
		}
	}
}

// sameContent reports whether two answers of format f say the same once their ids are out.
func sameContent(f formatCase, a, b []byte, stream bool) bool {
	strip := func(s []byte) string {
		out := string(s)
		for _, prefix := range []string{"chatcmpl-", "resp_", "msg_", "fc_", "call_", "toolu_"} {
			for {
				i := strings.Index(out, `"`+prefix)
				if i < 0 {
					break
				}
				j := strings.IndexByte(out[i+1:], '"')
				out = out[:i] + `"ID` + out[i+1+j:]
			}
		}
		return out
	}
	return strip(a) == strip(b)
}

// encode is a cassette as Save writes it.
func encode(t *testing.T, c *provider.Cassette) string {
	var b strings.Builder
	if err := c.Encode(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestRecordAlternatives: a request the provider answers differently the next time is
// recorded once, the other answer as an alternative.
func TestRecordAlternatives(t *testing.T) {
	var mu sync.Mutex
	n := 0
	b := provider.BackendFunc(func(_ context.Context, call *provider.Call) (*provider.Answer, error) {
		mu.Lock()
		defer mu.Unlock()
		n++
		qty := []int{3, 3, 30}[min(n-1, 2)]
		return &provider.Answer{Reply: &provider.Reply{ToolCalls: []provider.ToolCall{{Name: "create_po", Arguments: json.RawMessage(fmt.Sprintf(`{"qty":%d}`, qty))}}}, Seed: uint64(n)}, nil
	})
	rec, proxy := recorder(t, newUpstream(t, provider.New(b, nil, provider.Options{})))
	for range 3 {
		post(t, proxy, "POST", "/v1/chat/completions", formatCases[0].body(true))
	}
	c, err := rec.Cassette()
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Interactions) != 1 || len(c.Interactions[0].Alternatives) != 1 || string(c.Interactions[0].Alternatives[0].ToolCalls[0].Arguments) != `{"qty":30}` {
		t.Errorf("want one interaction with the qty 30 answer as its alternative:\n%s", encode(t, c))
	}
}

// TestRecordUnrecorded: error answers pass through unrecorded, a cut stream is a problem the
// Recorder reports, and a request the stand-in would refuse is refused.
func TestRecordUnrecorded(t *testing.T) {
	var mu sync.Mutex
	var errs []error
	b := provider.BackendFunc(func(_ context.Context, call *provider.Call) (*provider.Answer, error) {
		mu.Lock()
		defer mu.Unlock()
		err := errs[0]
		errs = errs[1:]
		return nil, err
	})
	errs = []error{&provider.RateLimited{RetryAfter: 2e9}, &provider.Cut{Answer: &provider.Answer{Reply: &provider.Reply{Text: "partial answer"}}, AfterEvents: 2}}
	rec, proxy := recorder(t, newUpstream(t, provider.New(b, nil, provider.Options{})))
	e := post(t, proxy, "POST", "/v1/chat/completions", formatCases[0].body(true))
	if e.status != 429 || e.header.Get("Retry-After") != "2" {
		t.Errorf("the 429 did not pass through:\n%s", e.dump())
	}
	if e := post(t, proxy, "POST", "/v1/chat/completions", formatCases[0].body(true)); !e.dropped || strings.Contains(string(e.body), "[DONE]") {
		t.Errorf("the cut stream did not reach the client cut:\n%s", e.dump())
	}
	if e := post(t, proxy, "POST", "/v1/responses", `{"model":"m","input":"x","previous_response_id":"resp_1"}`); e.status != 400 {
		t.Errorf("previous_response_id was not refused:\n%s", e.dump())
	}
	c, err := rec.Cassette()
	if len(c.Interactions) != 0 || err == nil || !strings.Contains(err.Error(), "chat.completions answer") {
		t.Errorf("want nothing recorded and the cut reported; got %d interactions and %v", len(c.Interactions), err)
	}
}

// A chat stream as OpenAI sends one, ids and chunking its own: the first tool-call delta
// carries the id, arguments arrive in other pieces, usage comes last.
const openAIStream = `data: {"id":"chatcmpl-Bx1","object":"chat.completion.chunk","created":1750000000,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_34a54ae93c","choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_Zx9","type":"function","function":{"name":"create_po","arguments":""}}],"refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-Bx1","object":"chat.completion.chunk","created":1750000000,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_34a54ae93c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"sku\""}}]},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-Bx1","object":"chat.completion.chunk","created":1750000000,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_34a54ae93c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":": \"A-1\", \"qty\": 3}"}}]},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-Bx1","object":"chat.completion.chunk","created":1750000000,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_34a54ae93c","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_Yy8","type":"function","function":{"name":"notify","arguments":"{\"to\":\"ops\"}"}}]},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-Bx1","object":"chat.completion.chunk","created":1750000000,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_34a54ae93c","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}],"usage":null}

data: {"id":"chatcmpl-Bx1","object":"chat.completion.chunk","created":1750000000,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_34a54ae93c","choices":[],"usage":{"prompt_tokens":61,"completion_tokens":44,"total_tokens":105}}

data: [DONE]

`

// TestRecordProviderBytes: a stream in the provider's own chunking, not the package's, is
// reassembled into the reply it carries.
func TestRecordProviderBytes(t *testing.T) {
	u := newUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		fmt.Fprint(w, openAIStream)
	}))
	rec, proxy := recorder(t, u)
	if e := post(t, proxy, "POST", "/v1/chat/completions", formatCases[0].body(true)); string(e.body) != openAIStream {
		t.Errorf("the stream was not passed through as sent:\n%s", e.body)
	}
	c, err := rec.Cassette()
	if err != nil || len(c.Interactions) != 1 {
		t.Fatalf("%v, %d interactions", err, len(c.Interactions))
	}
	want := provider.Reply{
		ToolCalls: []provider.ToolCall{{Name: "create_po", Arguments: json.RawMessage(`{"sku":"A-1","qty":3}`)}, {Name: "notify", Arguments: json.RawMessage(`{"to":"ops"}`)}},
		Usage:     &provider.Usage{InputTokens: 61, OutputTokens: 44},
		Model:     "gpt-4o-mini-2024-07-18",
	}
	if d := cmp.Diff(want, c.Interactions[0].Answer); d != "" {
		t.Errorf("reassembled (-want +got):\n%s", d)
	}
}
