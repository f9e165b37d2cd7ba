package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// EnvURL names the environment variable that holds the campaign's MCP endpoint for a process,
// token included (http://127.0.0.1:PORT/t/<token>/mcp): the URL Relay relays to.
const EnvURL = "CHAOSKIT_MCP_URL"

// RelayOptions configures Relay.
type RelayOptions struct {
	// URL is the streamable HTTP endpoint to relay to. "" means $CHAOSKIT_MCP_URL (EnvURL),
	// taken from the relay's environment, else from its nearest ancestor process's that has
	// it (on Linux, from /proc): an MCP client passes few of its variables to a server it
	// launches (the TypeScript SDK HOME, LOGNAME, PATH, SHELL, TERM and USER), so the agent
	// that launched the relay has it when the relay does not.
	URL string
	// In and Out are the client's side: newline-delimited JSON-RPC messages; nil means
	// os.Stdin and os.Stdout.
	In  io.Reader
	Out io.Writer
	// Client makes the HTTP requests; nil means a client without a timeout (the MCP client's
	// own timeout decides).
	Client *http.Client
	// Log receives a line for each response lost on the way; nil means os.Stderr.
	Log io.Writer
}

// Relay serves the MCP stdio transport on In and Out by relaying every message to the
// streamable HTTP endpoint URL, one POST each, made at once so that a call that hangs holds up
// no other; it is what an agent launches as its MCP server (chaoskit mcp). Answers are written
// to Out as they come:
//   - a JSON or server-sent-events response: its messages;
//   - an HTTP error without a JSON-RPC body: a JSON-RPC error for the call (-32603, naming the
//     status);
//   - no response (the connection closed without one: the server dropped it after applying the
//     call): nothing. The client never gets an answer to that request ID: its own request
//     timeout decides (the TypeScript SDK's default is 60 s, then McpError -32001 "Request
//     timed out"), as when a stdio server loses a response.
//
// A notifications/cancelled from the client aborts the POST of the call it names (so the
// server sees its caller go) and is relayed too. Relay returns nil when In ends (after the calls
// in flight are answered), or ctx's error when ctx is done.
func Relay(ctx context.Context, opts RelayOptions) error {
	url := opts.URL
	if url == "" {
		var ok bool
		if url, ok = LookupURL(); !ok {
			return fmt.Errorf("mcp relay: RelayOptions.URL is empty and $%s is set neither here nor in an ancestor process: give the MCP server's env %s, or the URL", EnvURL, EnvURL)
		}
	}
	in, out := opts.In, opts.Out
	if in == nil {
		in = os.Stdin
	}
	if out == nil {
		out = os.Stdout
	}
	rl := &relay{url: url, client: opts.Client, log: opts.Log, inflight: map[jsonrpc.ID]context.CancelFunc{}}
	if rl.client == nil {
		rl.client = &http.Client{}
	}
	if rl.log == nil {
		rl.log = os.Stderr
	}
	conn, err := (&sdk.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{out}}).Connect(ctx)
	if err != nil {
		return fmt.Errorf("mcp relay: %w", err)
	}
	rl.conn = conn
	defer conn.Close()

	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		msg, err := conn.Read(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("mcp relay: reading the client: %w", err)
		}
		callCtx := ctx
		if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
			var cancel context.CancelFunc
			callCtx, cancel = context.WithCancel(ctx)
			rl.mu.Lock()
			rl.inflight[req.ID] = cancel
			rl.mu.Unlock()
		} else if ok && req.Method == "notifications/cancelled" {
			rl.cancel(req.Params)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rl.post(callCtx, msg)
		}()
	}
}

// LookupURL returns $CHAOSKIT_MCP_URL from this process's environment, else from its nearest
// ancestor's that has it (on Linux, from /proc/PID/environ: the environment the ancestor was
// started with).
func LookupURL() (string, bool) {
	if v := os.Getenv(EnvURL); v != "" {
		return v, true
	}
	for pid, depth := os.Getppid(), 0; pid > 1 && depth < 64; depth++ {
		environ, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
		if err != nil {
			return "", false
		}
		for _, kv := range bytes.Split(environ, []byte{0}) {
			if v, ok := strings.CutPrefix(string(kv), EnvURL+"="); ok && v != "" {
				return v, true
			}
		}
		if pid = parentOf(pid); pid < 0 {
			return "", false
		}
	}
	return "", false
}

