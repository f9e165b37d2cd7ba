package provider

import (
	"encoding/json"
	"fmt"
	"slices"
	"unicode/utf8"
)

// Reply is what the model answers, the same whichever wire format carries it: text, tool calls,
// or both. It has no ids: every answer is sent with fresh ones (see IDs).
type Reply struct {
	// Text is the assistant's text.
	Text string `json:"text,omitempty"`
	// ToolCalls are the calls the model asks for, in order (several: parallel tool calls).
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Finish is why the answer ends: "" (worked out: "tool_calls" when there are tool calls,
	// else "stop"), "stop", "tool_calls" or "length" (cut at the token limit). Each wire format
	// says it its own way (Anthropic: end_turn, tool_use, max_tokens).
	Finish string `json:"finish,omitempty"`
	// Usage is the token count the answer reports; nil: estimated from the request's and the
	// reply's sizes (a token per 4 bytes).
	Usage *Usage `json:"usage,omitempty"`
	// Model is the model name the answer reports; "": the model the request asked for.
	Model string `json:"model,omitempty"`
}

// Usage is an answer's token count.
type Usage struct {
	// InputTokens is the prompt's size (Chat: prompt_tokens).
	InputTokens int `json:"input_tokens"`
	// OutputTokens is the answer's size (Chat: completion_tokens).
	OutputTokens int `json:"output_tokens"`
}

// finishes are the values Reply.Finish may take.
var finishes = []string{"", "stop", "tool_calls", "length"}

// validate checks a reply as Load and the handler need it, naming the field at fault.
func (r *Reply) validate() error {
	if !slices.Contains(finishes, r.Finish) {
		return fmt.Errorf("finish: %q is not one of stop, tool_calls, length", r.Finish)
	}
	if r.Usage != nil && (r.Usage.InputTokens < 0 || r.Usage.OutputTokens < 0) {
		return fmt.Errorf("usage: token counts must not be negative")
	}
	for i, c := range r.ToolCalls {
		if c.Name == "" {
			return fmt.Errorf("tool_calls[%d].name: missing", i)
		}
		if c.ID != "" {
			return fmt.Errorf("tool_calls[%d].id: an answer carries no ids (every answer is sent with fresh ones); remove it", i)
		}
		if isNull(c.Arguments) {
			continue
		}
		if !json.Valid(c.Arguments) {
			return fmt.Errorf("tool_calls[%d].arguments: not JSON", i)
		}
	}
	return nil
}

// tidy puts a reply's JSON values in the form Save writes and Load reads back: arguments
// compact (members in their order), absent arguments as {}.
func (r *Reply) tidy() {
	for i := range r.ToolCalls {
		c := &r.ToolCalls[i]
		if isNull(c.Arguments) {
			c.Arguments = json.RawMessage(`{}`)
			continue
		}
		if a, err := compact(c.Arguments); err == nil {
			c.Arguments = a
		}
	}
}

// finish returns the reply's finish reason, worked out when not given.
func (r *Reply) finish() string {
	switch {
	case r.Finish != "":
		return r.Finish
	case len(r.ToolCalls) > 0:
		return "tool_calls"
	}
	return "stop"
}

// usage returns the reply's usage, estimated from req and the reply when not given.
func (r *Reply) usage(req *Request) Usage {
	if r.Usage != nil {
		return *r.Usage
	}
	out := len(r.Text)
	for _, c := range r.ToolCalls {
		out += len(c.Name) + len(argumentsText(c.Arguments))
	}
	return Usage{InputTokens: tokens(len(req.JSON())), OutputTokens: tokens(out)}
}

// tokens estimates the tokens of n bytes: one per 4, at least 1.
func tokens(n int) int {
	return max(1, (n+3)/4)
}

// clone returns a deep copy of r.
func (r *Reply) clone() *Reply {
	c := *r
	c.ToolCalls = slices.Clone(r.ToolCalls)
	if r.Usage != nil {
		u := *r.Usage
		c.Usage = &u
	}
	return &c
}

// words splits text into the deltas a stream sends: each word with the spaces before it, as a
// tokenizer's pieces go.
func words(text string) []string {
	var out []string
	start := 0
	inWord := false
	for i, r := range text {
		space := r == ' ' || r == '\n' || r == '\t'
		if inWord && space {
			out = append(out, text[start:i])
			start = i
		}
		inWord = !space
	}
	if start < len(text) {
		out = append(out, text[start:])
	}
	return out
}

// pieces splits s into chunks of about n bytes at rune boundaries: the argument deltas of a
// streamed tool call.
func pieces(s string, n int) []string {
	var out []string
	for len(s) > 0 {
		cut := min(n, len(s))
		for cut < len(s) && !utf8.RuneStart(s[cut]) {
			cut++
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	return out
}
