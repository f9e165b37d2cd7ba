package mcp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/adapters/mcp"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/internal/needs"
)

// sdkDir is the npm project of the clients the compatibility test runs.
const sdkDir = "testdata/sdk"

// npmPackages returns node's path once sdkDir's packages are installed (needs.NPM).
func npmPackages(t *testing.T) string {
	t.Helper()
	return needs.NPM(t, sdkDir)
}

// compatWorld answers the compatibility test's tools: flaky fails transiently, fenced is fenced,
// lost loses its response, slow answers only after its caller gave up.
func compatWorld() *world {
	return &world{answer: func(ctx context.Context, c harness.Call) (harness.Reply, error) {
		switch c.Tool {
		case "flaky":
			return harness.Reply{}, harness.ErrToolTransient
		case "fenced":
			return harness.Reply{}, harness.ErrFenced
		case "lost":
			return harness.Reply{}, harness.ErrToolAmbiguous
		case "slow":
			<-ctx.Done()
			return harness.Reply{}, context.DeadlineExceeded
		}
		return harness.Reply{ID: c.Tool + "-1"}, nil
	}}
}

// TestClientCompatibility runs testdata/sdk/compat.mjs: the TypeScript SDK's client and
// LangChain's MCP adapters, over streamable HTTP and over stdio through the relay (this test
// binary, launched with the SDK's default environment: the relay finds the URL in node's).
func TestClientCompatibility(t *testing.T) {
	node := npmPackages(t)
	var tools []mcp.Tool
	for _, text := range []string{
		"create_po=idempotent-by-arg:$.idempotency_key", "send_email=idempotent-by-meta:idempotency_key",
		"flaky=not-idempotent", "fenced=not-idempotent", "lost=not-idempotent", "slow=not-idempotent",
	} {
		tool, err := mcp.ParseTool(text)
		if err != nil {
			t.Fatal(err)
		}
		tools = append(tools, tool)
	}
	w := compatWorld()
	s, err := mcp.New(mcp.Options{Tools: tools, World: w})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "compat.mjs")
	cmd.Dir = sdkDir
	cmd.Env = append(os.Environ(), mcp.EnvURL+"="+srv.URL+"/t/proc-1/mcp", "CHAOSKIT_TEST_RELAY="+self+" "+relayArg)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node compat.mjs: %v\n%s\n%s", err, out, stderr.String())
	}
	got := map[string]map[string]any{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("compat.mjs printed %q: %v", sc.Text(), err)
		}
		id := fmt.Sprint(line["client"], " ", line["transport"], " ", line["check"])
		got[id] = line
		t.Log(sc.Text())
	}
	if got["<nil> <nil> done"] == nil {
		t.Fatalf("compat.mjs did not finish:\n%s\n%s", out, stderr.String())
	}

	expect := func(id, field, want string) {
		t.Helper()
		if v := fmt.Sprint(got[id][field]); !strings.Contains(v, want) {
			t.Errorf("%s: %s = %q; want it to hold %q", id, field, v, want)
		}
	}
	for _, tr := range []string{"http", "stdio"} {
		sdk := "sdk " + tr + " "
		expect(sdk+"list", "tools", "[create_po fenced flaky lost send_email slow]")
		expect(sdk+"arg-key", "text", `{"id":"create_po-1"}`)
		expect(sdk+"arg-key", "structured", "map[id:create_po-1]")
		expect(sdk+"meta-key", "isError", "false")
		expect(sdk+"transient", "isError", "true")
		expect(sdk+"transient", "text", "service unavailable (503): not applied, retry")
		expect(sdk+"fenced", "code", fmt.Sprint(mcp.CodeFenced))
		expect(sdk+"fenced", "message", "stale fencing token: rejected")
		expect(sdk+"undeclared", "code", "-32602")
		expect(sdk+"late", "code", "-32001")
		expect(sdk+"late", "message", "Request timed out")
		expect(sdk+"after", "isError", "false")
		lc := "langchain " + tr + " "
		expect(lc+"list", "tools", "[create_po fenced flaky lost send_email slow]")
		expect(lc+"arg-key", "result", "create_po-1")
		expect(lc+"transient", "error", "ToolException")
		expect(lc+"transient", "message", "service unavailable (503)")
		expect(lc+"fenced", "message", "stale fencing token: rejected")
	}
	// A lost response: over HTTP the fetch fails; over stdio the relay sends nothing, and the
	// client's own timeout decides.
	expect("sdk http lost", "error", "TypeError")
	expect("sdk http lost", "message", "fetch failed")
	expect("sdk stdio lost", "code", "-32001")

	var late []int
	for i, c := range w.log() {
		if c.Token != "proc-1" {
			t.Errorf("call %d (%s) by %q; want proc-1", i, c.Call.Tool, c.Token)
		}
		switch c.Call.Tool {
		case "create_po":
			if string(c.Call.Args.(json.RawMessage)) != `{"vendor":"acme"}` || !strings.HasSuffix(c.Call.Key, "-k1") && !strings.HasSuffix(c.Call.Key, "-k2") {
				t.Errorf("create_po call %+v; want the key out of the args", c.Call)
			}
		case "send_email":
			if c.Call.Key != "http-m1" && c.Call.Key != "stdio-m1" {
				t.Errorf("send_email call %+v; want the key from _meta", c.Call)
			}
		case "slow":
			late = append(late, i)
		}
	}
	if len(late) != 2 {
		t.Errorf("%d calls of slow; want 2", len(late))
	}
	for _, i := range late {
		if gone := w.waitGone(t, i); gone != context.Canceled.Error() {
			t.Errorf("slow call %d ended with %q; want its caller's cancellation", i, gone)
		}
	}
}
