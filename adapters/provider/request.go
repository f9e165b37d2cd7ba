package provider

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
)

// API names one of the wire formats the stand-in serves.
type API string

// The wire formats.
const (
	// ChatCompletions is OpenAI's POST /v1/chat/completions.
	ChatCompletions API = "chat.completions"
	// Responses is OpenAI's POST /v1/responses (the OpenAI Agents SDK's default).
	Responses API = "responses"
	// Messages is Anthropic's POST /v1/messages.
	Messages API = "messages"
)

// valid reports whether a is one of the wire formats.
func (a API) valid() bool { return a == ChatCompletions || a == Responses || a == Messages }

// Request is a model request's semantic content, the same whichever wire format carried it:
// what a cassette matches on and what Digest hashes. Volatile fields are out (stream flags,
// user, metadata, store, service tier, prompt-cache keys, include), ids of earlier answers are
// out, and the tool-call ids that link a call to its result are replaced by placeholders call#1,
// call#2, … in order of first appearance, so a request asked again after a crash, which carries
// the fresh ids of the answers it got this time, normalizes to the same bytes.
type Request struct {
	// Model is the model asked for.
	Model string `json:"model"`
	// Messages is the conversation, system instructions first (Chat's system and developer
	// messages, Responses' instructions and Anthropic's system all become role "system").
	Messages []Message `json:"messages"`
	// Tools are the tools offered, in the request's order.
	Tools []Tool `json:"tools,omitempty"`
	// ToolChoice is "auto", "none", "required" (Anthropic's "any") or "tool:NAME"; a choice of
	// another shape stays in Params as "tool_choice".
	ToolChoice string `json:"tool_choice,omitempty"`
	// Params are the other fields of the request body that are not volatile, by their wire
	// name, canonical JSON (temperature, top_p, max_tokens, parallel_tool_calls, response
	// format, …); a null field is the same as an absent one.
	Params map[string]json.RawMessage `json:"params,omitempty"`
}

// Message is one turn of a normalized conversation.
type Message struct {
	// Role is "system", "user", "assistant" or "tool" (a tool's result); "item" holds a
	// Responses input item of a type the package does not know, verbatim in Parts.
	Role string `json:"role"`
	// Name is the message's name field (Chat), if any.
	Name string `json:"name,omitempty"`
	// Content is the text, text parts joined by a newline.
	Content string `json:"content,omitempty"`
	// Parts are the parts that are not text (images, files, …) as canonical JSON, in order.
	Parts []json.RawMessage `json:"parts,omitempty"`
	// ToolCalls are the calls an assistant turn asked for.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID is, for a tool result, the placeholder of the call it answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// IsError is Anthropic's is_error of a tool result.
	IsError bool `json:"is_error,omitempty"`
}

// ToolCall is one call of a tool: in a request's history, with its placeholder ID; in a reply,
// without an ID (every answer gets fresh ones).
type ToolCall struct {
	// ID is the placeholder (call#N) in a request; empty in a reply.
	ID string `json:"id,omitempty"`
	// Name is the tool's name.
	Name string `json:"name"`
	// Arguments are the call's arguments: a JSON value, or a JSON string holding arguments
	// that are not valid JSON (sent as they are).
	Arguments json.RawMessage `json:"arguments"`
}

// Tool is one tool a request offers.
type Tool struct {
	// Name is a function tool's name.
	Name string `json:"name,omitempty"`
	// Description is its description.
	Description string `json:"description,omitempty"`
	// Parameters is its JSON schema, canonical.
	Parameters json.RawMessage `json:"parameters,omitempty"`
	// Strict is OpenAI's strict flag.
	Strict bool `json:"strict,omitempty"`
	// Spec is a tool that is not a function (web search, code interpreter, …), verbatim and
	// canonical; the other fields are then empty.
	Spec json.RawMessage `json:"spec,omitempty"`
}

// JSON returns the request as canonical JSON: compact, in the field order of the types above,
// maps sorted. It is what Digest hashes.
func (r *Request) JSON() []byte {
	return mustMarshal(r)
}

// Digest returns the hex SHA-256 of the request's canonical JSON.
func (r *Request) Digest() string {
	sum := sha256.Sum256(r.JSON())
	return hex.EncodeToString(sum[:])
}

