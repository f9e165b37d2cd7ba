//go:build campaigns

package provider_test

// The SDK fault measurements behind docs/findings/sdk-model-faults.md: each real SDK makes one
// model call (testdata/sdk/faults/call.mjs, and urllib_call.py for Python's standard library)
// against a Handler whose Backend injects one of the provider's faults and records every
// request that reaches it: when it arrived, whether it was a stream, and the headers an SDK
// could mark a retry with (x-stainless-retry-count, Idempotency-Key). The test asserts what was
// measured — how many requests reached the provider, the waits between them as lower bounds
// only (a loaded machine makes them longer, never shorter), and what the caller got — so the
// findings stay true; go test -v prints the measured table.
//
// The scripts run with node --import faults/netlog.mjs, which logs every fetch of the process
// and answers one to a host that is not loopback itself, so that nothing leaves the machine and
// the test can say what would have.
//
// CHAOSKIT_SDK_LONG=1 measures instead the hangs under the SDKs' default timeouts, which take
// five minutes.
//
// It takes about a minute on a quiet 2-core machine, more under load, so it is built with the
// campaigns tag (go test -tags campaigns ./adapters/provider), as .ci/run runs it.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/adapters/provider"
	"github.com/chaoskit/chaoskit/internal/needs"
)

// faultCassette answers the scripts' one question with a text long enough to be cut mid-way.
const faultCassette = `{"interactions": [{"name": "report", "match": {"last_user_contains": "faults:"},
  "answer": {"text": "Ordered 3 units of A-1 as PO-7 and told ops."}}]}`

// faultAnswer is the cassette's answer, as a caller gets it whole.
const faultAnswer = "Ordered 3 units of A-1 as PO-7 and told ops."

// cutAfter is how many events a cut stream sends: the events before the text, and three words
// ("Ordered 3 units").
var cutAfter = map[provider.API]int{provider.ChatCompletions: 1 + 3, provider.Responses: 4 + 3, provider.Messages: 3 + 3}

// cutText is what a caller has read of a stream cut after cutAfter events.
const cutText = "Ordered 3 units"

// injected is a fault the Backend sends: Kind is 429, 500, 503, 400, hang, cut, or "" for
// none; the first Times requests get it (0: every request), the later ones the answer.
type injected struct {
	Kind       string
	Times      int
	RetryAfter time.Duration
}

// String names the fault as the table does.
func (f injected) String() string {
	s := f.Kind
	switch {
	case f.Kind == "":
		return "none"
	case f.Kind == "429":
		s += fmt.Sprintf(" retry-after %gs", f.RetryAfter.Seconds())
	case f.Kind == "cut":
		s = "cut after 200"
	}
	if f.Times > 0 {
		s += fmt.Sprintf(", first %d", f.Times)
	}
	return s
}

// arrival is one request as it reached the provider.
type arrival struct {
	at          time.Time
	stream      bool
	retryCount  string // x-stainless-retry-count
	idempotency string // Idempotency-Key
}

// faultBackend answers from the cassette, except that it injects its fault, and records every
// request.
type faultBackend struct {
	fault injected
	mu    sync.Mutex
	seen  []arrival
}

// Answer records the request and sends the fault or the answer.
func (b *faultBackend) Answer(ctx context.Context, call *provider.Call) (*provider.Answer, error) {
	b.mu.Lock()
	n := len(b.seen)
	b.seen = append(b.seen, arrival{time.Now(), call.Stream, call.Header.Get("X-Stainless-Retry-Count"), call.Header.Get("Idempotency-Key")})
	b.mu.Unlock()
	if call.Miss != nil {
		return nil, call.Miss
	}
	ans := &provider.Answer{Reply: &call.Proposal.Answer, Seed: call.Seed(1)}
	if b.fault.Times > 0 && n >= b.fault.Times {
		return ans, nil
	}
	switch b.fault.Kind {
	case "429":
		return nil, &provider.RateLimited{RetryAfter: b.fault.RetryAfter}
	case "500":
		return nil, provider.ErrServer
	case "503":
		return nil, provider.ErrUnavailable
	case "400":
		return nil, provider.ErrContextLength
	case "hang":
		<-ctx.Done()
		return nil, ctx.Err()
	case "cut":
		return nil, &provider.Cut{Answer: ans, AfterEvents: cutAfter[call.API]}
	}
	return ans, nil
}

