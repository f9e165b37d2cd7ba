package mcp_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/adapters/mcp"
	"github.com/chaoskit/chaoskit/harness"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// relayArg, as the test binary's first argument, makes it the relay (what chaoskit mcp runs),
// for clients that launch their MCP server as a command.
const relayArg = "chaoskit-mcp-relay"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == relayArg {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := mcp.Relay(ctx, mcp.RelayOptions{})
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// syncBuffer is a bytes.Buffer safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// relayed returns a Go SDK client session that reaches url through an in-process Relay over
// pipes, and the relay's log.
func relayed(t *testing.T, url string) (*sdk.ClientSession, *syncBuffer) {
	t.Helper()
	toRelay, clientOut := io.Pipe()
	clientIn, fromRelay := io.Pipe()
	log := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- mcp.Relay(context.Background(), mcp.RelayOptions{URL: url, In: toRelay, Out: fromRelay, Log: log})
		fromRelay.Close()
	}()
	c := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &sdk.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		clientOut.Close()
		if err := <-done; err != nil {
			t.Errorf("Relay: %v", err)
		}
	})
	return cs, log
}

func TestRelayServesStdio(t *testing.T) {
	w := &world{}
	_, url := start(t, w, nil)
	cs, _ := relayed(t, url)
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(list.Tools) != 5 {
		t.Fatalf("tools over the relay: %v, %v", list, err)
	}
	res, err := call(t, cs, &sdk.CallToolParams{Name: "create_po", Arguments: map[string]any{"vendor": "acme", "idempotency_key": "k"}})
	if err != nil || res.Content[0].(*sdk.TextContent).Text != `{"id":"create_po-1"}` {
		t.Errorf("call over the relay: %+v, %v", res, err)
	}
	if got := w.log(); len(got) != 1 || got[0].Token != "proc-1" || got[0].Call.Key != "k" {
		t.Errorf("calls %+v", got)
	}
}

func TestRelayedErrorsArriveAsTheyLeft(t *testing.T) {
	w := &world{answer: func(_ context.Context, c harness.Call) (harness.Reply, error) {
		if c.Tool == "notify" {
			return harness.Reply{}, harness.ErrFenced
		}
		return harness.Reply{}, harness.ErrToolTransient
	}}
	_, url := start(t, w, nil)
	cs, _ := relayed(t, url)
	if res, err := call(t, cs, &sdk.CallToolParams{Name: "get_po"}); err != nil || !res.IsError {
		t.Errorf("transient: %+v, %v; want an isError result", res, err)
	}
	if _, err := call(t, cs, &sdk.CallToolParams{Name: "notify"}); err == nil || !strings.Contains(err.Error(), "stale fencing token") {
		t.Errorf("fenced: %v; want the JSON-RPC error", err)
	}
}

// An ambiguous call's response is lost: the stdio client gets nothing for it, and its own
// timeout decides; the calls after it are served.
func TestRelayDropsALostResponse(t *testing.T) {
	w := &world{answer: func(_ context.Context, c harness.Call) (harness.Reply, error) {
		if c.Tool == "notify" {
			return harness.Reply{}, harness.ErrToolAmbiguous
		}
		return harness.Reply{ID: c.Tool + "-1"}, nil
	}}
	_, url := start(t, w, nil)
	cs, log := relayed(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "notify"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("lost response: %v; want the client's own timeout", err)
	}
	if !strings.Contains(log.String(), "tools/call (id ") || !strings.Contains(log.String(), "): no response (Post") {
		t.Errorf("relay log %q; want the lost response named", log.String())
	}
	if res, err := call(t, cs, &sdk.CallToolParams{Name: "get_po"}); err != nil || res.IsError {
		t.Errorf("the next call: %+v, %v", res, err)
	}
}

// A client that gives up on a call cancels it (notifications/cancelled); the relay aborts the
// call's POST and the world's call sees its context end.
func TestRelayPassesACancellation(t *testing.T) {
	w := &world{answer: func(ctx context.Context, _ harness.Call) (harness.Reply, error) {
		<-ctx.Done()
		return harness.Reply{}, context.DeadlineExceeded
	}}
	_, url := start(t, w, nil)
	cs, _ := relayed(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "notify"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("late answer: %v; want the client's own timeout", err)
	}
	if gone := w.waitGone(t, 0); gone != context.Canceled.Error() {
		t.Errorf("the world's call ended with %q", gone)
	}
}

// A client that launches its server with a few variables only (as the TypeScript SDK does):
// the relay finds CHAOSKIT_MCP_URL in the environment of the agent that launched it.
func TestRelayTakesTheURLFromAnAncestor(t *testing.T) {
	sh := exec.Command("sh", "-c", `env -i PATH="$PATH" "$0" `+relayArg+`; :`, os.Args[0])
	w := &world{}
	_, url := start(t, w, nil)
	sh.Env = append(os.Environ(), mcp.EnvURL+"="+url)
	sh.Stderr = os.Stderr
	c := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &sdk.CommandTransport{Command: sh}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := call(t, cs, &sdk.CallToolParams{Name: "get_po"}); err != nil {
		t.Fatal(err)
	}
	if got := w.log(); len(got) != 1 || got[0].Token != "proc-1" {
		t.Errorf("calls %+v", got)
	}
}

func TestRelayWithoutAURLSaysWhereToPutIt(t *testing.T) {
	if _, inherited := mcp.LookupURL(); inherited {
		t.Skip(mcp.EnvURL + " is set for this test process")
	}
	cmd := exec.Command(os.Args[0], relayArg)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "RelayOptions.URL is empty and $CHAOSKIT_MCP_URL is set neither here nor in an ancestor process") {
		t.Errorf("relay without a URL: %v, %s", err, out)
	}
}