// Turn returns 1 and the number of assistant messages in the request: the model's turn in its
// conversation that this request asks for.
func (r *Request) Turn() int {
	n := 1
	for _, m := range r.Messages {
		if m.Role == "assistant" {
			n++
		}
	}
	return n
}

// lastUser returns the content of the request's last user message, "" if it has none.
func (r *Request) lastUser() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Content
		}
	}
	return ""
}

// trailingResults returns the tool results that end the conversation (those after its last
// non-tool message), each with the name of the call it answers.
func (r *Request) trailingResults() (results []Message, names []string) {
	i := len(r.Messages)
	for i > 0 && r.Messages[i-1].Role == "tool" {
		i--
	}
	results = r.Messages[i:]
	for _, res := range results {
		names = append(names, r.callName(res.ToolCallID))
	}
	return results, names
}

// callName returns the name of the tool call with placeholder id, "" if none.
func (r *Request) callName(id string) string {
	for _, m := range r.Messages {
		for _, c := range m.ToolCalls {
			if c.ID == id {
				return c.Name
			}
		}
	}
	return ""
}

// volatile are the request fields of every wire format that do not change what the model is
// asked, and stay out of the normalized request.
var volatile = map[string]bool{
	"stream": true, "stream_options": true, "user": true, "metadata": true, "store": true,
	"service_tier": true, "prompt_cache_key": true, "prompt_cache_retention": true,
	"prompt_cache_options": true, "safety_identifier": true, "include": true, "background": true,
}

// normalizer builds one normalized Request: it hands out the call#N placeholders and names the
// field a problem is in.
type normalizer struct {
	req  *Request
	ids  map[string]string
	next int
}

// newNormalizer starts a Request.
func newNormalizer() *normalizer {
	return &normalizer{req: &Request{}, ids: map[string]string{}}
}

// placeholder returns the placeholder of a tool-call id, a new one on first sight. An empty id
// (a call without one) gets a new placeholder each time.
func (n *normalizer) placeholder(id string) string {
	if p, ok := n.ids[id]; ok && id != "" {
		return p
	}
	n.next++
	p := fmt.Sprintf("call#%d", n.next)
	if id != "" {
		n.ids[id] = p
	}
	return p
}

// add appends a message, merging an assistant message into a preceding one that has only tool
// calls or only text so far (Responses and Anthropic spread one assistant turn over several
// items or blocks, Chat keeps it in one message).
func (n *normalizer) add(m Message) {
	msgs := n.req.Messages
	if m.Role == "assistant" && len(msgs) > 0 {
		last := &msgs[len(msgs)-1]
		if last.Role == "assistant" && len(last.Parts) == 0 && len(m.Parts) == 0 && last.Name == m.Name &&
			(m.Content == "" || len(last.ToolCalls) == 0 && last.Content == "") {
			last.Content += m.Content
			last.ToolCalls = append(last.ToolCalls, m.ToolCalls...)
			return
		}
	}
	n.req.Messages = append(n.req.Messages, m)
}

// arguments normalizes tool-call arguments given as a string on the wire: canonical JSON when
// they are JSON, else the string itself as a JSON string.
func arguments(s string) json.RawMessage {
	if strings.TrimSpace(s) == "" {
		return json.RawMessage(`{}`)
	}
	if c, err := canonical([]byte(s)); err == nil {
		return c
	}
	return mustMarshal(s)
}

// argumentsText returns the wire text of reply arguments: a JSON string's content as it is,
// any other JSON value compact.
func argumentsText(raw json.RawMessage) string {
	if isNull(raw) {
		return "{}"
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s
	}
	c, err := compact(raw)
	if err != nil {
		return string(raw)
	}
	return string(c)
}

// param keeps a body field that no wire format handles itself in Params, canonical; a null is
// dropped.
func (n *normalizer) param(name string, raw json.RawMessage) error {
	if isNull(raw) || volatile[name] {
		return nil
	}
	c, err := canonical(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if n.req.Params == nil {
		n.req.Params = map[string]json.RawMessage{}
	}
	n.req.Params[name] = c
	return nil
}

// part returns a content part that is not text as canonical JSON without its cache_control and
// id members (volatile or the SDK's own).
func part(raw json.RawMessage) (json.RawMessage, error) {
	v, err := decodeAny(raw)
	if err != nil {
		return nil, err
	}
	if m, ok := v.(map[string]any); ok {
		delete(m, "cache_control")
		delete(m, "id")
	}
	return marshal(v)
}

// body is a request body decoded one level: its fields by name.
type body map[string]json.RawMessage

// take removes and returns the field name, nil if absent.
func (b body) take(name string) json.RawMessage {
	v := b[name]
	delete(b, name)
	return v
}

// str decodes a string field; absent or null is "".
func (b body) str(name string) (string, error) {
	raw := b.take(name)
	if isNull(raw) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("%s: want a string: %w", name, err)
	}
	return s, nil
}