// arrivals returns the requests so far.
func (b *faultBackend) arrivals() []arrival {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.seen)
}

// callOutput is what a fault script prints: what the caller saw.
type callOutput struct {
	OK        bool      `json:"ok"`
	Text      *string   `json:"text"`
	Finish    any       `json:"finish"`
	Partial   *string   `json:"partial"`
	Error     *callErr  `json:"error"`
	Stage     string    `json:"stage"`
	ElapsedMS float64   `json:"elapsed_ms"`
	raw       string    // the line as printed
	arrivals  []arrival // what reached the provider
	net       []string  // the fetches the process made ("METHOD URL")
}

// callErr is an error as the caller got it.
type callErr struct {
	Class   string `json:"class"`
	Name    string `json:"name"`
	Message string `json:"message"`
	Status  any    `json:"status"`
	Code    any    `json:"code"`
	Reason  string `json:"reason"`
	// IsRetryable is the Vercel AI SDK's verdict on the error.
	IsRetryable *bool      `json:"isRetryable"`
	Cause       *callErr   `json:"cause"`
	Errors      []*callErr `json:"errors"`
}

// String is the error's class (or name) and message, its cause's after a colon.
func (e *callErr) String() string {
	s := e.Class
	if e.Name != "" && e.Name != e.Class && e.Name != "Error" {
		s += "(" + e.Name + ")"
	}
	if e.Reason != "" {
		s += " reason=" + e.Reason
	}
	if e.Status != nil {
		s += fmt.Sprintf(" status=%v", e.Status)
	}
	if e.Cause != nil {
		s += " ← " + e.Cause.String()
	}
	return s
}

// sdkCall is one SDK configuration making one call: sdk is openai, anthropic, agents,
// langchain, vercel or urllib; api chat, responses or messages; mode whole or stream.
type sdkCall struct {
	sdk, api, mode string
	// opts are the script's options (call.mjs): maxRetries, timeout (ms), abortAfterMs, tracing.
	opts map[string]any
	// env is set in the script's environment, after the defaults (a value of "" unsets).
	env map[string]string
}

// String names the configuration as the table does.
func (c sdkCall) String() string {
	name := c.sdk
	if c.sdk != "anthropic" && c.sdk != "urllib" {
		name += " " + c.api
	}
	if c.mode == "stream" {
		name += " stream"
	}
	keys := make([]string, 0, len(c.opts))
	for k := range c.opts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		name += fmt.Sprintf(" %s=%v", k, c.opts[k])
	}
	for k, v := range c.env {
		name += fmt.Sprintf(" %s=%q", k, v)
	}
	return name
}

// faultCase is one measurement: a call under a fault, and what the test asserts of it.
type faultCase struct {
	call  sdkCall
	fault injected
	// attempts is how many requests must reach the provider.
	attempts int
	// gaps are lower bounds of the waits between consecutive requests (from the first's arrival
	// to the second's, …); a shorter list bounds only the first waits.
	gaps []time.Duration
	// ok is whether the call must return an answer; text, when not "", the answer it returns.
	ok   bool
	text string
	// errClass, when not "", must be the error's class or name, or its cause's.
	errClass string
	// partial, when not "", is the text the caller must have read before its error.
	partial string
	// minElapsed bounds how long the caller waited before it got its result (measured by the
	// script).
	minElapsed time.Duration
	// more checks what the table cannot say.
	more func(t *testing.T, out *callOutput)
}

// Options of the SDKs that keep the measurements short.
var (
	timeout2s = map[string]any{"timeout": 2000}
	retries2  = map[string]any{"maxRetries": 2}
)

