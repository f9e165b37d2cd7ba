package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/internal/needs"
	"github.com/chaoskit/chaoskit/oracle"
)

// buyerFlags run adapters/process/testdata/agent/buyer.py, a Python agent that knows nothing of
// chaoskit, as a team would: its model from a cassette, its REST service and MCP tool declared,
// its own variable names mapped onto the services' URLs.
func buyerFlags(t *testing.T, extra ...string) []string {
	t.Helper()
	needs.Command(t, "python3", "apt-get install python3")
	// The interpreter itself, not a version manager's shim, which starts a shell at every run.
	exe, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Fatalf("finding the interpreter python3 runs: %v", err)
	}
	python := strings.TrimSpace(string(exe))
	agent, _ := filepath.Abs("../../adapters/process/testdata/agent")
	return append([]string{
		"--exec", python + " -S -B " + agent + "/buyer.py" + strings.Join(extra, " "),
		"--state", python + " -S -B " + agent + "/buyer.py --dump-state",
		"--cassette", agent + "/cassette.json",
		"--http", "POST /v1/purchase_orders=idempotent-by-header:Idempotency-Key,name=purchase_orders",
		"--tool", "notify=idempotent-by-arg:$.key",
		"--env", "STATE_DIR=${CHAOSKIT_STATE_DIR}", "--env", "PURCHASING_URL=${CHAOSKIT_HTTP_URL}",
		"--env", "NOTIFY_MCP_URL=${CHAOSKIT_MCP_URL}",
		"--ignore", "$[*].tool_calls[*].id", "--ignore", "$[*].tool_call_id",
	}, nil...)
}

// chaoskit run --exec tests an unmodified agent with flags only: the correct one passes every
// kill, the one without idempotency keys duplicates its order, and the failure's replay command
// carries the services and fails again.
func TestRunServesAnUnmodifiedAgent(t *testing.T) {
	code, out, errOut := chaoskit(t, append([]string{"run", "--faults", "kill,model-cut", "--out", t.TempDir()}, buyerFlags(t)...)...)
	if code != exitOK {
		t.Fatalf("correct agent: exit %d, want 0:\n%s%s", code, out, errOut)
	}
	dir := filepath.Join(t.TempDir(), "report")
	code, out, errOut = chaoskit(t, append([]string{"run", "--faults", "kill", "--out", dir, "--format", "json"}, buyerFlags(t, " --no-key")...)...)
	if code != exitFail {
		t.Fatalf("agent without keys: exit %d, want 1:\n%s%s", code, out, errOut)
	}
	var failed string
	for _, c := range loadDir(t, dir).Cases {
		if c.Verdict == oracle.Fail {
			failed = c.Repro
			break
		}
	}
	for _, want := range []string{"--cassette", "--http 'POST /v1/purchase_orders=idempotent-by-header:Idempotency-Key,name=purchase_orders'", "--env 'PURCHASING_URL=${CHAOSKIT_HTTP_URL}'"} {
		if !strings.Contains(failed, want) {
			t.Fatalf("replay command %q lacks %q", failed, want)
		}
	}
	words, err := splitCommand(failed)
	if err != nil {
		t.Fatal(err)
	}
	if code, out, _ := chaoskit(t, words[1:]...); code != exitFail {
		t.Errorf("%s: exit %d, want the failure again:\n%s", failed, code, out)
	}
}

