package provider_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/chaoskit/chaoskit/adapters/provider"
)

// Second turns of one conversation, in each format, with the tool-call ids (and Responses'
// item ids) as %[1]s, %[2]s and %[3]s.
const (
	chatSecond = `{"model":"gpt-4o-mini","messages":[
		{"role":"developer","content":"You restock."},
		{"role":"user","content":"restock A-1"},
		{"role":"assistant","content":"Ordering now.","tool_calls":[
			{"id":"%[1]s","type":"function","function":{"name":"create_po","arguments":"{\"sku\": \"A-1\", \"qty\": 3}"}},
			{"id":"%[2]s","type":"function","function":{"name":"notify","arguments":"{\"to\":\"ops\"}"}}]},
		{"role":"tool","tool_call_id":"%[1]s","content":"PO-7 created"},
		{"role":"tool","tool_call_id":"%[2]s","content":"sent"}],
		"tools":[{"type":"function","function":{"name":"create_po","parameters":{"type":"object"}}}],
		"temperature":0.2%[4]s}`
	responsesSecond = `{"model":"gpt-4o-mini","instructions":"You restock.","input":[
		{"role":"user","content":[{"type":"input_text","text":"restock A-1"}]},
		{"type":"message","role":"assistant","id":"msg_%[3]s","status":"completed","content":[{"type":"output_text","text":"Ordering now.","annotations":[]}]},
		{"type":"function_call","id":"fc_%[3]s","call_id":"%[1]s","name":"create_po","arguments":"{\"qty\":3,\"sku\":\"A-1\"}","status":"completed"},
		{"type":"function_call","id":"fc2_%[3]s","call_id":"%[2]s","name":"notify","arguments":"{\"to\":\"ops\"}","status":"completed"},
		{"type":"reasoning","id":"rs_%[3]s","summary":[]},
		{"type":"function_call_output","call_id":"%[1]s","output":"PO-7 created"},
		{"type":"function_call_output","call_id":"%[2]s","output":"sent"}],
		"tools":[{"type":"function","name":"create_po","parameters":{"type":"object"}}],
		"temperature":0.2%[4]s}`
	messagesSecond = `{"model":"gpt-4o-mini","system":[{"type":"text","text":"You restock.","cache_control":{"type":"ephemeral"}}],"messages":[
		{"role":"user","content":"restock A-1"},
		{"role":"assistant","content":[{"type":"text","text":"Ordering now."},
			{"type":"tool_use","id":"%[1]s","name":"create_po","input":{"sku":"A-1","qty":3}},
			{"type":"tool_use","id":"%[2]s","name":"notify","input":{"to":"ops"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"%[1]s","content":"PO-7 created"},
			{"type":"tool_result","tool_use_id":"%[2]s","content":[{"type":"text","text":"sent"}]}]}],
		"tools":[{"name":"create_po","input_schema":{"type":"object"}}],
		"temperature":0.2%[4]s}`
)

var seconds = map[provider.API]string{
	provider.ChatCompletions: chatSecond,
	provider.Responses:       responsesSecond,
	provider.Messages:        messagesSecond,
}

// normalize normalizes a request of api, failing the test on error.
func normalize(t interface {
	Helper()
	Fatalf(string, ...any)
}, api provider.API, body string) *provider.Request {
	t.Helper()
	r, err := provider.Normalize(api, []byte(body))
	if err != nil {
		t.Fatalf("%v\n%s", err, body)
	}
	return r
}

// TestNormalizedForms: each format's second turn normalizes to the golden form: the same
// conversation gives the same bytes whichever format carried it.
func TestNormalizedForms(t *testing.T) {
	var forms []string
	for _, api := range []provider.API{provider.ChatCompletions, provider.Responses, provider.Messages} {
		r := normalize(t, api, fmt.Sprintf(seconds[api], "call_a", "call_b", "x", ""))
		var b bytes.Buffer
		json.Indent(&b, r.JSON(), "", "  ")
		b.WriteString("\n")
		golden(t, "normalized-"+string(api)+".json", b.Bytes())
		forms = append(forms, string(r.JSON()))
	}
	if forms[0] != forms[1] || forms[0] != forms[2] {
		t.Errorf("the same conversation normalizes differently over Chat, Responses and Messages:\n%s\n%s\n%s", forms[0], forms[1], forms[2])
	}
}

