package provider

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// chatFormat is OpenAI's Chat Completions: POST /v1/chat/completions.
type chatFormat struct{}

// chatText are Chat's text parts.
var chatText = textKinds{text: map[string]string{"text": "text", "refusal": "refusal"}}

// chatMessage is one message of a Chat request.
type chatMessage struct {
	Role       string          `json:"role"`
	Name       string          `json:"name"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// parse reads a Chat Completions request.
func (chatFormat) parse(data []byte) (*parsed, error) {
	b, n, p, err := begin(data)
	if err != nil {
		return nil, err
	}
	if raw := b["stream_options"]; !isNull(raw) {
		var so struct {
			IncludeUsage bool `json:"include_usage"`
		}
		if err := json.Unmarshal(raw, &so); err != nil {
			return nil, fmt.Errorf("stream_options: %w", err)
		}
		p.includeUsage = so.IncludeUsage
	}
	var msgs []json.RawMessage
	if err := json.Unmarshal(b.take("messages"), &msgs); err != nil || len(msgs) == 0 {
		return nil, fmt.Errorf("messages: want a non-empty array of messages")
	}
	for i, raw := range msgs {
		var m chatMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("messages[%d]: %w", i, err)
		}
		where := fmt.Sprintf("messages[%d]", i)
		out := Message{Role: role(m.Role), Name: m.Name}
		if out.Content, out.Parts, err = chatText.content(where+".content", m.Content); err != nil {
			return nil, err
		}
		for _, c := range m.ToolCalls {
			out.ToolCalls = append(out.ToolCalls, ToolCall{ID: n.placeholder(c.ID), Name: c.Function.Name, Arguments: arguments(c.Function.Arguments)})
		}
		if m.Role == "tool" {
			out.ToolCallID = n.placeholder(m.ToolCallID)
		}
		n.add(out)
	}
	err = n.tools(b, func(where string, t json.RawMessage) (Tool, error) {
		var f struct {
			Type     string    `json:"type"`
			Function *function `json:"function"`
		}
		if err := json.Unmarshal(t, &f); err != nil {
			return Tool{}, fmt.Errorf("%s: %w", where, err)
		}
		if f.Type == "function" && f.Function != nil {
			return f.Function.tool(where + ".function")
		}
		return specTool(where, t)
	})
	if err != nil {
		return nil, err
	}
	if err := n.toolChoice(b); err != nil {
		return nil, err
	}
	return p, n.rest(b)
}

// fingerprint is the system_fingerprint of a model's answers: fixed per model name.
func fingerprint(model string) string {
	sum := sha256.Sum256([]byte(model))
	return "fp_" + hex.EncodeToString(sum[:5])
}

// chatFinish is a finish reason as Chat says it.
func chatFinish(r *Reply) string { return r.finish() }

// chatUsage is Chat's usage object.
func chatUsage(u Usage) object {
	return object{
		{"prompt_tokens", u.InputTokens}, {"completion_tokens", u.OutputTokens}, {"total_tokens", u.InputTokens + u.OutputTokens},
		{"prompt_tokens_details", object{{"cached_tokens", 0}, {"audio_tokens", 0}}},
		{"completion_tokens_details", object{{"reasoning_tokens", 0}, {"audio_tokens", 0}, {"accepted_prediction_tokens", 0}, {"rejected_prediction_tokens", 0}}},
	}
}

// body is a chat.completion object.
func (chatFormat) body(r *rendering) []byte {
	msg := object{{"role", "assistant"}, {"content", nullable(r.reply.Text)}, {"refusal", nil}, {"annotations", []any{}}}
	if len(r.reply.ToolCalls) > 0 {
		calls := make([]any, len(r.reply.ToolCalls))
		for i, c := range r.reply.ToolCalls {
			calls[i] = object{{"id", r.callIDs[i]}, {"type", "function"}, {"function", object{{"name", c.Name}, {"arguments", argumentsText(c.Arguments)}}}}
		}
		msg = append(msg, field{"tool_calls", calls})
	}
	return mustMarshal(object{
		{"id", r.answerID}, {"object", "chat.completion"}, {"created", r.created}, {"model", r.model},
		{"choices", []any{object{{"index", 0}, {"message", msg}, {"logprobs", nil}, {"finish_reason", chatFinish(r.reply)}}}},
		{"usage", chatUsage(r.usage)}, {"service_tier", "default"}, {"system_fingerprint", fingerprint(r.model)},
	})
}

// argumentPiece is the size of the argument deltas of a streamed tool call.
const argumentPiece = 8

// events are the chat.completion.chunk events: the role, the text word by word, each tool call
// (id and name, then its arguments in pieces), the finish reason, the usage when the request
// asked for it (stream_options.include_usage), and data: [DONE].
func (chatFormat) events(r *rendering) []event {
	chunk := func(choices []any) event {
		o := object{
			{"id", r.answerID}, {"object", "chat.completion.chunk"}, {"created", r.created}, {"model", r.model},
			{"service_tier", "default"}, {"system_fingerprint", fingerprint(r.model)}, {"choices", choices},
		}
		if r.p.includeUsage {
			o = append(o, field{"usage", nil})
		}
		return jsonEvent("", o)
	}
	delta := func(d object, finish any) event {
		return chunk([]any{object{{"index", 0}, {"delta", d}, {"logprobs", nil}, {"finish_reason", finish}}})
	}
	var content any = ""
	if r.reply.Text == "" {
		content = nil
	}
	evs := []event{delta(object{{"role", "assistant"}, {"content", content}, {"refusal", nil}}, nil)}
	for _, w := range words(r.reply.Text) {
		evs = append(evs, delta(object{{"content", w}}, nil))
	}
	for i, c := range r.reply.ToolCalls {
		evs = append(evs, delta(object{{"tool_calls", []any{object{
			{"index", i}, {"id", r.callIDs[i]}, {"type", "function"}, {"function", object{{"name", c.Name}, {"arguments", ""}}},
		}}}}, nil))
		for _, a := range pieces(argumentsText(c.Arguments), argumentPiece) {
			evs = append(evs, delta(object{{"tool_calls", []any{object{{"index", i}, {"function", object{{"arguments", a}}}}}}}, nil))
		}
	}
	evs = append(evs, delta(object{}, chatFinish(r.reply)))
	if r.p.includeUsage {
		last := object{
			{"id", r.answerID}, {"object", "chat.completion.chunk"}, {"created", r.created}, {"model", r.model},
			{"service_tier", "default"}, {"system_fingerprint", fingerprint(r.model)}, {"choices", []any{}}, {"usage", chatUsage(r.usage)},
		}
		evs = append(evs, jsonEvent("", last))
	}
	return append(evs, event{data: []byte("[DONE]")})
}

// requestIDHeader is OpenAI's.
func (chatFormat) requestIDHeader() string { return "x-request-id" }
