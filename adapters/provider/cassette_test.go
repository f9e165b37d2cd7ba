package provider_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"

	"github.com/chaoskit/chaoskit/adapters/provider"
)

// replyGen draws replies as a person or a recording writes them.
func replyGen() *rapid.Generator[provider.Reply] {
	return rapid.Custom(func(t *rapid.T) provider.Reply {
		r := provider.Reply{Text: rapid.StringMatching(`[ -~ü—]{0,30}`).Draw(t, "text")}
		for i := range rapid.IntRange(0, 3).Draw(t, "calls") {
			args := map[string]any{"sku": rapid.StringMatching(`[A-Z]-[0-9]`).Draw(t, "sku"), "qty": rapid.IntRange(0, 99).Draw(t, "qty")}
			raw, _ := json.Marshal(args)
			if rapid.Bool().Draw(t, "not-json") {
				raw, _ = json.Marshal(`{"sku": broken`)
			}
			r.ToolCalls = append(r.ToolCalls, provider.ToolCall{Name: fmt.Sprintf("tool_%d", i), Arguments: raw})
		}
		r.Finish = rapid.SampledFrom([]string{"", "stop", "tool_calls", "length"}).Draw(t, "finish")
		if rapid.Bool().Draw(t, "usage") {
			r.Usage = &provider.Usage{InputTokens: rapid.IntRange(0, 1e6).Draw(t, "in"), OutputTokens: rapid.IntRange(0, 1e4).Draw(t, "out")}
		}
		r.Model = rapid.SampledFrom([]string{"", "gpt-4o-mini-2024-07-18"}).Draw(t, "model")
		return r
	})
}

// matchGen draws matches: positional, on content, and whole recorded requests.
func matchGen() *rapid.Generator[provider.Match] {
	return rapid.Custom(func(t *rapid.T) provider.Match {
		var m provider.Match
		switch rapid.IntRange(0, 3).Draw(t, "kind") {
		case 0:
			m.Nth = rapid.IntRange(1, 50).Draw(t, "nth")
		case 1:
			m.Turn = rapid.IntRange(1, 9).Draw(t, "turn")
			m.LastUserContains = rapid.StringMatching(`[a-z ]{1,10}`).Draw(t, "user")
			m.ToolResultOf = rapid.SampledFrom([]string{"", "create_po"}).Draw(t, "of")
			m.API = rapid.SampledFrom([]provider.API{"", provider.Responses}).Draw(t, "api")
		case 2:
			m.Includes = json.RawMessage(fmt.Sprintf(`{"model":%q}`, rapid.StringMatching(`[a-z0-9-]{1,12}`).Draw(t, "model")))
		case 3:
			user := rapid.StringMatching(`[ -~]{1,40}`).Draw(t, "asked")
			body, _ := json.Marshal(map[string]any{"model": "gpt-4o-mini", "temperature": 0.5,
				"messages": []any{map[string]any{"role": "user", "content": user}},
				"tools":    []any{map[string]any{"type": "function", "function": map[string]any{"name": "create_po", "parameters": map[string]any{"type": "object", "required": []string{"sku"}}}}}})
			req, err := provider.Normalize(provider.ChatCompletions, body)
			if err != nil {
				t.Fatal(err)
			}
			m.Request = req
		}
		return m
	})
}

// TestCassetteRoundTrip: a cassette encoded and parsed back is the same cassette, and encodes
// to the same bytes again.
func TestCassetteRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := &provider.Cassette{Version: provider.CassetteVersion}
		if rapid.Bool().Draw(t, "models") {
			c.Models = []string{"o3", "gpt-4o"}
		}
		for range rapid.IntRange(0, 5).Draw(t, "interactions") {
			in := provider.Interaction{
				Name:         rapid.StringMatching(`[a-z -]{0,12}`).Draw(t, "name"),
				Match:        matchGen().Draw(t, "match"),
				Answer:       replyGen().Draw(t, "answer"),
				Alternatives: rapid.SliceOfN(replyGen(), 0, 2).Draw(t, "alternatives"),
			}
			c.Interactions = append(c.Interactions, in)
		}
		var first bytes.Buffer
		if err := c.Encode(&first); err != nil {
			t.Fatal(err)
		}
		got, err := provider.Parse(first.Bytes(), "drawn.json")
		if err != nil {
			t.Fatalf("%v\n%s", err, first.Bytes())
		}
		if d := cmp.Diff(c, got, cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("parsed back differently (-encoded +parsed):\n%s", d)
		}
		var second bytes.Buffer
		got.Encode(&second)
		if !bytes.Equal(first.Bytes(), second.Bytes()) {
			t.Fatalf("encoded differently the second time:\n%s\n%s", first.Bytes(), second.Bytes())
		}
	})
}

// TestSaveLoad: Save writes a file Load reads back.
func TestSaveLoad(t *testing.T) {
	c := mustParse(t, `{"interactions":[{"name":"plan","match":{"turn":1},"answer":{"text":"<ok> & done","tool_calls":[{"name":"create_po","arguments":{"b":1,"a":2}}]}}]}`)
	path := filepath.Join(t.TempDir(), "cassette.json")
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	got, err := provider.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(c, got); d != "" {
		t.Errorf("loaded differently:\n%s", d)
	}
	if string(got.Interactions[0].Answer.ToolCalls[0].Arguments) != `{"b":1,"a":2}` {
		t.Errorf("arguments lost their order: %s", got.Interactions[0].Answer.ToolCalls[0].Arguments)
	}
	if _, err := provider.Load(filepath.Join(t.TempDir(), "missing.json")); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("loading a missing file: %v", err)
	}
}

