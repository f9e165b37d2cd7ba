package provider_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/adapters/provider"
)

// A Handler serves an agent's model from a cassette: point the SDK's OPENAI_BASE_URL at the
// server's URL with /v1.
func Example() {
	c, err := provider.Parse([]byte(`{"interactions":[
		{"match":{"turn":1,"last_user_contains":"restock"},"answer":{"tool_calls":[{"name":"create_po","arguments":{"sku":"A-1","qty":3}}]}}]}`), "inline.json")
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(provider.New(provider.Replay{Seed: 1}, c, provider.Options{}))
	defer srv.Close()

	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"restock A-1"}]}`))
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var body struct {
		Choices []struct {
			Message struct {
				ToolCalls []struct {
					ID       string
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			}
			FinishReason string `json:"finish_reason"`
		}
	}
	json.NewDecoder(resp.Body).Decode(&body)
	call := body.Choices[0].Message.ToolCalls[0]
	fmt.Println(resp.Status, body.Choices[0].FinishReason, call.Function.Name, call.Function.Arguments, strings.HasPrefix(call.ID, "call_"))
	// Output: 200 OK tool_calls create_po {"sku":"A-1","qty":3} true
}

// A Backend decides what each request gets: here the first ask is rate limited, and the same
// request asked again gets the cassette's answer.
func ExampleBackend() {
	c, _ := provider.Parse([]byte(`{"interactions":[{"match":{"nth":1},"answer":{"text":"Hello."}}]}`), "inline.json")
	b := provider.BackendFunc(func(ctx context.Context, call *provider.Call) (*provider.Answer, error) {
		if call.Asked == 0 {
			return nil, &provider.RateLimited{RetryAfter: 1500 * time.Millisecond}
		}
		return &provider.Answer{Reply: &call.Proposal.Answer, Seed: call.Seed(42)}, nil
	})
	srv := httptest.NewServer(provider.New(b, c, provider.Options{}))
	defer srv.Close()
	for range 2 {
		resp, _ := http.Post(srv.URL+"/v1/responses", "application/json", strings.NewReader(`{"model":"gpt-4o-mini","input":"hi"}`))
		resp.Body.Close()
		fmt.Println(resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get("Retry-After-Ms"))
	}
	// Output:
	// 429 2 1500
	// 200
}

// Normalize reads a request as a cassette matches it: the ids of earlier tool calls become
// placeholders, so the fresh ids of another run ask the same request.
func ExampleNormalize() {
	body := func(id string) string {
		return `{"model":"gpt-4o-mini","stream":true,"user":"u-1","messages":[
			{"role":"user","content":"restock A-1"},
			{"role":"assistant","tool_calls":[{"id":"` + id + `","type":"function","function":{"name":"create_po","arguments":"{\"sku\": \"A-1\"}"}}]},
			{"role":"tool","tool_call_id":"` + id + `","content":"PO-7"}]}`
	}
	a, _ := provider.Normalize(provider.ChatCompletions, []byte(body("call_abc")))
	b, _ := provider.Normalize(provider.ChatCompletions, []byte(body("call_xyz")))
	fmt.Println(string(a.JSON()))
	fmt.Println(a.Digest() == b.Digest(), a.Turn())
	// Output:
	// {"model":"gpt-4o-mini","messages":[{"role":"user","content":"restock A-1"},{"role":"assistant","tool_calls":[{"id":"call#1","name":"create_po","arguments":{"sku":"A-1"}}]},{"role":"tool","content":"PO-7","tool_call_id":"call#1"}]}
	// true 2
}

// The same seed gives the same ids, each in its provider's format.
func ExampleNewIDs() {
	g := provider.NewIDs(1)
	fmt.Println(g.Next(provider.ChatCompletionID))
	fmt.Println(g.Next(provider.CallID))
	fmt.Println(g.Next(provider.ToolUseID))
	fmt.Println(provider.NewIDs(1).Next(provider.ChatCompletionID))
	// Output:
	// chatcmpl-amhRgoeVXWrrPbVj2ok3tm3b34O4K
	// call_4NBuVRWuQjcI6JWhVTq4IsZV
	// toolu_01URfXj0kE1dP2X4lyKn5239
	// chatcmpl-amhRgoeVXWrrPbVj2ok3tm3b34O4K
}

// Lookup answers a request from the first interaction whose match holds, or says why none
// does.
func ExampleCassette_Lookup() {
	c, _ := provider.Parse([]byte(`{"interactions":[{"name":"after the order","match":{"turn":2,"tool_result_of":"create_po"},"answer":{"text":"Done."}}]}`), "inline.json")
	req, _ := provider.Normalize(provider.Responses, []byte(`{"model":"gpt-4o-mini","input":"restock A-1"}`))
	_, err := c.Lookup(provider.Responses, req, 1)
	fmt.Println(err)
	// Output:
	// provider: no answer in the cassette for this responses request (nth 1, turn 1, model "gpt-4o-mini", digest b619955aad03)
	// rules that do not hold:
	//   interactions[0] "after the order": turn is 1, not 2
}

// A Recorder between the agent and a real provider writes the cassette; here the provider is
// a fake.
func ExampleRecorder() {
	truth, _ := provider.Parse([]byte(`{"interactions":[{"match":{"turn":1},"answer":{"text":"Hi from upstream."}}]}`), "truth.json")
	upstream := httptest.NewServer(provider.New(provider.Replay{}, truth, provider.Options{}))
	defer upstream.Close()
	rec := provider.NewRecorder(provider.RecordOptions{Upstream: upstream.URL + "/v1", Key: "sk-real"})
	proxy := httptest.NewServer(rec)
	defer proxy.Close()

	resp, _ := http.Post(proxy.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"stream":true}`))
	io.ReadAll(resp.Body) // an answer is recorded before its end reaches the client
	resp.Body.Close()
	c, err := rec.Cassette()
	fmt.Println(err, len(c.Interactions), c.Interactions[0].Name, c.Interactions[0].Answer.Text)
	// Output: <nil> 1 chat.completions turn 1 Hi from upstream.
}