// flag decodes a boolean field; absent or null is false.
func (b body) flag(name string) (bool, error) {
	raw := b[name]
	if isNull(raw) {
		return false, nil
	}
	var v bool
	if err := json.Unmarshal(raw, &v); err != nil {
		return false, fmt.Errorf("%s: want true or false: %w", name, err)
	}
	return v, nil
}

// decodeBody decodes a request body into its fields.
func decodeBody(data []byte) (body, error) {
	var b body
	if err := json.Unmarshal(data, &b); err != nil {
		return nil, fmt.Errorf("request body is not a JSON object: %w", err)
	}
	if b == nil {
		return nil, fmt.Errorf("request body is null, want a JSON object")
	}
	return b, nil
}

// rest keeps every field not taken yet in Params.
func (n *normalizer) rest(b body) error {
	for _, k := range sortedKeys(b) {
		if err := n.param(k, b[k]); err != nil {
			return err
		}
	}
	return nil
}

// begin decodes a request body and reads what every wire format has: stream and model.
func begin(data []byte) (body, *normalizer, *parsed, error) {
	b, err := decodeBody(data)
	if err != nil {
		return nil, nil, nil, err
	}
	n := newNormalizer()
	p := &parsed{req: n.req}
	if p.stream, err = b.flag("stream"); err != nil {
		return nil, nil, nil, err
	}
	if n.req.Model, err = b.str("model"); err != nil {
		return nil, nil, nil, err
	}
	return b, n, p, nil
}

// tools reads the tools field, each tool by one, which is given the tool's path and JSON.
func (n *normalizer) tools(b body, one func(where string, raw json.RawMessage) (Tool, error)) error {
	raw := b.take("tools")
	if isNull(raw) {
		return nil
	}
	var tools []json.RawMessage
	if err := json.Unmarshal(raw, &tools); err != nil {
		return fmt.Errorf("tools: want an array")
	}
	for i, t := range tools {
		tool, err := one(fmt.Sprintf("tools[%d]", i), t)
		if err != nil {
			return err
		}
		n.req.Tools = append(n.req.Tools, tool)
	}
	return nil
}

// function is a function tool as the wire formats declare it (Anthropic's schema is
// input_schema, which its reader moves into Parameters).
type function struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      bool            `json:"strict"`
}

// tool normalizes a function tool at where.
func (f *function) tool(where string) (Tool, error) {
	t := Tool{Name: f.Name, Description: f.Description, Strict: f.Strict}
	if f.Name == "" {
		return t, fmt.Errorf("%s.name: missing", where)
	}
	if !isNull(f.Parameters) {
		c, err := canonical(f.Parameters)
		if err != nil {
			return t, fmt.Errorf("%s.parameters: %w", where, err)
		}
		t.Parameters = c
	}
	return t, nil
}

// specTool keeps a tool that is not a function verbatim.
func specTool(where string, raw json.RawMessage) (Tool, error) {
	c, err := part(raw)
	if err != nil {
		return Tool{}, fmt.Errorf("%s: %w", where, err)
	}
	return Tool{Spec: c}, nil
}

// named is a {"name": …} member of a tool choice.
type named struct {
	Type     string `json:"type"`
	Name     string `json:"name"`
	Function *struct {
		Name string `json:"name"`
	} `json:"function"`
}

// Normalize reads a request body of api into its normalized Request, as the Handler does.
func Normalize(api API, body []byte) (*Request, error) {
	f, ok := formats[api]
	if !ok {
		panic(fmt.Sprintf("provider: Normalize of an unknown API %q", api))
	}
	p, err := f.parse(body)
	if err != nil {
		return nil, fmt.Errorf("provider: a %s request: %w", api, err)
	}
	return p.req, nil
}
