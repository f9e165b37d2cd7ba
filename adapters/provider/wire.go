package provider

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
)

// format is one wire format: how its requests read and its answers and errors are written.
type format interface {
	// parse reads a request body.
	parse(data []byte) (*parsed, error)
	// body is the non-streaming answer.
	body(r *rendering) []byte
	// events are the streaming answer's SSE events, in order, the terminator included.
	events(r *rendering) []event
	// requestIDHeader is the header that carries the request id.
	requestIDHeader() string
}

// formats maps each API to its wire format.
var formats = map[API]format{
	ChatCompletions: chatFormat{},
	Responses:       responsesFormat{},
	Messages:        messagesFormat{},
}

// parsed is one request as the handler read it: the normalized request and what the answer's
// rendering needs from the wire.
type parsed struct {
	req          *Request
	stream       bool
	includeUsage bool // Chat: stream_options.include_usage
	echo         body // Responses: the fields its answer echoes back
}

// rendering is one answer ready to be written: the reply with its fresh ids, time and usage.
type rendering struct {
	p         *parsed
	reply     *Reply
	model     string
	usage     Usage
	created   int64
	requestID string
	answerID  string
	messageID string   // Responses: the message item's id, when there is text
	callIDs   []string // the tool calls' ids: call_… or toolu_…
	itemIDs   []string // Responses: the function_call items' ids
}

// prepare draws an answer's ids from its seed, always in the same order for the same API and
// reply, streaming or not.
func prepare(api API, p *parsed, a *Answer) *rendering {
	g := NewIDs(a.Seed)
	r := &rendering{p: p, reply: a.Reply, model: a.Reply.Model, usage: a.Reply.usage(p.req)}
	if r.model == "" {
		r.model = p.req.Model
	}
	if !a.Created.IsZero() {
		r.created = a.Created.Unix()
	}
	r.requestID = g.Next(RequestID)
	switch api {
	case ChatCompletions:
		r.answerID = g.Next(ChatCompletionID)
		for range a.Reply.ToolCalls {
			r.callIDs = append(r.callIDs, g.Next(CallID))
		}
	case Responses:
		r.answerID = g.Next(ResponseID)
		if a.Reply.Text != "" {
			r.messageID = g.Next(OutputMessageID)
		}
		for range a.Reply.ToolCalls {
			r.itemIDs = append(r.itemIDs, g.Next(FunctionCallItemID))
			r.callIDs = append(r.callIDs, g.Next(CallID))
		}
	case Messages:
		r.answerID = g.Next(AnthropicMessageID)
		for range a.Reply.ToolCalls {
			r.callIDs = append(r.callIDs, g.Next(ToolUseID))
		}
	}
	return r
}

// event is one server-sent event: a name (empty for data-only events, as Chat sends them) and
// its data.
type event struct {
	name string
	data []byte
}

// bytes returns the event as it goes on the wire.
func (e event) bytes() []byte {
	var b bytes.Buffer
	if e.name != "" {
		b.WriteString("event: " + e.name + "\n")
	}
	b.WriteString("data: ")
	b.Write(e.data)
	b.WriteString("\n\n")
	return b.Bytes()
}

// jsonEvent is an event whose data is v marshalled.
func jsonEvent(name string, v any) event {
	return event{name: name, data: mustMarshal(v)}
}

// apiError is an error answer before its wire format writes it.
type apiError struct {
	status  int
	typ     string // OpenAI error.type; Anthropic error.type
	code    string // OpenAI error.code ("" is null)
	param   string // OpenAI error.param ("" is null)
	message string
}

// nullable is s, or nil (null) when s is empty.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// openAIError is the body of an OpenAI error answer (both Chat and Responses).
func openAIError(e apiError) []byte {
	return mustMarshal(object{{"error", object{
		{"message", e.message}, {"type", e.typ}, {"param", nullable(e.param)}, {"code", nullable(e.code)},
	}}})
}

// anthropicError is the body of an Anthropic error answer.
func anthropicError(e apiError, requestID string) []byte {
	return mustMarshal(object{
		{"type", "error"},
		{"error", object{{"type", e.typ}, {"message", e.message}}},
		{"request_id", requestID},
	})
}

// writeJSON writes a whole JSON answer.
func writeJSON(w http.ResponseWriter, status int, data []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(status)
	w.Write(data)
}

// sseHeaders sets the headers of a streaming answer.
func sseHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
}

// rawJSON is a JSON value already encoded, for object members.
type rawJSON = json.RawMessage