// TestParseErrors: a malformed cassette is refused with an error naming the file and the field.
func TestParseErrors(t *testing.T) {
	cases := []struct{ text, want string }{
		{`[]`, "c.json: json: cannot unmarshal array"},
		{`{"version":"chaoskit.cassette/v2","interactions":[]}`, `c.json: version: "chaoskit.cassette/v2"`},
		{`{"interaction":[]}`, `c.json: json: unknown field "interaction"`},
		{`{}`, "c.json: interactions: missing"},
		{`{"interactions":[{"match":{},"answer":{"text":"x"}}]}`, "c.json: interactions[0].match: needs at least one of nth, turn"},
		{`{"interactions":[{"match":{"turn":1},"answer":{"text":"x"}},{"match":{"last_user_contain":"x"},"answer":{"text":"x"}}]}`, `c.json: interactions[1]: json: unknown field "last_user_contain"`},
		{`{"interactions":[{"match":{"nth":-1},"answer":{"text":"x"}}]}`, "c.json: interactions[0].match.nth: -1"},
		{`{"interactions":[{"match":{"nth":"1"},"answer":{"text":"x"}}]}`, "c.json: interactions[0]: json: cannot unmarshal string into Go struct field Match.match.nth of type int"},
		{`{"interactions":[{"match":{"api":"completions"},"answer":{"text":"x"}}]}`, `c.json: interactions[0].match.api: "completions" is not one of`},
		{`{"interactions":[{"match":{"includes":[1]},"answer":{"text":"x"}}]}`, "c.json: interactions[0].match.includes: want a JSON object"},
		{`{"interactions":[{"match":{"turn":1},"answer":{"tool_calls":[{"arguments":{}}]}}]}`, "c.json: interactions[0].answer.tool_calls[0].name: missing"},
		{`{"interactions":[{"match":{"turn":1},"answer":{"tool_calls":[{"id":"call_1","name":"t"}]}}]}`, "c.json: interactions[0].answer.tool_calls[0].id: an answer carries no ids"},
		{`{"interactions":[{"match":{"turn":1},"answer":{"text":"x","finish":"end_turn"}}]}`, `c.json: interactions[0].answer.finish: "end_turn" is not one of`},
		{`{"interactions":[{"match":{"turn":1},"answer":{"text":"x"},"alternatives":[{"text":"y","usage":{"input_tokens":-1,"output_tokens":1}}]}]}`, "c.json: interactions[0].alternatives[0].usage: token counts must not be negative"},
		{`{"interactions":[]} {}`, "c.json: data after the JSON value"},
	}
	for _, c := range cases {
		_, err := provider.Parse([]byte(c.text), "c.json")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got %v\nwant an error containing %q", c.text, err, c.want)
		}
	}
}

// TestLookup: the first interaction whose conditions all hold answers; each condition reads
// the request as documented.
func TestLookup(t *testing.T) {
	c := mustParse(t, `{"interactions":[
		{"name":"second of create_po","match":{"turn":2,"tool_result_of":"create_po","tool_result_contains":"PO-7"},"answer":{"text":"po"}},
		{"name":"responses only","match":{"api":"responses","last_user_contains":"restock"},"answer":{"text":"responses"}},
		{"name":"includes","match":{"includes":{"messages":[{"role":"tool","content":"sent"}],"params":{"temperature":0.20}}},"answer":{"text":"includes"}},
		{"name":"third","match":{"nth":3},"answer":{"text":"third"}},
		{"name":"restock","match":{"model":"gpt-4o-mini","last_user_contains":"restock A"},"answer":{"text":"restock"}}]}`)
	second := normalize(t, provider.ChatCompletions, fmt.Sprintf(chatSecond, "a", "b", "", ""))
	first := normalize(t, provider.ChatCompletions, fmt.Sprintf(chatRequest, ""))
	notPO := normalize(t, provider.ChatCompletions, strings.Replace(fmt.Sprintf(chatSecond, "a", "b", "", ""), "PO-7", "PO-8", 1))
	cases := []struct {
		name string
		api  provider.API
		req  *provider.Request
		nth  int
		want string
	}{
		{"tool result", provider.ChatCompletions, second, 1, "po"},
		{"api", provider.Responses, first, 1, "responses"},
		{"includes", provider.ChatCompletions, notPO, 1, "includes"},
		{"nth", provider.ChatCompletions, first, 3, "third"},
		{"content", provider.Messages, first, 1, "restock"},
	}
	for _, tc := range cases {
		in, err := c.Lookup(tc.api, tc.req, tc.nth)
		if err != nil || in.Answer.Text != tc.want {
			t.Errorf("%s: got %+v, %v; want the answer %q", tc.name, in, err, tc.want)
		}
	}
	other := normalize(t, provider.ChatCompletions, strings.Replace(fmt.Sprintf(chatRequest, ""), "restock A-1", "cancel A-1", 1))
	_, err := c.Lookup(provider.ChatCompletions, other, 1)
	var nf *provider.NotFound
	if !errors.As(err, &nf) || nf.Nearest != "" || len(nf.Rules) != 5 {
		t.Fatalf("a request no rule answers: %v", err)
	}
	golden(t, "lookup-notfound.txt", []byte(err.Error()+"\n"))
	var empty *provider.Cassette
	if _, err := empty.Lookup(provider.ChatCompletions, first, 1); !errors.As(err, &nf) || !strings.Contains(err.Error(), "the cassette has no interactions") {
		t.Errorf("a nil cassette: %v", err)
	}
}