// TestToolCallIDsOut: the ids of earlier tool calls and items, which are fresh in every answer,
// do not change a request's digest, in any format.
func TestToolCallIDsOut(t *testing.T) {
	for api, body := range seconds {
		want := normalize(t, api, fmt.Sprintf(body, "call_a", "call_b", "x", "")).Digest()
		rapid.Check(t, func(t *rapid.T) {
			id := rapid.StringMatching(`[A-Za-z0-9_]{1,40}`)
			a, b := id.Draw(t, "first"), id.Draw(t, "second")
			if a == b {
				t.Skip("the two calls need two ids")
			}
			got := normalize(t, api, fmt.Sprintf(body, a, b, id.Draw(t, "item"), "")).Digest()
			if got != want {
				t.Fatalf("%s: ids %q and %q changed the digest", api, a, b)
			}
		})
	}
}

// TestVolatileOut: stream flags, user, metadata, store, service tier and cache keys do not
// change a digest; what the model is asked does.
func TestVolatileOut(t *testing.T) {
	for api, body := range seconds {
		base := normalize(t, api, fmt.Sprintf(body, "a", "b", "x", "")).Digest()
		same := []string{
			`,"stream":true,"stream_options":{"include_usage":true}`,
			`,"user":"u-123","metadata":{"run":"7"},"store":true,"service_tier":"auto","prompt_cache_key":"k"`,
			`,"top_p":null`,
		}
		for _, extra := range same {
			if got := normalize(t, api, fmt.Sprintf(body, "a", "b", "x", extra)).Digest(); got != base {
				t.Errorf("%s: %s changed the digest", api, extra)
			}
		}
		differ := []string{`,"top_p":0.5`, `,"tool_choice":"required"`, `,"parallel_tool_calls":false`}
		if api == provider.Messages {
			differ = []string{`,"top_p":0.5`, `,"tool_choice":{"type":"any"}`, `,"tool_choice":{"type":"auto","disable_parallel_tool_use":true}`}
		}
		for _, extra := range differ {
			if got := normalize(t, api, fmt.Sprintf(body, "a", "b", "x", extra)).Digest(); got == base {
				t.Errorf("%s: %s did not change the digest", api, extra)
			}
		}
		changed := strings.Replace(fmt.Sprintf(body, "a", "b", "x", ""), "PO-7", "PO-8", 1)
		if normalize(t, api, changed).Digest() == base {
			t.Errorf("%s: another tool result did not change the digest", api)
		}
	}
}

// TestNormalizeErrors: a request that cannot be read says which field is at fault.
func TestNormalizeErrors(t *testing.T) {
	cases := []struct {
		api  provider.API
		body string
		want string
	}{
		{provider.ChatCompletions, `[]`, "request body is not a JSON object"},
		{provider.ChatCompletions, `{"model":"m","messages":[]}`, "messages: want a non-empty array"},
		{provider.ChatCompletions, `{"model":"m","messages":[{"role":"user","content":7}]}`, "messages[0].content: want a string or an array of parts"},
		{provider.ChatCompletions, `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"description":"d"}}]}`, "tools[0].function.name: missing"},
		{provider.ChatCompletions, `{"model":7,"messages":[{"role":"user","content":"x"}]}`, "model: want a string"},
		{provider.Responses, `{"model":"m"}`, "input: missing"},
		{provider.Responses, `{"model":"m","input":"x","conversation":"conv_1"}`, "conversation: chaoskit's model stand-in keeps no"},
		{provider.Messages, `{"model":"m","messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":5}]}]}`, "messages[0].content[0].content: want a string or an array of parts"},
		{provider.Messages, `{"model":"m","stream":"yes","messages":[]}`, "stream: want true or false"},
	}
	for _, c := range cases {
		_, err := provider.Normalize(c.api, []byte(c.body))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: error %v, want one saying %q", c.api, c.body, err, c.want)
		}
	}
}
