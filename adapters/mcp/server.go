package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/chaoskit/chaoskit/adapters/rest"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// CodeFenced is the JSON-RPC error code of a call rejected for a stale fencing token
// (harness.ErrFenced), one of those JSON-RPC leaves to servers (-32000 to -32099) and no MCP
// SDK uses.
const CodeFenced = -32050

// exchangeHeader carries, from ServeHTTP to the tool handler, the number of the HTTP exchange a
// call came in (the SDK runs tool handlers apart from the HTTP request, and passes them its
// header).
const exchangeHeader = "Chaoskit-Exchange"

// Options configures a Server.
type Options struct {
	// Tools are the server's tools, listed in this order.
	Tools []Tool
	// World performs the calls (required).
	World rest.Tools
	// Answer, if set, gives the result of an applied call: the JSON of a CallToolResult
	// ({"content":[...],"structuredContent":...}), e.g. one recorded from the real server. nil,
	// or an Answer that returns nil, gives the default result.
	Answer rest.Answer
	// Name and Version are the server's in the initialize handshake; "" means "chaoskit" and
	// "dev".
	Name, Version string
}

// Server is an MCP server of the declared tools, over streamable HTTP: an http.Handler that
// serves any path (mount it where its clients' URL points). Make one with New.
type Server struct {
	world   rest.Tools
	answer  rest.Answer
	sdk     *sdk.Server
	handler http.Handler

	mu        sync.Mutex
	next      uint64
	exchanges map[string]*exchange
}

// exchange is one HTTP request (a POST of JSON-RPC messages) in flight.
type exchange struct {
	token string
	calls []jsonrpc.ID
	// ctx is the request's context, cancelled when the client goes away or cancels the call.
	ctx    context.Context
	cancel context.CancelFunc
	// dropped says the response is lost: nothing more reaches the client, and the connection
	// is closed.
	dropped atomic.Bool
}

// New returns the server of opts's tools. An error names the field at fault.
func New(opts Options) (*Server, error) {
	if opts.World == nil {
		return nil, errors.New("mcp: Options.World is nil")
	}
	name, version := opts.Name, opts.Version
	if name == "" {
		name = "chaoskit"
	}
	if version == "" {
		version = "dev"
	}
	s := &Server{
		world:     opts.World,
		answer:    opts.Answer,
		exchanges: map[string]*exchange{},
		sdk: sdk.NewServer(&sdk.Implementation{Name: name, Version: version}, &sdk.ServerOptions{
			Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}},
		}),
	}
	seen := map[string]int{}
	for i, t := range opts.Tools {
		if err := t.check(); err != nil {
			return nil, fmt.Errorf("mcp: Options.Tools[%d] (%s): %w", i, t, err)
		}
		if j, dup := seen[t.Name]; dup {
			return nil, fmt.Errorf("mcp: Options.Tools[%d] (%s): the name is Tools[%d]'s too", i, t, j)
		}
		seen[t.Name] = i
		s.sdk.AddTool(describe(t), s.handle(t))
	}
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.sdk }, &sdk.StreamableHTTPOptions{
		Stateless:           true,
		JSONResponse:        true,
		MaxRequestBodyBytes: rest.MaxBody,
	})
	s.handler = rest.WithToken(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.serve(h, w, r) }))
	return s, nil
}

// describe returns the SDK's declaration of t.
func describe(t Tool) *sdk.Tool {
	schema := t.InputSchema
	if schema == nil {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	return &sdk.Tool{
		Name:        t.Name,
		Description: t.Description,
		InputSchema: schema,
		Annotations: &sdk.ToolAnnotations{
			ReadOnlyHint:   t.Contract == harness.ReadOnly,
			IdempotentHint: t.Contract != harness.NotIdempotent,
		},
	}
}

// ServeHTTP serves one HTTP request of the streamable HTTP transport, stateless: every POST
// stands alone (no Mcp-Session-Id), GET and DELETE are answered 405.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// serve hands r to the SDK's handler h as an exchange that a tool handler can drop, after
// cancelling the calls a notifications/cancelled in r names.
func (s *Server) serve(h http.Handler, w http.ResponseWriter, r *http.Request) {
	var msgs []jsonrpc.Message
	if r.Method == http.MethodPost {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, rest.MaxBody))
		if err != nil {
			http.Error(w, "reading the request body: "+err.Error(), http.StatusRequestEntityTooLarge)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		msgs = decodeBatch(body)
	}
	ex := &exchange{token: rest.Token(r.Context())}
	ex.ctx, ex.cancel = context.WithCancel(r.Context())
	defer ex.cancel()
	for _, m := range msgs {
		req, ok := m.(*jsonrpc.Request)
		switch {
		case !ok:
		case req.IsCall():
			ex.calls = append(ex.calls, req.ID)
		case req.Method == "notifications/cancelled":
			s.cancel(ex.token, req.Params)
		}
	}
	s.mu.Lock()
	s.next++
	id := strconv.FormatUint(s.next, 10)
	s.exchanges[id] = ex
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.exchanges, id)
		s.mu.Unlock()
	}()

	r = r.Clone(r.Context())
	r.Header.Set(exchangeHeader, id)
	h.ServeHTTP(&dropWriter{ResponseWriter: w, ex: ex}, r)
	if ex.dropped.Load() {
		// Nothing was written: net/http closes the connection without a response.
		panic(http.ErrAbortHandler)
	}
}

