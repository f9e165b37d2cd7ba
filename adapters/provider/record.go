package provider

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// RecordOptions configure a Recorder.
type RecordOptions struct {
	// Upstream is the real provider's base URL, /v1 included: https://api.openai.com/v1,
	// https://api.anthropic.com/v1. A request for /v1/X (or /X) goes to Upstream/X.
	Upstream string
	// Key is the real provider's key: sent as the bearer token, or as x-api-key to Anthropic
	// (when the client sent one), in place of the client's.
	Key string
	// Client sends the upstream requests; nil: a client without a timeout (a model's answer
	// can take minutes).
	Client *http.Client
}

// Recorder is an http.Handler that serves an agent from a real provider and writes what it
// asked and got into a cassette: it proxies each request upstream with the real key, passes
// the answer through as it comes (streams event by event), and records the normalized request
// with the answer, a stream reassembled into one Reply. The same request answered differently
// later is recorded as an alternative. Requests the stand-in would refuse (a body it cannot
// read, previous_response_id) are refused here the same way, so that what records also
// replays; error answers pass through unrecorded; GET /v1/models passes through. An answer is
// recorded before the end of its body reaches the client, so a cassette taken once the agent
// has read its answers holds them. It is safe for concurrent use.
type Recorder struct {
	opts RecordOptions

	mu       sync.Mutex
	cassette Cassette
	problems []error
}

// NewRecorder returns a Recorder to opts.Upstream.
func NewRecorder(opts RecordOptions) *Recorder {
	if opts.Upstream == "" {
		panic("provider: NewRecorder needs RecordOptions.Upstream, the provider's base URL")
	}
	if opts.Client == nil {
		opts.Client = &http.Client{}
	}
	return &Recorder{opts: opts, cassette: Cassette{Version: CassetteVersion, Interactions: []Interaction{}}}
}

// Cassette returns a copy of what was recorded so far, and an error joining the answers that
// could not be recorded (an upstream answer the package could not read back into a Reply).
func (rec *Recorder) Cassette() (*Cassette, error) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	c := rec.cassette
	c.Interactions = slices.Clone(c.Interactions)
	for i := range c.Interactions {
		c.Interactions[i].Alternatives = slices.Clone(c.Interactions[i].Alternatives)
	}
	return &c, errors.Join(rec.problems...)
}

// hopHeaders are not passed on in either direction; the transport decompresses answers, so
// their encoding and length go too.
var hopHeaders = []string{"Authorization", "X-Api-Key", "Host", "Content-Length", "Accept-Encoding", "Connection",
	"Keep-Alive", "Transfer-Encoding", "Te", "Trailer", "Upgrade", "Proxy-Authorization", "Content-Encoding"}

// ServeHTTP proxies one request and records it.
func (rec *Recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	api, _, _ := route(r.URL.Path)
	data, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var p *parsed
	if api != "" && r.Method == http.MethodPost {
		if p, err = formats[api].parse(data); err != nil {
			familyOf(r, api).refuse(w, err)
			return
		}
	}
	url := strings.TrimSuffix(rec.opts.Upstream, "/") + strings.TrimPrefix(r.URL.Path, "/v1")
	if r.URL.RawQuery != "" {
		url += "?" + r.URL.RawQuery
	}
	up, err := http.NewRequestWithContext(r.Context(), r.Method, url, bytes.NewReader(data))
	if err != nil {
		http.Error(w, "chaoskit: "+err.Error(), http.StatusBadGateway)
		return
	}
	up.Header = r.Header.Clone()
	for _, h := range hopHeaders {
		up.Header.Del(h)
	}
	if r.Header.Get("X-Api-Key") != "" {
		up.Header.Set("X-Api-Key", rec.opts.Key)
	} else {
		up.Header.Set("Authorization", "Bearer "+rec.opts.Key)
	}
	resp, err := rec.opts.Client.Do(up)
	if err != nil {
		familyOf(r, api).write(w, apiError{status: 502, typ: "server_error", message: "chaoskit: the upstream provider did not answer: " + err.Error()}, nil, "")
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	for _, h := range hopHeaders {
		w.Header().Del(h)
	}
	w.WriteHeader(resp.StatusCode)
	var got bytes.Buffer
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			got.Write(buf[:n])
			w.Write(buf[:n])
			rc.Flush()
		}
		if err != nil {
			if err != io.EOF {
				rec.problem(fmt.Errorf("provider: recording a %s answer: reading it from upstream: %w", api, err))
				panic(http.ErrAbortHandler) // the client sees the connection drop, as the upstream's did
			}
			break
		}
	}
	if p == nil || resp.StatusCode/100 != 2 {
		return
	}
	var reply *Reply
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		reply, err = replyFromEvents(api, parseSSE(got.Bytes()))
	} else {
		reply, err = replyFromBody(api, got.Bytes())
	}
	if err != nil {
		rec.problem(fmt.Errorf("provider: recording a %s answer (request digest %.12s): %w", api, p.req.Digest(), err))
		return
	}
	if reply.Model == p.req.Model {
		reply.Model = ""
	}
	rec.add(api, p.req, reply)
}

