package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/adapters/mcp"
	"github.com/chaoskit/chaoskit/adapters/rest"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// world is a fake rest.Tools. It records each call with its caller's token; then answer, if
// set, decides the call (it may block on ctx); otherwise the call is applied and numbered per
// tool. After a call ends, its context's error is recorded.
type world struct {
	mu     sync.Mutex
	calls  []seen
	n      map[string]int
	answer func(ctx context.Context, c harness.Call) (harness.Reply, error)
}

type seen struct {
	Token string
	Call  harness.Call
	// Gone is the call's context error when the call returned, "" if none.
	Gone string
}

func (w *world) Call(ctx context.Context, c harness.Call) (harness.Reply, error) {
	w.mu.Lock()
	i := len(w.calls)
	w.calls = append(w.calls, seen{Token: rest.Token(ctx), Call: c})
	if w.n == nil {
		w.n = map[string]int{}
	}
	w.n[c.Tool]++
	r := harness.Reply{ID: c.Tool + "-" + strconv.Itoa(w.n[c.Tool])}
	answer := w.answer
	w.mu.Unlock()
	var err error
	if answer != nil {
		r, err = answer(ctx, c)
	}
	if ctx.Err() != nil {
		w.mu.Lock()
		w.calls[i].Gone = ctx.Err().Error()
		w.mu.Unlock()
	}
	return r, err
}

func (w *world) log() []seen {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]seen(nil), w.calls...)
}

// waitGone waits until call i has returned after its context ended.
func (w *world) waitGone(t *testing.T, i int) string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if calls := w.log(); len(calls) > i && calls[i].Gone != "" {
			return calls[i].Gone
		}
	}
	t.Fatalf("call %d's context never ended: %+v", i, w.log())
	return ""
}

func tools(t testing.TB) []mcp.Tool {
	t.Helper()
	var list []mcp.Tool
	for _, text := range []string{
		"create_po=idempotent-by-arg:$.idempotency_key",
		"ship=idempotent-by-arg:$.order.key",
		"send_email=idempotent-by-meta:idempotency_key",
		"get_po=read-only",
		"notify=not-idempotent",
	} {
		tool, err := mcp.ParseTool(text)
		if err != nil {
			t.Fatal(err)
		}
		list = append(list, tool)
	}
	list[0].Description = "Create a purchase order."
	list[0].InputSchema = json.RawMessage(`{"type":"object","properties":{"vendor":{"type":"string"},"idempotency_key":{"type":"string"}},"required":["vendor"]}`)
	return list
}

// start serves w's tools and returns the server's URL for process proc.
func start(t *testing.T, w *world, answer rest.Answer) (*httptest.Server, string) {
	t.Helper()
	s, err := mcp.New(mcp.Options{Tools: tools(t), World: w, Answer: answer})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv, srv.URL + "/t/proc-1/mcp"
}

