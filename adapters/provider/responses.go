package provider

import (
	"encoding/json"
	"fmt"
)

// responsesFormat is OpenAI's Responses API: POST /v1/responses.
type responsesFormat struct{}

// responsesText are the Responses content parts that hold text.
var responsesText = textKinds{
	text: map[string]string{"input_text": "text", "output_text": "text", "text": "text", "refusal": "refusal"},
}

// echoed are the request fields a Responses answer repeats, as the API does.
var echoed = []string{"instructions", "max_output_tokens", "parallel_tool_calls", "reasoning", "store", "temperature", "text", "tool_choice", "tools", "top_p", "truncation", "user", "metadata"}

// refusal is a request the stand-in does not serve, with the field that makes it so.
type refusal struct {
	param   string
	message string
}

// Error returns the message.
func (r *refusal) Error() string { return r.param + ": " + r.message }

// responsesItem is one input item of a Responses request.
type responsesItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

// parse reads a Responses request. A request that builds on stored state
// (previous_response_id, conversation, item_reference) is refused: the stand-in keeps none, so
// the agent must send the whole conversation (the Agents SDK does unless told otherwise).
func (responsesFormat) parse(data []byte) (*parsed, error) {
	b, n, p, err := begin(data)
	if err != nil {
		return nil, err
	}
	for _, stateful := range []string{"previous_response_id", "conversation"} {
		if !isNull(b[stateful]) {
			return nil, &refusal{stateful, "chaoskit's model stand-in keeps no responses or conversations between requests, so it cannot continue one: send the whole conversation as input (the Agents SDK does when no previousResponseId or conversationId is given)"}
		}
	}
	p.echo = body{}
	for _, k := range echoed {
		if !isNull(b[k]) {
			p.echo[k] = b[k]
		}
	}
	if raw := b.take("instructions"); !isNull(raw) {
		text, parts, err := responsesText.content("instructions", raw)
		if err != nil {
			return nil, err
		}
		n.add(Message{Role: "system", Content: text, Parts: parts})
	}
	if err := responsesInput(n, b.take("input")); err != nil {
		return nil, err
	}
	err = n.tools(b, func(where string, t json.RawMessage) (Tool, error) {
		var f struct {
			Type string `json:"type"`
			function
		}
		if err := json.Unmarshal(t, &f); err != nil {
			return Tool{}, fmt.Errorf("%s: %w", where, err)
		}
		if f.Type == "function" {
			return f.tool(where)
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

// responsesInput reads the input field: a string (one user message) or an array of items.
func responsesInput(n *normalizer, raw json.RawMessage) error {
	if isNull(raw) {
		return fmt.Errorf("input: missing")
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		n.add(Message{Role: "user", Content: s})
		return nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return fmt.Errorf("input: want a string or an array of items")
	}
	for i, item := range items {
		where := fmt.Sprintf("input[%d]", i)
		var it responsesItem
		if err := json.Unmarshal(item, &it); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		switch {
		case it.Type == "function_call":
			n.add(Message{Role: "assistant", ToolCalls: []ToolCall{{ID: n.placeholder(it.CallID), Name: it.Name, Arguments: arguments(it.Arguments)}}})
		case it.Type == "function_call_output":
			text, parts, err := responsesText.content(where+".output", it.Output)
			if err != nil {
				return err
			}
			n.add(Message{Role: "tool", ToolCallID: n.placeholder(it.CallID), Content: text, Parts: parts})
		case it.Type == "reasoning":
			// Reasoning items carry encrypted content and ids that differ every time.
		case it.Type == "item_reference":
			return &refusal{where, "chaoskit's model stand-in keeps no stored items: send the item itself"}
		case it.Type == "message" || it.Type == "" && it.Role != "":
			text, parts, err := responsesText.content(where+".content", it.Content)
			if err != nil {
				return err
			}
			n.add(Message{Role: role(it.Role), Content: text, Parts: parts})
		default:
			p, err := part(item)
			if err != nil {
				return fmt.Errorf("%s: %w", where, err)
			}
			n.add(Message{Role: "item", Parts: []json.RawMessage{p}})
		}
	}
	return nil
}

// echo returns the request's field k, or def when the request has none.
func (r *rendering) echo(k string, def any) any {
	if v, ok := r.p.echo[k]; ok {
		return v
	}
	return def
}

// response is a response object with the given status, output items and usage.
func (r *rendering) response(status string, output []any, usage any) object {
	var incomplete any
	if status == "incomplete" {
		incomplete = object{{"reason", "max_output_tokens"}}
	}
	return object{
		{"id", r.answerID}, {"object", "response"}, {"created_at", r.created}, {"status", status},
		{"background", false}, {"error", nil}, {"incomplete_details", incomplete},
		{"instructions", r.echo("instructions", nil)}, {"max_output_tokens", r.echo("max_output_tokens", nil)},
		{"model", r.model}, {"output", output},
		{"parallel_tool_calls", r.echo("parallel_tool_calls", true)}, {"previous_response_id", nil},
		{"reasoning", r.echo("reasoning", object{{"effort", nil}, {"summary", nil}})},
		{"service_tier", "default"}, {"store", r.echo("store", true)},
		{"temperature", r.echo("temperature", rawJSON("1.0"))},
		{"text", r.echo("text", object{{"format", object{{"type", "text"}}}, {"verbosity", "medium"}})},
		{"tool_choice", r.echo("tool_choice", "auto")}, {"tools", r.echo("tools", []any{})},
		{"top_p", r.echo("top_p", rawJSON("1.0"))}, {"truncation", r.echo("truncation", "disabled")},
		{"usage", usage}, {"user", r.echo("user", nil)}, {"metadata", r.echo("metadata", object{})},
	}
}

// status is the response's final status.
func (r *rendering) status() string {
	if r.reply.finish() == "length" {
		return "incomplete"
	}
	return "completed"
}

// responsesUsage is the Responses usage object.
func responsesUsage(u Usage) object {
	return object{
		{"input_tokens", u.InputTokens}, {"input_tokens_details", object{{"cached_tokens", 0}}},
		{"output_tokens", u.OutputTokens}, {"output_tokens_details", object{{"reasoning_tokens", 0}}},
		{"total_tokens", u.InputTokens + u.OutputTokens},
	}
}

// outputText is an output_text content part.
func outputText(text string) object {
	return object{{"type", "output_text"}, {"annotations", []any{}}, {"logprobs", []any{}}, {"text", text}}
}

// messageItem is the message output item, with its content so far.
func (r *rendering) messageItem(status string, content []any) object {
	return object{{"id", r.messageID}, {"type", "message"}, {"status", status}, {"content", content}, {"role", "assistant"}}
}

// callItem is the function_call output item of tool call i, with its arguments so far.
func (r *rendering) callItem(i int, status, args string) object {
	return object{
		{"id", r.itemIDs[i]}, {"type", "function_call"}, {"status", status},
		{"arguments", args}, {"call_id", r.callIDs[i]}, {"name", r.reply.ToolCalls[i].Name},
	}
}

// output is the finished output items: the message, then the function calls.
func (r *rendering) output() []any {
	var out []any
	if r.reply.Text != "" {
		out = append(out, r.messageItem(r.status(), []any{outputText(r.reply.Text)}))
	}
	for i, c := range r.reply.ToolCalls {
		out = append(out, r.callItem(i, "completed", argumentsText(c.Arguments)))
	}
	return out
}

// body is a response object.
func (responsesFormat) body(r *rendering) []byte {
	return mustMarshal(r.response(r.status(), r.output(), responsesUsage(r.usage)))
}

// events are the Responses stream: response.created and response.in_progress; per output item
// its output_item.added, its deltas (content_part.added, output_text.delta…, output_text.done,
// content_part.done for the message; function_call_arguments.delta…,
// function_call_arguments.done for a call) and its output_item.done; then response.completed
// (response.incomplete when cut at the token limit). Each carries its sequence_number; there is
// no [DONE].
func (responsesFormat) events(r *rendering) []event {
	var evs []event
	add := func(typ string, fields ...field) {
		o := append(object{{"type", typ}, {"sequence_number", len(evs)}}, fields...)
		evs = append(evs, jsonEvent(typ, o))
	}
	add("response.created", field{"response", r.response("in_progress", []any{}, nil)})
	add("response.in_progress", field{"response", r.response("in_progress", []any{}, nil)})
	index := 0
	if text := r.reply.Text; text != "" {
		item := field{"item_id", r.messageID}
		at := field{"output_index", index}
		add("response.output_item.added", at, field{"item", r.messageItem("in_progress", []any{})})
		add("response.content_part.added", item, at, field{"content_index", 0}, field{"part", outputText("")})
		for _, w := range words(text) {
			add("response.output_text.delta", item, at, field{"content_index", 0}, field{"delta", w}, field{"logprobs", []any{}})
		}
		add("response.output_text.done", item, at, field{"content_index", 0}, field{"text", text}, field{"logprobs", []any{}})
		add("response.content_part.done", item, at, field{"content_index", 0}, field{"part", outputText(text)})
		add("response.output_item.done", at, field{"item", r.messageItem(r.status(), []any{outputText(text)})})
		index++
	}
	for i, c := range r.reply.ToolCalls {
		item := field{"item_id", r.itemIDs[i]}
		at := field{"output_index", index}
		args := argumentsText(c.Arguments)
		add("response.output_item.added", at, field{"item", r.callItem(i, "in_progress", "")})
		for _, a := range pieces(args, argumentPiece) {
			add("response.function_call_arguments.delta", item, at, field{"delta", a})
		}
		add("response.function_call_arguments.done", item, at, field{"arguments", args})
		add("response.output_item.done", at, field{"item", r.callItem(i, "completed", args)})
		index++
	}
	final := "response.completed"
	if r.status() == "incomplete" {
		final = "response.incomplete"
	}
	add(final, field{"response", r.response(r.status(), r.output(), responsesUsage(r.usage))})
	return evs
}

// requestIDHeader is OpenAI's.
func (responsesFormat) requestIDHeader() string { return "x-request-id" }
