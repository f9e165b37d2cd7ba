package provider_test

// The SDK compatibility tests: real agent SDKs, unmodified and configured only through their
// environment (OPENAI_BASE_URL, OPENAI_API_KEY, ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY), run
// small scripts under testdata/sdk against a Handler with a fake Backend, and must get the text
// and tool calls the cassette holds. They need node (and python3 for the urllib script); the
// npm packages are installed by npm ci from the committed lockfile when node_modules is
// missing. Without node each test skips, except under CI=true, where it fails.

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/chaoskit/chaoskit/adapters/provider"
	"github.com/chaoskit/chaoskit/internal/needs"
)

// sdkDir is the npm project of the scripts.
const sdkDir = "testdata/sdk"

// needSDKs returns node's path once node and the npm packages are there (needs.NPM).
func needSDKs(t *testing.T) string {
	t.Helper()
	return needs.NPM(t, sdkDir)
}

// sdkBackend answers from the cassette, seeding ids per call, and keeps the calls.
type sdkBackend struct {
	seed  uint64
	mu    sync.Mutex
	calls []*provider.Call
}

// Answer answers with the proposal, or refuses with the miss.
func (b *sdkBackend) Answer(ctx context.Context, call *provider.Call) (*provider.Answer, error) {
	b.mu.Lock()
	b.calls = append(b.calls, call)
	b.mu.Unlock()
	return provider.Replay{Seed: b.seed}.Answer(ctx, call)
}

// result is what a script prints: the text and tool calls its SDK got, and more it checks.
type result map[string]any

// runScript runs argv (a script and its arguments, in testdata/sdk) against a Handler of a
// backend seeded seed, with the SDKs' environment only, and returns its output and the calls.
func runScript(t *testing.T, seed uint64, argv ...string) (result, []*provider.Call) {
	t.Helper()
	c, err := provider.Load(filepath.Join(sdkDir, "cassette.json"))
	if err != nil {
		t.Fatal(err)
	}
	b := &sdkBackend{seed: seed}
	srv := serve(t, b, c)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = sdkDir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OPENAI_") && !strings.HasPrefix(kv, "ANTHROPIC_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "OPENAI_BASE_URL="+srv.URL+"/v1", "OPENAI_API_KEY=sk-chaoskit-test",
		"ANTHROPIC_BASE_URL="+srv.URL, "ANTHROPIC_API_KEY=sk-ant-chaoskit-test", "OPENAI_AGENTS_DISABLE_TRACING=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s%s", strings.Join(argv, " "), err, stdout.String(), stderr.String())
	}
	var r result
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("%s printed no result: %v\n%s%s", strings.Join(argv, " "), err, stdout.String(), stderr.String())
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, call := range b.calls {
		if call.Miss != nil {
			t.Errorf("%s asked what the cassette does not answer: %v", strings.Join(argv, " "), call.Miss)
		}
	}
	return r, b.calls
}

// The cassette's first-turn answer, as each script prints it.
var (
	planCalls = []any{
		map[string]any{"name": "create_po", "args": map[string]any{"sku": "A-1", "qty": 3.0}},
		map[string]any{"name": "notify", "args": map[string]any{"to": "ops", "text": "restocking A-1"}},
	}
	plan = result{"text": "Ordering now.", "calls": planCalls, "streamed_text": "Ordering now.", "streamed_calls": planCalls}
)

// check compares the members of want with got's.
func check(t *testing.T, name string, got, want result) {
	t.Helper()
	for k, w := range want {
		if d := cmp.Diff(w, got[k]); d != "" {
			t.Errorf("%s: %s (-want +got):\n%s", name, k, d)
		}
	}
}

// with returns r with more members.
func (r result) with(kv ...any) result {
	out := result{}
	for k, v := range r {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

// TestSDKs runs each SDK's script and checks it got what the cassette holds.
func TestSDKs(t *testing.T) {
	node := needSDKs(t)
	report := "Ordered 3 of A-1 as PO-7 and told ops."
	cases := []struct {
		argv  []string
		want  result
		calls int
	}{
		{[]string{"openai-chat.mjs"}, plan.with("finish", "tool_calls", "usage", true, "streamed_usage", true, "second", report), 3},
		{[]string{"openai-responses.mjs"}, plan.with("status", "completed", "usage", true, "second", report), 3},
		{[]string{"anthropic.mjs"}, plan.with("stop", "tool_use", "second", report), 3},
		{[]string{"langchain.mjs", "chat"}, plan, 2},
		{[]string{"langchain.mjs", "responses"}, plan, 2},
		{[]string{"vercel-ai.mjs", "chat"}, plan, 2},
		{[]string{"vercel-ai.mjs", "responses"}, plan, 2},
	}
	agent := result{"final": "Ordered 3 of A-1 (PO-1).", "orders": []any{map[string]any{"sku": "A-1", "qty": 3.0}}}
	for _, api := range []string{"responses", "chat_completions"} {
		for _, mode := range []string{"", "stream"} {
			cases = append(cases, struct {
				argv  []string
				want  result
				calls int
			}{[]string{"agents.mjs", api, mode}, agent, 2})
		}
	}
	for _, c := range cases {
		name := strings.TrimSpace(strings.Join(c.argv, " "))
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, calls := runScript(t, 1, append([]string{node}, c.argv...)...)
			check(t, name, got, c.want)
			if len(calls) != c.calls {
				t.Errorf("%s made %d model calls, want %d", name, len(calls), c.calls)
			}
			for _, call := range calls {
				if !strings.HasPrefix(call.Key, "sk-") {
					t.Errorf("%s: the call's key is %q, want the SDK's", name, call.Key)
				}
			}
		})
	}
}

// TestSDKFreshIDs: two runs of an agent with other id seeds get other ids but ask the same
// requests (the same digests): the fresh tool-call ids the SDK sends back do not change what
// it asks. The same seed gives the same ids.
func TestSDKFreshIDs(t *testing.T) {
	node := needSDKs(t)
	for _, script := range []string{"openai-chat.mjs", "openai-responses.mjs", "anthropic.mjs"} {
		t.Run(script, func(t *testing.T) {
			a, callsA := runScript(t, 1, node, script)
			b, callsB := runScript(t, 2, node, script)
			again, _ := runScript(t, 1, node, script)
			if cmp.Equal(a["ids"], b["ids"]) {
				t.Errorf("seeds 1 and 2 gave the same ids %v", a["ids"])
			}
			if d := cmp.Diff(a["ids"], again["ids"]); d != "" {
				t.Errorf("seed 1 gave other ids the second time:\n%s", d)
			}
			if len(callsA) != len(callsB) {
				t.Fatalf("%d calls against %d", len(callsA), len(callsB))
			}
			for i := range callsA {
				if callsA[i].Digest != callsB[i].Digest {
					t.Errorf("call %d asked differently with other ids:\n%s\n%s", i, callsA[i].Request.JSON(), callsB[i].Request.JSON())
				}
			}
		})
	}
}

// TestPythonURLLib: Python's standard library, no SDK, reads the answers whole and streamed.
func TestPythonURLLib(t *testing.T) {
	python := needs.Command(t, "python3", "apt-get install -y python3")
	got, calls := runScript(t, 1, python, "urllib_chat.py")
	check(t, "urllib", got, plan)
	if len(calls) != 2 || calls[0].Stream || !calls[1].Stream {
		t.Errorf("want a whole and a streamed call, got %d calls", len(calls))
	}
}