// faultCases are the measurements: per fault, the SDKs whose behaviour under it differs.
func faultCases() []faultCase {
	rl := injected{Kind: "429", RetryAfter: 1200 * time.Millisecond}
	rlOnce := injected{Kind: "429", Times: 1, RetryAfter: 61 * time.Second}
	s500, s503, ctx400 := injected{Kind: "500"}, injected{Kind: "503"}, injected{Kind: "400"}
	hang, cut := injected{Kind: "hang"}, injected{Kind: "cut", Times: 1}
	// The SDKs' default backoffs, lower bounds: openai-node and Anthropic 0.5 s·2^n less up to
	// 25% jitter; Vercel 2 s·2^n; LangChain's p-retry 1 s·2^n times a random factor in [1, 2).
	stainless := []time.Duration{375 * time.Millisecond, 750 * time.Millisecond}
	vercel := []time.Duration{2 * time.Second, 4 * time.Second}
	pretry := []time.Duration{time.Second, 2 * time.Second}
	ra := []time.Duration{1200 * time.Millisecond, 1200 * time.Millisecond}
	c := func(sdk, api, mode string, opts map[string]any) sdkCall {
		return sdkCall{sdk: sdk, api: api, mode: mode, opts: opts}
	}
	abort6s := map[string]any{"abortAfterMs": 6000}
	retryCounts := func(want ...string) func(t *testing.T, out *callOutput) {
		return func(t *testing.T, out *callOutput) {
			var got []string
			for _, a := range out.arrivals {
				got = append(got, a.retryCount)
			}
			if !slices.Equal(got, want) {
				t.Errorf("x-stainless-retry-count of the requests: %q, want %q", got, want)
			}
		}
	}
	cases := []faultCase{
		// 429 every time, retry-after 1.2 s (retry-after: 2, retry-after-ms: 1200).
		{call: c("openai", "chat", "whole", nil), fault: rl, attempts: 3, gaps: ra, errClass: "RateLimitError", more: retryCounts("0", "1", "2")},
		{call: c("anthropic", "messages", "whole", nil), fault: rl, attempts: 3, gaps: ra, errClass: "RateLimitError", more: retryCounts("0", "1", "2")},
		{call: c("agents", "responses", "whole", nil), fault: rl, attempts: 3, gaps: ra, errClass: "RateLimitError", more: retryCounts("0", "1", "2")},
		// LangChain reads retry-after (whole seconds, 2), not retry-after-ms; its own client
		// never retries, so every attempt says x-stainless-retry-count: 0.
		{call: c("langchain", "chat", "whole", retries2), fault: rl, attempts: 3, gaps: []time.Duration{2 * time.Second, 2 * time.Second}, errClass: "RateLimitError", more: retryCounts("0", "0", "0")},
		{call: c("vercel", "chat", "whole", nil), fault: rl, attempts: 3, gaps: ra, errClass: "RetryError", more: retryCounts("", "", "")},
		{call: sdkCall{sdk: "urllib", mode: "whole"}, fault: rl, attempts: 1, errClass: "HTTPError"},

		// 429 once with retry-after 61 s, the call aborted after 6 s.
		{call: c("openai", "chat", "whole", abort6s), fault: rlOnce, attempts: 2, ok: true, text: faultAnswer},
		{call: c("agents", "responses", "whole", abort6s), fault: rlOnce, attempts: 2, ok: true, text: faultAnswer},
		{call: c("vercel", "chat", "whole", abort6s), fault: rlOnce, attempts: 2, gaps: vercel[:1], ok: true, text: faultAnswer},
		{call: c("anthropic", "messages", "whole", abort6s), fault: rlOnce, attempts: 1, errClass: "APIUserAbortError", minElapsed: 6 * time.Second},
		{call: c("langchain", "chat", "whole", abort6s), fault: rlOnce, attempts: 1, errClass: "RateLimitCapacityError"},

		// 500 every time.
		{call: c("openai", "chat", "whole", nil), fault: s500, attempts: 3, gaps: stainless, errClass: "InternalServerError"},
		{call: c("openai", "responses", "stream", nil), fault: s500, attempts: 3, gaps: stainless, errClass: "InternalServerError"},
		{call: c("anthropic", "messages", "whole", nil), fault: s500, attempts: 3, gaps: stainless, errClass: "InternalServerError"},
		{call: c("agents", "responses", "whole", nil), fault: s500, attempts: 3, gaps: stainless, errClass: "InternalServerError"},
		{call: c("agents", "chat", "stream", nil), fault: s500, attempts: 3, gaps: stainless, errClass: "InternalServerError"},
		{call: c("langchain", "chat", "whole", retries2), fault: s500, attempts: 3, gaps: pretry, errClass: "InternalServerError"},
		{call: c("vercel", "chat", "whole", nil), fault: s500, attempts: 3, gaps: vercel, errClass: "RetryError"},
		{call: c("vercel", "responses", "stream", nil), fault: s500, attempts: 3, gaps: vercel, errClass: "AI_NoOutputGeneratedError"},
		{call: sdkCall{sdk: "urllib", mode: "whole"}, fault: s500, attempts: 1, errClass: "HTTPError"},

		// 503 every time (Anthropic: 529 overloaded_error).
		{call: c("openai", "chat", "whole", nil), fault: s503, attempts: 3, gaps: stainless, errClass: "InternalServerError"},
		{call: c("anthropic", "messages", "whole", nil), fault: s503, attempts: 3, gaps: stainless, errClass: "OverloadedError"},

		// 400 context length: never retried.
		{call: c("openai", "chat", "whole", nil), fault: ctx400, attempts: 1, errClass: "BadRequestError"},
		{call: c("openai", "responses", "whole", nil), fault: ctx400, attempts: 1, errClass: "BadRequestError"},
		{call: c("anthropic", "messages", "whole", nil), fault: ctx400, attempts: 1, errClass: "BadRequestError"},
		{call: c("agents", "responses", "whole", nil), fault: ctx400, attempts: 1, errClass: "BadRequestError"},
		{call: c("agents", "chat", "whole", nil), fault: ctx400, attempts: 1, errClass: "BadRequestError"},
		{call: c("langchain", "chat", "whole", nil), fault: ctx400, attempts: 1, errClass: "ContextOverflowError"},
		{call: c("vercel", "chat", "whole", nil), fault: ctx400, attempts: 1, errClass: "AI_APICallError"},
		{call: sdkCall{sdk: "urllib", mode: "whole"}, fault: ctx400, attempts: 1, errClass: "HTTPError"},

		// A hang, under a timeout of 2 s: every request that timed out had reached the provider.
		// The caller waited out each attempt's timeout in turn, and the backoffs between them.
		{call: c("openai", "chat", "whole", timeout2s), fault: hang, attempts: 3, gaps: stainless, errClass: "APIConnectionTimeoutError", minElapsed: 3*2*time.Second + stainless[0] + stainless[1]},
		{call: c("openai", "responses", "stream", timeout2s), fault: hang, attempts: 3, gaps: stainless, errClass: "APIConnectionTimeoutError", minElapsed: 3*2*time.Second + stainless[0] + stainless[1]},
		{call: c("anthropic", "messages", "whole", timeout2s), fault: hang, attempts: 3, gaps: stainless, errClass: "APIConnectionTimeoutError", minElapsed: 3*2*time.Second + stainless[0] + stainless[1]},
		{call: c("agents", "responses", "whole", timeout2s), fault: hang, attempts: 3, gaps: stainless, errClass: "APIConnectionTimeoutError", minElapsed: 3*2*time.Second + stainless[0] + stainless[1]},
		{call: c("langchain", "chat", "whole", map[string]any{"timeout": 2000, "maxRetries": 2}), fault: hang, attempts: 3, gaps: pretry, errClass: "TimeoutError", minElapsed: 3*2*time.Second + pretry[0] + pretry[1]},
		{call: c("vercel", "chat", "whole", timeout2s), fault: hang, attempts: 1, errClass: "TimeoutError", minElapsed: 2 * time.Second},
		{call: sdkCall{sdk: "urllib", mode: "whole", opts: map[string]any{"timeout": 2}}, fault: hang, attempts: 1, errClass: "TimeoutError", minElapsed: 2 * time.Second},
	}

	terminated := func(t *testing.T, out *callOutput) {
		if !strings.Contains(out.raw, `"class":"TypeError","name":"TypeError","message":"terminated"`) {
			t.Errorf("the caller saw %s, want undici's TypeError: terminated", out.raw)
		}
	}
	// A stream cut after three words: no SDK asks again; the JavaScript SDKs throw after the
	// caller has read the three words; urllib's line iteration ends as if the stream were done.
	for _, s := range []sdkCall{
		c("openai", "chat", "stream", nil), c("openai", "responses", "stream", nil),
		c("anthropic", "messages", "stream", nil),
		c("agents", "responses", "stream", nil), c("agents", "chat", "stream", nil),
		c("langchain", "chat", "stream", nil), c("langchain", "responses", "stream", nil),
		c("vercel", "chat", "stream", nil), c("vercel", "responses", "stream", nil),
	} {
		cases = append(cases, faultCase{call: s, fault: cut, attempts: 1, errClass: "TypeError", partial: cutText, more: terminated})
	}
	cases = append(cases, faultCase{call: sdkCall{sdk: "urllib", mode: "stream"}, fault: cut, attempts: 1, ok: true, text: cutText})

	// A whole answer cut after its 200: LangChain and Vercel ask again and return the second
	// answer; the others throw the transport's TypeError, and urllib an IncompleteRead.
	for _, s := range []sdkCall{
		c("openai", "chat", "whole", nil), c("openai", "responses", "whole", nil),
		c("anthropic", "messages", "whole", nil),
		c("agents", "responses", "whole", nil), c("agents", "chat", "whole", nil),
	} {
		cases = append(cases, faultCase{call: s, fault: cut, attempts: 1, errClass: "TypeError", more: terminated})
	}
	for _, s := range []sdkCall{
		c("langchain", "chat", "whole", nil), c("langchain", "responses", "whole", nil),
		c("vercel", "chat", "whole", nil), c("vercel", "responses", "whole", nil),
	} {
		cases = append(cases, faultCase{call: s, fault: cut, attempts: 2, ok: true, text: faultAnswer})
	}
	cases = append(cases, faultCase{call: sdkCall{sdk: "urllib", mode: "whole"}, fault: cut, attempts: 1, errClass: "IncompleteRead"})
	return cases
}