// parentOf returns the parent of process pid, from /proc/PID/stat; -1 if it cannot be read.
func parentOf(pid int) int {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses, so read after the last ")".
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(fields) < 2 {
		return -1
	}
	ppid, err := strconv.Atoi(fields[1])
	if err != nil {
		return -1
	}
	return ppid
}

type relay struct {
	url    string
	client *http.Client
	log    io.Writer
	conn   sdk.Connection

	mu       sync.Mutex
	inflight map[jsonrpc.ID]context.CancelFunc
	version  string // the protocol version initialize negotiated, for Mcp-Protocol-Version
}

type nopWriteCloser struct{ io.Writer }

// Close leaves the writer open: Out belongs to the caller.
func (nopWriteCloser) Close() error { return nil }

// cancel aborts the POST of the call a notifications/cancelled's params name.
func (rl *relay) cancel(params json.RawMessage) {
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
		rl.mu.Lock()
		if cancel := rl.inflight[id]; cancel != nil {
			cancel()
		}
		rl.mu.Unlock()
	}
}

// post relays msg and writes what comes back.
func (rl *relay) post(ctx context.Context, msg jsonrpc.Message) {
	req, _ := msg.(*jsonrpc.Request)
	var call jsonrpc.ID
	if req != nil && req.IsCall() {
		call = req.ID
		defer func() {
			rl.mu.Lock()
			if cancel := rl.inflight[call]; cancel != nil {
				cancel()
				delete(rl.inflight, call)
			}
			rl.mu.Unlock()
		}()
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		fmt.Fprintf(rl.log, "chaoskit mcp: encoding a message: %v\n", err)
		return
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, rl.url, bytes.NewReader(data))
	if err != nil {
		fmt.Fprintf(rl.log, "chaoskit mcp: %v\n", err)
		return
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json, text/event-stream")
	rl.mu.Lock()
	if rl.version != "" {
		hreq.Header.Set("Mcp-Protocol-Version", rl.version)
	}
	rl.mu.Unlock()
	what := "a message"
	if req != nil {
		what = req.Method
	}
	resp, err := rl.client.Do(hreq)
	if err != nil {
		if ctx.Err() == nil && call.IsValid() {
			fmt.Fprintf(rl.log, "chaoskit mcp: %s (id %v): no response (%v): the client gets none\n", what, call.Raw(), err)
		}
		return
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		if ctx.Err() == nil && call.IsValid() {
			fmt.Fprintf(rl.log, "chaoskit mcp: %s (id %v): response cut (%v): the client gets none\n", what, call.Raw(), err)
		}
		return
	}
	var answers []jsonrpc.Message
	media, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch media {
	case "application/json":
		answers = decodeBatch(body)
	case "text/event-stream":
		answers = decodeEvents(body)
	}
	if len(answers) == 0 && resp.StatusCode/100 != 2 && call.IsValid() {
		text := strings.TrimSpace(string(body))
		answers = append(answers, &jsonrpc.Response{ID: call, Error: &jsonrpc.Error{
			Code:    jsonrpc.CodeInternalError,
			Message: fmt.Sprintf("MCP endpoint answered %s: %s", resp.Status, text),
		}})
	}
	for _, a := range answers {
		if r, ok := a.(*jsonrpc.Response); ok && req != nil && req.Method == "initialize" && r.Error == nil {
			var res struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			if json.Unmarshal(r.Result, &res) == nil && res.ProtocolVersion != "" {
				rl.mu.Lock()
				rl.version = res.ProtocolVersion
				rl.mu.Unlock()
			}
		}
		if err := rl.conn.Write(context.Background(), a); err != nil {
			fmt.Fprintf(rl.log, "chaoskit mcp: writing to the client: %v\n", err)
		}
	}
}

// decodeEvents decodes the messages of a server-sent-events body: each event's data lines.
func decodeEvents(body []byte) []jsonrpc.Message {
	var msgs []jsonrpc.Message
	var data []byte
	flush := func() {
		if len(data) > 0 {
			msgs = append(msgs, decodeBatch(data)...)
		}
		data = nil
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, len(body)+1)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			flush()
			continue
		}
		if v, ok := strings.CutPrefix(line, "data:"); ok {
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, strings.TrimPrefix(v, " ")...)
		}
	}
	flush()
	return msgs
}
