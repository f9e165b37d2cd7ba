package provider

import (
	"encoding/json"
	"fmt"
)

// messagesFormat is Anthropic's Messages API: POST /v1/messages.
type messagesFormat struct{}

// anthropicText are the Messages content blocks that hold text; thinking blocks are left out.
var anthropicText = textKinds{
	text: map[string]string{"text": "text"},
	drop: map[string]bool{"thinking": true, "redacted_thinking": true},
}

// anthropicBlock is one content block of a Messages request.
type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// parse reads a Messages request. A turn's blocks become normalized messages in order: text and
// other parts of a turn together, each tool_use a tool call of the assistant's message, each
// tool_result a tool message.
func (messagesFormat) parse(data []byte) (*parsed, error) {
	b, n, p, err := begin(data)
	if err != nil {
		return nil, err
	}
	if raw := b.take("system"); !isNull(raw) {
		text, parts, err := anthropicText.content("system", raw)
		if err != nil {
			return nil, err
		}
		n.add(Message{Role: "system", Content: text, Parts: parts})
	}
	var msgs []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b.take("messages"), &msgs); err != nil || len(msgs) == 0 {
		return nil, fmt.Errorf("messages: want a non-empty array of messages")
	}
	for i, m := range msgs {
		if err := anthropicTurn(n, fmt.Sprintf("messages[%d].content", i), m.Role, m.Content); err != nil {
			return nil, err
		}
	}
	err = n.tools(b, func(where string, t json.RawMessage) (Tool, error) {
		var f struct {
			Type        string          `json:"type"`
			InputSchema json.RawMessage `json:"input_schema"`
			function
		}
		if err := json.Unmarshal(t, &f); err != nil {
			return Tool{}, fmt.Errorf("%s: %w", where, err)
		}
		if f.Type == "" || f.Type == "custom" {
			f.Parameters = f.InputSchema
			return f.tool(where)
		}
		return specTool(where, t)
	})
	if err != nil {
		return nil, err
	}
	if raw := b.take("tool_choice"); !isNull(raw) {
		var c struct {
			Type                   string `json:"type"`
			Name                   string `json:"name"`
			DisableParallelToolUse bool   `json:"disable_parallel_tool_use"`
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			return nil, fmt.Errorf("tool_choice: %w", err)
		}
		switch c.Type {
		case "auto", "none":
			n.req.ToolChoice = c.Type
		case "any":
			n.req.ToolChoice = "required"
		case "tool":
			n.req.ToolChoice = "tool:" + c.Name
		default:
			if err := n.param("tool_choice", raw); err != nil {
				return nil, err
			}
		}
		if c.DisableParallelToolUse {
			n.param("parallel_tool_calls", json.RawMessage("false"))
		}
	}
	return p, n.rest(b)
}

// anthropicTurn reads one turn's content, a string or an array of blocks.
func anthropicTurn(n *normalizer, where, r string, raw json.RawMessage) error {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		n.add(Message{Role: r, Content: s})
		return nil
	}
	var blocks []json.RawMessage
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return fmt.Errorf("%s: want a string or an array of blocks", where)
	}
	var pending []json.RawMessage // the text and other blocks not yet in a message
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		arr := mustMarshal(pending)
		text, parts, err := anthropicText.content(where, arr)
		if err != nil {
			return err
		}
		pending = nil
		if text != "" || len(parts) > 0 {
			n.add(Message{Role: r, Content: text, Parts: parts})
		}
		return nil
	}
	for i, raw := range blocks {
		var bl anthropicBlock
		if err := json.Unmarshal(raw, &bl); err != nil {
			return fmt.Errorf("%s[%d]: %w", where, i, err)
		}
		switch bl.Type {
		case "tool_use":
			if err := flush(); err != nil {
				return err
			}
			args := json.RawMessage(`{}`)
			if !isNull(bl.Input) {
				c, err := canonical(bl.Input)
				if err != nil {
					return fmt.Errorf("%s[%d].input: %w", where, i, err)
				}
				args = c
			}
			n.add(Message{Role: "assistant", ToolCalls: []ToolCall{{ID: n.placeholder(bl.ID), Name: bl.Name, Arguments: args}}})
		case "tool_result":
			if err := flush(); err != nil {
				return err
			}
			text, parts, err := anthropicText.content(fmt.Sprintf("%s[%d].content", where, i), bl.Content)
			if err != nil {
				return err
			}
			n.add(Message{Role: "tool", ToolCallID: n.placeholder(bl.ToolUseID), Content: text, Parts: parts, IsError: bl.IsError})
		default:
			pending = append(pending, raw)
		}
	}
	return flush()
}