// problem keeps an answer that could not be recorded.
func (rec *Recorder) problem(err error) {
	rec.mu.Lock()
	rec.problems = append(rec.problems, err)
	rec.mu.Unlock()
}

// add records a request and its reply: a new interaction, or an alternative of the one
// recorded for the same request when the reply says something else.
func (rec *Recorder) add(api API, req *Request, reply *Reply) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	digest := req.Digest()
	for i := range rec.cassette.Interactions {
		in := &rec.cassette.Interactions[i]
		if in.Match.Request == nil || in.Match.Request.Digest() != digest {
			continue
		}
		if !sameReply(&in.Answer, reply) && !slices.ContainsFunc(in.Alternatives, func(a Reply) bool { return sameReply(&a, reply) }) {
			in.Alternatives = append(in.Alternatives, *reply)
		}
		return
	}
	rec.cassette.Interactions = append(rec.cassette.Interactions, Interaction{
		Name:   fmt.Sprintf("%s turn %d", api, req.Turn()),
		Match:  Match{Request: req},
		Answer: *reply,
	})
}

// sameReply reports whether two replies say the same, whatever their usage.
func sameReply(a, b *Reply) bool {
	x, y := a.clone(), b.clone()
	x.Usage, y.Usage = nil, nil
	return bytes.Equal(mustMarshal(x), mustMarshal(y))
}