// connect returns a Go SDK client session over streamable HTTP.
func connect(t *testing.T, url string) *sdk.ClientSession {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func call(t *testing.T, cs *sdk.ClientSession, p *sdk.CallToolParams) (*sdk.CallToolResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return cs.CallTool(ctx, p)
}

func TestToolsAreListedAsDeclared(t *testing.T) {
	_, url := start(t, &world{}, nil)
	res, err := connect(t, url).ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tool := range res.Tools {
		schema, _ := json.Marshal(tool.InputSchema)
		got = append(got, fmt.Sprintf("%s %q %s read-only=%v idempotent=%v", tool.Name, tool.Description, schema,
			tool.Annotations.ReadOnlyHint, tool.Annotations.IdempotentHint))
	}
	want := []string{
		`create_po "Create a purchase order." {"properties":{"idempotency_key":{"type":"string"},"vendor":{"type":"string"}},"required":["vendor"],"type":"object"} read-only=false idempotent=true`,
		`get_po "" {"type":"object"} read-only=true idempotent=true`,
		`notify "" {"type":"object"} read-only=false idempotent=false`,
		`send_email "" {"type":"object"} read-only=false idempotent=true`,
		`ship "" {"type":"object"} read-only=false idempotent=true`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
}

func TestKeyIsTakenFromItsPlaceAndLeftOutOfArgs(t *testing.T) {
	w := &world{}
	_, url := start(t, w, nil)
	cs := connect(t, url)
	for _, p := range []*sdk.CallToolParams{
		{Name: "create_po", Arguments: map[string]any{"vendor": "acme", "qty": 3, "idempotency_key": "run-1:po"}},
		{Name: "create_po", Arguments: map[string]any{"qty": 3, "idempotency_key": "run-2:po", "vendor": "acme"}},
		{Name: "ship", Arguments: map[string]any{"order": map[string]any{"key": "k-ship", "id": 7}}},
		{Name: "send_email", Arguments: map[string]any{"to": "a@b"}, Meta: sdk.Meta{"idempotency_key": "m-1", "other": 1}},
		{Name: "notify", Arguments: map[string]any{"idempotency_key": "ignored", "text": "hi"}},
		{Name: "get_po"},
	} {
		res, err := call(t, cs, p)
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", p.Name, err, res)
		}
	}
	want := []seen{
		{"proc-1", harness.Call{Tool: "create_po", Key: "run-1:po", Args: json.RawMessage(`{"qty":3,"vendor":"acme"}`)}, ""},
		{"proc-1", harness.Call{Tool: "create_po", Key: "run-2:po", Args: json.RawMessage(`{"qty":3,"vendor":"acme"}`)}, ""},
		{"proc-1", harness.Call{Tool: "ship", Key: "k-ship", Args: json.RawMessage(`{"order":{"id":7}}`)}, ""},
		{"proc-1", harness.Call{Tool: "send_email", Key: "m-1", Args: json.RawMessage(`{"to":"a@b"}`)}, ""},
		{"proc-1", harness.Call{Tool: "notify", Args: json.RawMessage(`{"idempotency_key":"ignored","text":"hi"}`)}, ""},
		{"proc-1", harness.Call{Tool: "get_po", Args: json.RawMessage(`{}`)}, ""},
	}
	if diff := cmp.Diff(want, w.log()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// A result is the reply's id (and topic) as text and as structured content, the same for a
// replayed call as for the first, with nothing that tells them apart.
func TestResultIsTheReply(t *testing.T) {
	w := &world{answer: func(_ context.Context, c harness.Call) (harness.Reply, error) {
		return harness.Reply{ID: "create_po-1", Replayed: true, Topic: "po-done"}, nil
	}}
	_, url := start(t, w, nil)
	res, err := call(t, connect(t, url), &sdk.CallToolParams{Name: "create_po", Arguments: map[string]any{"vendor": "acme"}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"create_po-1","topic":"po-done"}`
	structured, _ := json.Marshal(res.StructuredContent)
	if len(res.Content) != 1 || res.Content[0].(*sdk.TextContent).Text != want || string(structured) != want || res.IsError {
		t.Errorf("result %+v, structured %s; want %s as both", res, structured, want)
	}
	for k := range res.Meta {
		if strings.Contains(k, "replay") {
			t.Errorf("result _meta %v: want nothing that marks a replay, so that it reaches the model as the first call did", res.Meta)
		}
	}
}

func TestAnswerPassesARecordedResult(t *testing.T) {
	_, url := start(t, &world{}, func(_ context.Context, c harness.Call, r harness.Reply) (json.RawMessage, error) {
		if c.Tool != "get_po" {
			return nil, nil
		}
		return json.RawMessage(`{"content":[{"type":"text","text":"PO 7: 3 chairs"}]}`), nil
	})
	cs := connect(t, url)
	res, err := call(t, cs, &sdk.CallToolParams{Name: "get_po"})
	if err != nil || res.Content[0].(*sdk.TextContent).Text != "PO 7: 3 chairs" {
		t.Errorf("recorded result: %+v, %v", res, err)
	}
	res, err = call(t, cs, &sdk.CallToolParams{Name: "notify"})
	if err != nil || res.Content[0].(*sdk.TextContent).Text != `{"id":"notify-1"}` {
		t.Errorf("default result: %+v, %v", res, err)
	}
}

func TestToolErrorsAreResults(t *testing.T) {
	for _, err := range []error{
		harness.ErrToolTransient,
		fmt.Errorf("world: %w", &harness.KeyReusedError{Tool: "create_po", Key: "k1"}),
	} {
		w := &world{answer: func(context.Context, harness.Call) (harness.Reply, error) { return harness.Reply{}, err }}
		_, url := start(t, w, nil)
		res, cerr := call(t, connect(t, url), &sdk.CallToolParams{Name: "create_po", Arguments: map[string]any{"idempotency_key": "k1"}})
		if cerr != nil || !res.IsError || len(res.Content) != 1 || res.Content[0].(*sdk.TextContent).Text != err.Error() {
			t.Errorf("%v: got %+v, %v; want a result with isError and the error's text", err, res, cerr)
		}
	}
}

func TestProtocolErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error // the world's
		params *sdk.CallToolParams
		code   int64
		says   string
	}{
		{"fenced", fmt.Errorf("w: %w", harness.ErrFenced), &sdk.CallToolParams{Name: "notify"}, mcp.CodeFenced, "stale fencing token: rejected"},
		{"other", errors.New("world on fire"), &sdk.CallToolParams{Name: "notify"}, jsonrpc.CodeInternalError, "world on fire"},
		{"undeclared", nil, &sdk.CallToolParams{Name: "delete_everything"}, jsonrpc.CodeInvalidParams, `unknown tool "delete_everything"`},
		{"not an object", nil, &sdk.CallToolParams{Name: "notify", Arguments: []int{1}}, jsonrpc.CodeInvalidParams, "tool notify: arguments are [1], not a JSON object"},
		{"arg key", nil, &sdk.CallToolParams{Name: "create_po", Arguments: map[string]any{"idempotency_key": 7}}, jsonrpc.CodeInvalidParams, "tool create_po: arguments: $.idempotency_key is 7: an idempotency key must be a JSON string"},
		{"meta key", nil, &sdk.CallToolParams{Name: "send_email", Meta: sdk.Meta{"idempotency_key": true}}, jsonrpc.CodeInvalidParams, "_meta.idempotency_key is true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &world{answer: func(context.Context, harness.Call) (harness.Reply, error) { return harness.Reply{}, tc.err }}
			_, url := start(t, w, nil)
			_, err := call(t, connect(t, url), tc.params)
			var rpc *jsonrpc.Error
			if !errors.As(err, &rpc) || rpc.Code != tc.code || !strings.Contains(rpc.Message, tc.says) {
				t.Errorf("got %v; want JSON-RPC error %d saying %q", err, tc.code, tc.says)
			}
			if tc.err == nil && len(w.log()) != 0 {
				t.Errorf("the world was called: %+v", w.log())
			}
		})
	}
}

// post sends one JSON-RPC message as the streamable HTTP transport does.
func post(ctx context.Context, url, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	return http.DefaultClient.Do(req)
}

const callNotify = `{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"notify","arguments":{"text":"hi"}}}`

func TestAmbiguousClosesTheConnectionWithoutAResponse(t *testing.T) {
	w := &world{answer: func(context.Context, harness.Call) (harness.Reply, error) {
		return harness.Reply{}, harness.ErrToolAmbiguous
	}}
	_, url := start(t, w, nil)
	resp, err := post(context.Background(), url, callNotify)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("got a response, %s; want the connection closed without one", resp.Status)
	}
	if !strings.Contains(err.Error(), "EOF") {
		t.Errorf("got %v; want an EOF", err)
	}
	// The Go SDK's client sees the same.
	if _, err := call(t, connect(t, url), &sdk.CallToolParams{Name: "notify"}); err == nil || !strings.Contains(err.Error(), "EOF") {
		t.Errorf("Go SDK client: %v; want an EOF", err)
	}
	if n := len(w.log()); n != 2 {
		t.Errorf("%d calls; want 2, each applied before its response was lost", n)
	}
}

func TestLateAnswerWaitsForTheCallerToGiveUp(t *testing.T) {
	late := func(context.Context, harness.Call) (harness.Reply, error) {
		return harness.Reply{}, context.DeadlineExceeded
	}
	t.Run("timeout", func(t *testing.T) {
		w := &world{answer: late}
		_, url := start(t, w, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		begin := time.Now()
		_, err := post(ctx, url, callNotify)
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(begin) < 300*time.Millisecond {
			t.Errorf("after %v: %v; want the caller's own timeout", time.Since(begin), err)
		}
	})
	t.Run("notifications/cancelled", func(t *testing.T) {
		w := &world{answer: func(ctx context.Context, _ harness.Call) (harness.Reply, error) {
			<-ctx.Done() // a backend that blocks until the caller gives up
			return harness.Reply{}, context.DeadlineExceeded
		}}
		srv, url := start(t, w, nil)
		done := make(chan error, 1)
		go func() {
			resp, err := post(context.Background(), url, callNotify)
			if err == nil {
				resp.Body.Close()
			}
			done <- err
		}()
		for len(w.log()) == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		// Another process's cancellation of the same ID cancels nothing.
		other, err := post(context.Background(), srv.URL+"/t/proc-2/mcp", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":41}}`)
		if err != nil {
			t.Fatal(err)
		}
		other.Body.Close()
		select {
		case err := <-done:
			t.Fatalf("the call ended (%v) on another process's cancellation", err)
		case <-time.After(100 * time.Millisecond):
		}
		resp, err := post(context.Background(), url, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":41,"reason":"timeout"}}`)
		if err != nil || resp.StatusCode != http.StatusAccepted {
			t.Fatalf("cancellation: %v %v", resp, err)
		}
		resp.Body.Close()
		if err := <-done; err == nil || !strings.Contains(err.Error(), "EOF") {
			t.Errorf("the cancelled call got %v; want the connection closed without a response", err)
		}
		if gone := w.waitGone(t, 0); gone != context.Canceled.Error() {
			t.Errorf("the world's call ended with %q", gone)
		}
	})
}

func TestTokenFromBearer(t *testing.T) {
	w := &world{}
	srv, _ := start(t, w, nil)
	req, _ := http.NewRequest("POST", srv.URL+"/mcp", bytes.NewReader([]byte(callNotify)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer proc-7")
	req.Header.Set("Chaoskit-Exchange", "999") // a client cannot pick another exchange
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := w.log(); len(got) != 1 || got[0].Token != "proc-7" {
		t.Errorf("calls %+v; want one by proc-7", got)
	}
}

func TestNewNamesTheField(t *testing.T) {
	for _, tc := range []struct {
		opts mcp.Options
		says string
	}{
		{mcp.Options{}, "Options.World is nil"},
		{mcp.Options{World: &world{}, Tools: []mcp.Tool{{Name: "a b", Contract: harness.ReadOnly}}}, `Options.Tools[0] (a b=read-only): Name "a b": ' ' is not`},
		{mcp.Options{World: &world{}, Tools: []mcp.Tool{{Name: "a", Contract: harness.IdempotentByKey}}}, "Key: an idempotent-by-key tool has its key in exactly one place (0 set)"},
		{mcp.Options{World: &world{}, Tools: []mcp.Tool{{Name: "a", Contract: harness.IdempotentByKey, Key: rest.KeyAt{Header: "Idempotency-Key"}}}}, "Key: idempotent-by-header is not for this front end (want idempotent-by-arg or idempotent-by-meta)"},
		{mcp.Options{World: &world{}, Tools: []mcp.Tool{{Name: "a", Contract: harness.ReadOnly, InputSchema: json.RawMessage(`{"type":"array"}`)}}}, `Options.Tools[0] (a=read-only): InputSchema: want "type": "object"`},
		{mcp.Options{World: &world{}, Tools: []mcp.Tool{{Name: "a", Contract: harness.ReadOnly, InputSchema: json.RawMessage(`[`)}}}, "InputSchema is not a JSON object"},
		{mcp.Options{World: &world{}, Tools: []mcp.Tool{{Name: "a", Contract: harness.ReadOnly}, {Name: "a", Contract: harness.NotIdempotent}}}, "Options.Tools[1] (a=not-idempotent): the name is Tools[0]'s too"},
	} {
		_, err := mcp.New(tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("New: %v; want an error saying %q", err, tc.says)
		}
	}
}