// stopReason is a finish reason as Anthropic says it.
func stopReason(r *Reply) string {
	switch r.finish() {
	case "tool_calls":
		return "tool_use"
	case "length":
		return "max_tokens"
	}
	return "end_turn"
}

// anthropicUsage is the Messages usage object, output tokens as given.
func anthropicUsage(in, out int) object {
	return object{
		{"input_tokens", in}, {"cache_creation_input_tokens", 0}, {"cache_read_input_tokens", 0},
		{"output_tokens", out}, {"service_tier", "standard"},
	}
}

// message is a message object with the given content, stop reason and usage.
func (r *rendering) message(content []any, stop any, usage object) object {
	return object{
		{"id", r.answerID}, {"type", "message"}, {"role", "assistant"}, {"model", r.model},
		{"content", content}, {"stop_reason", stop}, {"stop_sequence", nil}, {"usage", usage},
	}
}

// toolInput is a tool call's arguments as a tool_use block's input: the JSON value itself.
func toolInput(c ToolCall) json.RawMessage {
	if isNull(c.Arguments) {
		return json.RawMessage(`{}`)
	}
	a, err := compact(c.Arguments)
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return a
}

// body is a message object.
func (messagesFormat) body(r *rendering) []byte {
	var content []any
	if r.reply.Text != "" {
		content = append(content, object{{"type", "text"}, {"text", r.reply.Text}})
	}
	for i, c := range r.reply.ToolCalls {
		content = append(content, object{{"type", "tool_use"}, {"id", r.callIDs[i]}, {"name", c.Name}, {"input", toolInput(c)}})
	}
	if content == nil {
		content = []any{}
	}
	return mustMarshal(r.message(content, stopReason(r.reply), anthropicUsage(r.usage.InputTokens, r.usage.OutputTokens)))
}

// events are the Messages stream: message_start; per content block its content_block_start,
// deltas (text_delta, input_json_delta) and content_block_stop, with a ping after the first
// block's start as the API sends one; message_delta with the stop reason and usage;
// message_stop.
func (messagesFormat) events(r *rendering) []event {
	var evs []event
	add := func(typ string, fields ...field) {
		evs = append(evs, jsonEvent(typ, append(object{{"type", typ}}, fields...)))
	}
	add("message_start", field{"message", r.message([]any{}, nil, anthropicUsage(r.usage.InputTokens, 1))})
	index := 0
	block := func(start object, deltas []object) {
		add("content_block_start", field{"index", index}, field{"content_block", start})
		if index == 0 {
			add("ping")
		}
		for _, d := range deltas {
			add("content_block_delta", field{"index", index}, field{"delta", d})
		}
		add("content_block_stop", field{"index", index})
		index++
	}
	if text := r.reply.Text; text != "" {
		var deltas []object
		for _, w := range words(text) {
			deltas = append(deltas, object{{"type", "text_delta"}, {"text", w}})
		}
		block(object{{"type", "text"}, {"text", ""}}, deltas)
	}
	for i, c := range r.reply.ToolCalls {
		var deltas []object
		for _, a := range pieces(string(toolInput(c)), argumentPiece) {
			deltas = append(deltas, object{{"type", "input_json_delta"}, {"partial_json", a}})
		}
		block(object{{"type", "tool_use"}, {"id", r.callIDs[i]}, {"name", c.Name}, {"input", object{}}}, deltas)
	}
	add("message_delta", field{"delta", object{{"stop_reason", stopReason(r.reply)}, {"stop_sequence", nil}}},
		field{"usage", object{{"output_tokens", r.usage.OutputTokens}}})
	add("message_stop")
	return evs
}

// requestIDHeader is Anthropic's.
func (messagesFormat) requestIDHeader() string { return "request-id" }