// parseSSE splits a server-sent event stream into its events (data lines joined by newlines;
// comments and other fields left out).
func parseSSE(data []byte) []event {
	var evs []event
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	for _, block := range strings.Split(text, "\n\n") {
		var e event
		var lines []string
		for _, line := range strings.Split(block, "\n") {
			switch {
			case strings.HasPrefix(line, "event:"):
				e.name = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
			case strings.HasPrefix(line, "data:"):
				lines = append(lines, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
			}
		}
		if lines != nil {
			e.data = []byte(strings.Join(lines, "\n"))
			evs = append(evs, e)
		}
	}
	return evs
}

// wireArguments turns tool-call arguments as the wire sends them (a string) into a reply's:
// the JSON value, members in their order, or a JSON string of arguments that are not JSON.
func wireArguments(s string) json.RawMessage {
	if c, err := compact([]byte(s)); err == nil && json.Valid(c) {
		return c
	}
	return mustMarshal(s)
}

// finishOf normalizes a provider's finish or stop reason, "" when it is what Reply works out
// anyway.
func finishOf(r *Reply, reason string) {
	switch reason {
	case "length", "max_tokens", "max_output_tokens":
		r.Finish = "length"
	case "tool_calls", "tool_use", "function_call":
		if len(r.ToolCalls) == 0 {
			r.Finish = "tool_calls"
		}
	default:
		if len(r.ToolCalls) > 0 {
			r.Finish = "stop"
		}
	}
}

// replyFromBody reads a whole answer of api back into a Reply.
func replyFromBody(api API, data []byte) (*Reply, error) {
	switch api {
	case ChatCompletions:
		var c struct {
			Model   string `json:"model"`
			Choices []struct {
				Message struct {
					Content   *string `json:"content"`
					ToolCalls []struct {
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"message"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
			Usage *struct {
				PromptTokens     int `json:"prompt_tokens"`
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(data, &c); err != nil {
			return nil, fmt.Errorf("the chat.completion: %w", err)
		}
		if len(c.Choices) == 0 {
			return nil, errors.New("the chat.completion has no choices")
		}
		m := c.Choices[0].Message
		r := &Reply{Model: c.Model}
		if m.Content != nil {
			r.Text = *m.Content
		}
		for _, tc := range m.ToolCalls {
			r.ToolCalls = append(r.ToolCalls, ToolCall{Name: tc.Function.Name, Arguments: wireArguments(tc.Function.Arguments)})
		}
		finishOf(r, c.Choices[0].FinishReason)
		if c.Usage != nil {
			r.Usage = &Usage{InputTokens: c.Usage.PromptTokens, OutputTokens: c.Usage.CompletionTokens}
		}
		return r, nil
	case Responses:
		var o struct {
			Model  string `json:"model"`
			Status string `json:"status"`
			Output []struct {
				Type    string `json:"type"`
				Content []struct {
					Type string `json:"type"`
					Text string `json:"text"`
				} `json:"content"`
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"output"`
			Usage *Usage `json:"usage"`
		}
		if err := json.Unmarshal(data, &o); err != nil {
			return nil, fmt.Errorf("the response: %w", err)
		}
		r := &Reply{Model: o.Model, Usage: o.Usage}
		for _, item := range o.Output {
			switch item.Type {
			case "message":
				for _, c := range item.Content {
					if c.Type == "output_text" {
						r.Text += c.Text
					}
				}
			case "function_call":
				r.ToolCalls = append(r.ToolCalls, ToolCall{Name: item.Name, Arguments: wireArguments(item.Arguments)})
			}
		}
		if o.Status == "incomplete" {
			r.Finish = "length"
		}
		return r, nil
	case Messages:
		var m struct {
			Model   string `json:"model"`
			Content []struct {
				Type  string          `json:"type"`
				Text  string          `json:"text"`
				Name  string          `json:"name"`
				Input json.RawMessage `json:"input"`
			} `json:"content"`
			StopReason string `json:"stop_reason"`
			Usage      *Usage `json:"usage"`
		}
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, fmt.Errorf("the message: %w", err)
		}
		r := &Reply{Model: m.Model, Usage: m.Usage}
		for _, b := range m.Content {
			switch b.Type {
			case "text":
				r.Text += b.Text
			case "tool_use":
				r.ToolCalls = append(r.ToolCalls, ToolCall{Name: b.Name, Arguments: wireArguments(string(b.Input))})
			}
		}
		finishOf(r, m.StopReason)
		return r, nil
	}
	return nil, fmt.Errorf("no wire format %q", api)
}

// replyFromEvents reassembles a streamed answer of api into a Reply. A stream that ended
// before its last event (no [DONE], response.completed or message_stop) is an error: a cut
// answer is no answer to record.
func replyFromEvents(api API, evs []event) (*Reply, error) {
	switch api {
	case ChatCompletions:
		return chatFromEvents(evs)
	case Responses:
		for _, e := range evs {
			var head struct {
				Type     string          `json:"type"`
				Response json.RawMessage `json:"response"`
			}
			json.Unmarshal(e.data, &head)
			if head.Type == "response.completed" || head.Type == "response.incomplete" {
				return replyFromBody(Responses, head.Response)
			}
		}
		return nil, errors.New("the stream ended without response.completed")
	case Messages:
		return messagesFromEvents(evs)
	}
	return nil, fmt.Errorf("no wire format %q", api)
}

// chatFromEvents reassembles chat.completion.chunk events.
func chatFromEvents(evs []event) (*Reply, error) {
	r := &Reply{}
	var args []strings.Builder
	finish := ""
	done := false
	for _, e := range evs {
		if string(e.data) == "[DONE]" {
			done = true
			break
		}
		var c struct {
			Model   string `json:"model"`
			Choices []struct {
				Delta struct {
					Content   *string `json:"content"`
					ToolCalls []struct {
						Index    int `json:"index"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *struct {
				PromptTokens     int `json:"prompt_tokens"`
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(e.data, &c); err != nil {
			return nil, fmt.Errorf("a chat.completion.chunk: %w", err)
		}
		if c.Model != "" {
			r.Model = c.Model
		}
		if c.Usage != nil {
			r.Usage = &Usage{InputTokens: c.Usage.PromptTokens, OutputTokens: c.Usage.CompletionTokens}
		}
		for _, ch := range c.Choices {
			if ch.Delta.Content != nil {
				r.Text += *ch.Delta.Content
			}
			for _, tc := range ch.Delta.ToolCalls {
				for len(r.ToolCalls) <= tc.Index {
					r.ToolCalls = append(r.ToolCalls, ToolCall{})
					args = append(args, strings.Builder{})
				}
				r.ToolCalls[tc.Index].Name += tc.Function.Name
				args[tc.Index].WriteString(tc.Function.Arguments)
			}
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
	}
	if !done {
		return nil, errors.New("the stream ended without data: [DONE]")
	}
	for i := range r.ToolCalls {
		r.ToolCalls[i].Arguments = wireArguments(args[i].String())
	}
	finishOf(r, finish)
	return r, nil
}

// messagesFromEvents reassembles Anthropic's message stream.
func messagesFromEvents(evs []event) (*Reply, error) {
	r := &Reply{}
	var usage Usage
	kinds := map[int]string{}
	calls := map[int]int{} // block index → tool call
	var args []strings.Builder
	stop := ""
	done := false
	for _, e := range evs {
		var m struct {
			Type    string `json:"type"`
			Index   int    `json:"index"`
			Message struct {
				Model string `json:"model"`
				Usage Usage  `json:"usage"`
			} `json:"message"`
			ContentBlock struct {
				Type string `json:"type"`
				Name string `json:"name"`
				Text string `json:"text"`
			} `json:"content_block"`
			Delta struct {
				Type        string `json:"type"`
				Text        string `json:"text"`
				PartialJSON string `json:"partial_json"`
				StopReason  string `json:"stop_reason"`
			} `json:"delta"`
			Usage *Usage `json:"usage"`
		}
		if err := json.Unmarshal(e.data, &m); err != nil {
			return nil, fmt.Errorf("a %s event: %w", e.name, err)
		}
		switch m.Type {
		case "message_start":
			r.Model, usage = m.Message.Model, m.Message.Usage
		case "content_block_start":
			kinds[m.Index] = m.ContentBlock.Type
			switch m.ContentBlock.Type {
			case "tool_use":
				calls[m.Index] = len(r.ToolCalls)
				r.ToolCalls = append(r.ToolCalls, ToolCall{Name: m.ContentBlock.Name})
				args = append(args, strings.Builder{})
			case "text":
				r.Text += m.ContentBlock.Text
			}
		case "content_block_delta":
			switch m.Delta.Type {
			case "text_delta":
				r.Text += m.Delta.Text
			case "input_json_delta":
				if i, ok := calls[m.Index]; ok {
					args[i].WriteString(m.Delta.PartialJSON)
				}
			}
		case "message_delta":
			stop = m.Delta.StopReason
			if m.Usage != nil {
				usage.OutputTokens = m.Usage.OutputTokens
				if m.Usage.InputTokens > 0 {
					usage.InputTokens = m.Usage.InputTokens
				}
			}
		case "message_stop":
			done = true
		}
	}
	if !done {
		return nil, errors.New("the stream ended without message_stop")
	}
	for i := range r.ToolCalls {
		a := args[i].String()
		if a == "" {
			a = "{}"
		}
		r.ToolCalls[i].Arguments = wireArguments(a)
	}
	finishOf(r, stop)
	r.Usage = &usage
	return r, nil
}