// chaoskit record runs the agent against a real provider (here a fake one) and writes what it
// asked and got; a campaign answers from that cassette.
func TestRecordWritesACassetteThatReplays(t *testing.T) {
	const order = `{"id":"chatcmpl-real1","object":"chat.completion","created":1764288000,"model":"gpt-4o-mini","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[` +
		`{"id":"call_real1","type":"function","function":{"name":"create_po","arguments":"{\"vendor\":\"acme\",\"usd\":1200}"}},` +
		`{"id":"call_real2","type":"function","function":{"name":"notify","arguments":"{\"text\":\"ordered from acme\"}"}}]}}],"usage":{"prompt_tokens":20,"completion_tokens":30,"total_tokens":50}}`
	const filed = `{"id":"chatcmpl-real2","object":"chat.completion","created":1764288001,"model":"gpt-4o-mini","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"filed"}}],"usage":{"prompt_tokens":60,"completion_tokens":2,"total_tokens":62}}`
	asked := 0
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked++
		if r.Header.Get("Authorization") != "Bearer sk-real" {
			http.Error(w, "bad key "+r.Header.Get("Authorization"), http.StatusUnauthorized)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Messages []json.RawMessage `json:"messages"`
		}
		json.Unmarshal(body, &req)
		w.Header().Set("Content-Type", "application/json")
		if len(req.Messages) > 1 {
			io.WriteString(w, filed)
		} else {
			io.WriteString(w, order)
		}
	}))
	defer upstream.Close()
	t.Setenv("OPENAI_API_KEY", "sk-real")
	out := filepath.Join(t.TempDir(), "recorded.json")
	args := buyerFlags(t)
	for i, a := range args {
		if a == "--cassette" {
			args[i+1] = out
		}
	}
	code, stdout, errOut := chaoskit(t, append([]string{"record", "--upstream", upstream.URL + "/v1"}, args...)...)
	if code != exitOK || !strings.Contains(stdout, "recorded 2 interactions") {
		t.Fatalf("record: exit %d\n%s%s", code, stdout, errOut)
	}
	if asked == 0 {
		t.Fatal("the upstream was never asked")
	}
	data, _ := os.ReadFile(out)
	if strings.Contains(string(data), "sk-real") {
		t.Errorf("the cassette holds the key:\n%s", data)
	}
	code, stdout, errOut = chaoskit(t, append([]string{"run", "--faults", "kill", "--out", t.TempDir()}, args...)...)
	if code != exitOK {
		t.Fatalf("campaign on the recorded cassette: exit %d\n%s%s", code, stdout, errOut)
	}
}

// chaoskit mcp outside a campaign says what it needs.
func TestMCPWithoutAURL(t *testing.T) {
	t.Setenv("CHAOSKIT_MCP_URL", "")
	os.Unsetenv("CHAOSKIT_MCP_URL")
	code, _, errOut := chaoskit(t, "mcp")
	if code != exitUsage || !strings.Contains(errOut, "CHAOSKIT_MCP_URL is not set") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

// A model request the cassette does not answer leaves the campaign undecided (exit 3), with
// what was asked against what the cassette's rules say.
func TestCassetteMissIsUnknown(t *testing.T) {
	args := buyerFlags(t)
	for i, a := range args {
		if a == "--cassette" {
			args[i+1] = strings.Replace(args[i+1], "cassette.json", "short.json", 1)
		}
	}
	code, out, errOut := chaoskit(t, append([]string{"run", "--faults", "kill", "--out", t.TempDir()}, args...)...)
	if code != exitUnknown || !strings.Contains(errOut, "no answer in the cassette") || !strings.Contains(errOut, `"order": turn is 2, not 1`) {
		t.Fatalf("exit %d, want 3 with the diff:\n%s%s", code, out, errOut)
	}
}

// run --resume refuses a campaign whose cassette changed since its journal was written: its
// cases were decided on other answers.
func TestResumeRefusesAChangedCassette(t *testing.T) {
	cassette := filepath.Join(t.TempDir(), "answers.json")
	data, err := os.ReadFile("../../adapters/process/testdata/agent/cassette.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cassette, data, 0o644); err != nil {
		t.Fatal(err)
	}
	args := buyerFlags(t)
	for i, a := range args {
		if a == "--cassette" {
			args[i+1] = cassette
		}
	}
	dir := filepath.Join(t.TempDir(), "report")
	if code, out, errOut := chaoskit(t, append([]string{"run", "--faults", "model-cut", "--out", dir}, args...)...); code != exitOK {
		t.Fatalf("exit %d:\n%s%s", code, out, errOut)
	}
	if err := os.WriteFile(cassette, []byte(strings.Replace(string(data), `"filed"`, `"done"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := chaoskit(t, "run", "--resume", dir)
	if code != exitUsage || !strings.Contains(errOut, "changed since its journal was written") {
		t.Fatalf("exit %d, want a refusal: %s", code, errOut)
	}
}