// runFaultCall runs one call against a Handler whose Backend injects fault, and returns what
// the caller saw, what reached the provider and what the process fetched.
func runFaultCall(t *testing.T, node, python string, call sdkCall, fault injected) (*callOutput, error) {
	b := &faultBackend{fault: fault}
	srv := serve(t, b, mustParse(t, faultCassette))
	netlog := filepath.Join(t.TempDir(), fmt.Sprintf("net-%p.log", b))
	if call.opts == nil {
		call.opts = map[string]any{}
	}
	opts, err := json.Marshal(call.opts)
	if err != nil {
		return nil, err
	}
	var argv []string
	if call.sdk == "urllib" {
		timeout := "30"
		if v, ok := call.opts["timeout"]; ok {
			timeout = fmt.Sprint(v)
		}
		argv = []string{python, "faults/urllib_call.py", call.mode, timeout}
	} else {
		argv = []string{node, "--import", "./faults/netlog.mjs", "faults/call.mjs", call.sdk, call.api, call.mode, string(opts)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	if os.Getenv("CHAOSKIT_SDK_LONG") == "1" {
		ctx, cancel = context.WithTimeout(context.Background(), 12*time.Minute)
	}
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = sdkDir
	env := map[string]string{
		"OPENAI_BASE_URL": srv.URL + "/v1", "OPENAI_API_KEY": "sk-chaoskit-test",
		"ANTHROPIC_BASE_URL": srv.URL, "ANTHROPIC_API_KEY": "sk-ant-chaoskit-test",
		"OPENAI_AGENTS_DISABLE_TRACING": "1", "CK_NETLOG": netlog,
	}
	for k, v := range call.env {
		env[k] = v
	}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, set := env[k]; set || k == "NODE_ENV" || strings.HasPrefix(k, "OPENAI_") || strings.HasPrefix(k, "ANTHROPIC_") ||
			strings.HasPrefix(k, "LANGCHAIN_") || strings.HasPrefix(k, "LANGSMITH_") {
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	for k, v := range env {
		if v != "" {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s: %v\n%s%s", strings.Join(argv, " "), err, stdout.String(), stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	out := &callOutput{raw: lines[len(lines)-1]}
	if err := json.Unmarshal([]byte(out.raw), out); err != nil {
		return nil, fmt.Errorf("%s printed no result: %v\n%s%s", strings.Join(argv, " "), err, stdout.String(), stderr.String())
	}
	out.arrivals = b.arrivals()
	if data, err := os.ReadFile(netlog); err == nil {
		out.net = strings.Split(strings.TrimSpace(string(data)), "\n")
	}
	return out, nil
}

// offLoopback returns the fetches of out that went to a host other than the stand-in's.
func offLoopback(out *callOutput) []string {
	var off []string
	for _, f := range out.net {
		if f != "" && !strings.Contains(f, "//127.0.0.1:") {
			off = append(off, f)
		}
	}
	return off
}

// gapsOf returns the waits between consecutive arrivals.
func gapsOf(as []arrival) []time.Duration {
	var gaps []time.Duration
	for i := 1; i < len(as); i++ {
		gaps = append(gaps, as[i].at.Sub(as[i-1].at))
	}
	return gaps
}

// errMatches reports whether e or one of its causes or errors has the class or name want.
func errMatches(e *callErr, want string) bool {
	if e == nil {
		return false
	}
	if e.Class == want || e.Name == want {
		return true
	}
	if errMatches(e.Cause, want) {
		return true
	}
	for _, x := range e.Errors {
		if errMatches(x, want) {
			return true
		}
	}
	return false
}

// outcome is what the caller got, in a table cell.
func outcome(out *callOutput) string {
	if out.OK {
		s := fmt.Sprintf("answer %q", deref(out.Text))
		if out.Finish != nil {
			s += fmt.Sprintf(" (finish %v)", out.Finish)
		} else {
			s += " (no finish seen)"
		}
		return s
	}
	s := out.Error.String()
	if out.Stage != "" && out.Stage != "call" {
		s += " from " + out.Stage
	}
	if p := deref(out.Partial); p != "" {
		s += fmt.Sprintf(", after reading %q", p)
	}
	return s
}

// deref is *s, or "" for nil.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// TestSDKFaults measures each SDK under each of the provider's faults; see
// docs/findings/sdk-model-faults.md.
func TestSDKFaults(t *testing.T) {
	node := needSDKs(t)
	python := needs.Command(t, "python3", "apt-get install -y python3")
	cases := append(faultCases(), tracingCases()...)
	if os.Getenv("CHAOSKIT_SDK_LONG") == "1" {
		cases = longCases()
	}

	// Measure first, several calls at once (most of a call is waiting), then judge each.
	outs := make([]*callOutput, len(cases))
	errs := make([]error, len(cases))
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	order := make([]int, len(cases)) // the calls that wait longest start first
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return waits(cases[b]) - waits(cases[a]) })
	for _, i := range order {
		fc := cases[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			outs[i], errs[i] = runFaultCall(t, node, python, fc.call, fc.fault)
		}()
	}
	wg.Wait()

	var table strings.Builder
	table.WriteString("| SDK | fault | requests at the provider | waits between them | the caller got | after |\n| --- | --- | --- | --- | --- | --- |\n")
	for i, fc := range cases {
		out, err := outs[i], errs[i]
		name := fc.call.String() + " under " + fc.fault.String()
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			if err != nil {
				t.Fatal(err)
			}
			var gaps []string
			for _, g := range gapsOf(out.arrivals) {
				gaps = append(gaps, fmt.Sprintf("%.2fs", g.Seconds()))
			}
			streams := ""
			if len(out.arrivals) > 0 && out.arrivals[0].stream {
				streams = " (streams)"
			}
			fmt.Fprintf(&table, "| %s | %s | %d%s | %s | %s | %.1fs |\n", fc.call, fc.fault, len(out.arrivals), streams, strings.Join(gaps, ", "), outcome(out), out.ElapsedMS/1000)
			judge(t, fc, out)
		})
	}
	t.Logf("measured:\n%s", table.String())
}

// waits is a rough rank of how long a case waits: hangs and aborts, then the SDKs with long
// backoffs.
func waits(fc faultCase) int {
	switch {
	case fc.fault.Kind == "hang" || fc.call.opts["abortAfterMs"] != nil:
		return 2
	case fc.call.sdk == "vercel" || fc.call.sdk == "langchain":
		return 1
	}
	return 0
}

// judge checks one measurement against what the case asserts.
func judge(t *testing.T, fc faultCase, out *callOutput) {
	t.Helper()
	if len(out.arrivals) != fc.attempts {
		t.Errorf("%d requests reached the provider, want %d; the caller saw %s", len(out.arrivals), fc.attempts, out.raw)
	}
	for i, g := range gapsOf(out.arrivals) {
		if i < len(fc.gaps) && g < fc.gaps[i] {
			t.Errorf("request %d came %v after the one before, want at least %v", i+2, g, fc.gaps[i])
		}
	}
	if out.OK != fc.ok {
		t.Errorf("the caller got ok=%v, want %v: %s", out.OK, fc.ok, out.raw)
	}
	if fc.text != "" && deref(out.Text) != fc.text {
		t.Errorf("the caller got the text %q, want %q", deref(out.Text), fc.text)
	}
	if fc.errClass != "" && !errMatches(out.Error, fc.errClass) {
		t.Errorf("the caller got %s, want a %s", out.raw, fc.errClass)
	}
	if fc.partial != "" && deref(out.Partial) != fc.partial {
		t.Errorf("the caller had read %q before its error, want %q", deref(out.Partial), fc.partial)
	}
	if el := time.Duration(out.ElapsedMS) * time.Millisecond; el < fc.minElapsed {
		t.Errorf("the caller had its result after %v, want at least %v", el, fc.minElapsed)
	}
	for _, a := range out.arrivals {
		if a.idempotency != "" {
			t.Errorf("a request carried Idempotency-Key %q: the finding says none does", a.idempotency)
		}
	}
	if fc.call.opts["tracing"] == nil {
		if off := offLoopback(out); len(off) > 0 {
			t.Errorf("the process fetched off loopback: %q", off)
		}
	}
	if fc.more != nil {
		fc.more(t, out)
	}
}

// tracingCases: the Agents SDK with its tracing as it is by default, with the environment
// variable that turns it off, and nothing else.
func tracingCases() []faultCase {
	ingest := func(want bool) func(t *testing.T, out *callOutput) {
		return func(t *testing.T, out *callOutput) {
			off := offLoopback(out)
			got := slices.Contains(off, "POST https://api.openai.com/v1/traces/ingest")
			if got != want || !want && len(off) > 0 {
				t.Errorf("off-loopback fetches %q; want the trace export to api.openai.com: %v", off, want)
			}
		}
	}
	return []faultCase{
		{call: sdkCall{sdk: "agents", api: "responses", mode: "whole", opts: map[string]any{"tracing": "default"}, env: map[string]string{"OPENAI_AGENTS_DISABLE_TRACING": ""}},
			attempts: 1, ok: true, text: faultAnswer, more: ingest(true)},
		{call: sdkCall{sdk: "agents", api: "responses", mode: "whole", opts: map[string]any{"tracing": "default"}},
			attempts: 1, ok: true, text: faultAnswer, more: ingest(false)},
	}
}

// longCases are hangs under the SDKs' default timeouts (CHAOSKIT_SDK_LONG=1): openai-node and
// Anthropic say 10 minutes, but Node's fetch gives up waiting for the headers after 300 s, and
// the Vercel AI SDK has no timeout of its own and counts that as a network error to retry.
func longCases() []faultCase {
	hang := injected{Kind: "hang"}
	none := map[string]any{"maxRetries": 0}
	before10min := func(message string, retryable bool) func(t *testing.T, out *callOutput) {
		return func(t *testing.T, out *callOutput) {
			if el := time.Duration(out.ElapsedMS) * time.Millisecond; el >= 590*time.Second {
				t.Errorf("the caller had its error after %v: not before the SDK's own 10 minutes", el)
			}
			if !strings.Contains(out.raw, message) {
				t.Errorf("the caller saw %s, want a message with %q", out.raw, message)
			}
			if retryable && (out.Error == nil || out.Error.IsRetryable == nil || !*out.Error.IsRetryable) {
				t.Errorf("the caller saw %s, want isRetryable: true", out.raw)
			}
		}
	}
	return []faultCase{
		{call: sdkCall{sdk: "openai", api: "chat", mode: "whole", opts: none}, fault: hang, attempts: 1, errClass: "APIConnectionTimeoutError", minElapsed: 290 * time.Second,
			more: before10min("Node.js fetch timed out waiting for response headers", false)},
		{call: sdkCall{sdk: "anthropic", api: "messages", mode: "whole", opts: none}, fault: hang, attempts: 1, errClass: "APIConnectionTimeoutError", minElapsed: 290 * time.Second,
			more: before10min("Request timed out", false)},
		{call: sdkCall{sdk: "vercel", api: "chat", mode: "whole", opts: none}, fault: hang, attempts: 1, errClass: "HeadersTimeoutError", minElapsed: 290 * time.Second,
			more: before10min("Headers Timeout Error", true)},
	}
}