// decodeBatch decodes a POST's body, one message or a batch; what does not decode is left to
// the SDK to refuse.
func decodeBatch(body []byte) []jsonrpc.Message {
	var raws []json.RawMessage
	if err := json.Unmarshal(body, &raws); err != nil {
		raws = []json.RawMessage{body}
	}
	var msgs []jsonrpc.Message
	for _, raw := range raws {
		if m, err := jsonrpc.DecodeMessage(raw); err == nil {
			msgs = append(msgs, m)
		}
	}
	return msgs
}

// cancel cancels the calls in flight of token's process that a notifications/cancelled's
// params name. Calls are matched by their JSON-RPC ID, which is unique only per client: two
// clients in one process may share one, and both calls are cancelled.
func (s *Server) cancel(token string, params json.RawMessage) {
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ex := range s.exchanges {
		for _, c := range ex.calls {
			if ex.token == token && c == id {
				ex.cancel()
			}
		}
	}
}

// exchangeOf returns the exchange req came in, nil if none.
func (s *Server) exchangeOf(req *sdk.CallToolRequest) *exchange {
	if req.Extra == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exchanges[req.Extra.Header.Get(exchangeHeader)]
}

// dropWriter is an exchange's ResponseWriter: once the exchange is dropped, it writes nothing.
type dropWriter struct {
	http.ResponseWriter
	ex *exchange
}

// WriteHeader writes the status unless the exchange is dropped.
func (d *dropWriter) WriteHeader(code int) {
	if !d.ex.dropped.Load() {
		d.ResponseWriter.WriteHeader(code)
	}
}

// Write writes p unless the exchange is dropped.
func (d *dropWriter) Write(p []byte) (int, error) {
	if d.ex.dropped.Load() {
		return len(p), nil
	}
	return d.ResponseWriter.Write(p)
}

// Flush flushes unless the exchange is dropped.
func (d *dropWriter) Flush() {
	if !d.ex.dropped.Load() {
		_ = http.NewResponseController(d.ResponseWriter).Flush()
	}
}

// handle returns the SDK handler of t's calls.
func (s *Server) handle(t Tool) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		ex := s.exchangeOf(req)
		if ex == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "mcp: a call that came in no HTTP request"}
		}
		call, err := callOf(t, req.Params)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("tool %s: %v", t.Name, err)}
		}
		reply, err := s.world.Call(ex.ctx, call)
		switch rest.OutcomeOf(err) {
		case rest.Applied:
			return s.result(ex.ctx, call, reply)
		case rest.Transient, rest.KeyReused:
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: err.Error()}}}, nil
		case rest.Fenced:
			return nil, &jsonrpc.Error{Code: CodeFenced, Message: err.Error()}
		case rest.Late:
			<-ex.ctx.Done()
			ex.dropped.Store(true)
			return &sdk.CallToolResult{}, nil
		case rest.Ambiguous:
			ex.dropped.Store(true)
			return &sdk.CallToolResult{}, nil
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
}

// callOf returns the call params make of t: the arguments without the key as Args, the key
// from its declared place.
func callOf(t Tool, params *sdk.CallToolParamsRaw) (harness.Call, error) {
	doc, err := rest.Decode(params.Arguments)
	if err != nil {
		return harness.Call{}, fmt.Errorf("arguments are not JSON: %w", err)
	}
	if doc == nil {
		doc = map[string]any{}
	}
	if _, ok := doc.(map[string]any); !ok {
		return harness.Call{}, fmt.Errorf("arguments are %s, not a JSON object", rest.Encode(doc))
	}
	var key string
	switch {
	case t.Key.Arg != "":
		if doc, key, err = rest.SplitKey(doc, t.Key.Arg); err != nil {
			return harness.Call{}, fmt.Errorf("arguments: %w", err)
		}
	case t.Key.Meta != "":
		if v, ok := params.Meta[t.Key.Meta]; ok {
			if key, ok = v.(string); !ok {
				return harness.Call{}, fmt.Errorf("_meta.%s is %s: %w", t.Key.Meta, rest.Encode(v), rest.ErrKeyNotString)
			}
		}
	}
	return harness.Call{Tool: t.Name, Key: key, Args: rest.Encode(doc)}, nil
}

// result returns the result of an applied call: Answer's, else {"id":...} (and "topic" for an
// asynchronous tool) as text and as structured content. A call replayed under its key gets the
// same result as the first, as payment APIs answer a replay with the first response, and
// nothing says it was a replay: an agent keeps, and sends its model, the same whichever it got
// (@langchain/mcp-adapters passes a result's _meta into the prompt, so a replay flag there
// changed what the model was asked: docs/findings/sdk-resume.md).
func (s *Server) result(ctx context.Context, call harness.Call, reply harness.Reply) (*sdk.CallToolResult, error) {
	if s.answer != nil {
		recorded, err := s.answer(ctx, call, reply)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "answer: " + err.Error()}
		}
		if recorded != nil {
			var res sdk.CallToolResult
			if err := json.Unmarshal(recorded, &res); err != nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "answer: not a CallToolResult: " + err.Error()}
			}
			return &res, nil
		}
	}
	out := map[string]any{"id": reply.ID}
	if reply.Topic != "" {
		out["topic"] = reply.Topic
	}
	text := rest.Encode(out)
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(text)}}, StructuredContent: text}, nil
}
