package process_test

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/adapters/mcp"
	"github.com/chaoskit/chaoskit/adapters/process"
	"github.com/chaoskit/chaoskit/adapters/provider"
	"github.com/chaoskit/chaoskit/adapters/rest"
	"github.com/chaoskit/chaoskit/adapters/services"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/internal/needs"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
)

// agentServices are the services of testdata/agent/buyer.py: its model's cassette, the
// purchasing service's REST route and the MCP server of its notify tool.
func agentServices(t *testing.T, cassette string) services.Config {
	t.Helper()
	data, err := os.ReadFile("testdata/agent/" + cassette)
	if err != nil {
		t.Fatal(err)
	}
	c, err := provider.Parse(data, cassette)
	if err != nil {
		t.Fatal(err)
	}
	route, err := rest.ParseRoute("POST /v1/purchase_orders=idempotent-by-header:Idempotency-Key,name=purchase_orders")
	if err != nil {
		t.Fatal(err)
	}
	notify, err := mcp.ParseTool("notify=idempotent-by-arg:$.key")
	if err != nil {
		t.Fatal(err)
	}
	return services.Config{Cassette: c, Routes: []rest.Route{route}, Tools: []mcp.Tool{notify}}
}

// agents are the same purchasing agent written twice, as teams write one: with Python's
// urllib and with Node's fetch.
var agents = []struct {
	lang string
	argv func(t *testing.T) []string
}{
	{"python", func(t *testing.T) []string { return []string{pythonExe(t), "-S", "-B", "testdata/agent/buyer.py"} }},
	{"node", func(t *testing.T) []string {
		return []string{needs.Command(t, "node", "apt-get install nodejs"), "testdata/agent/buyer.mjs"}
	}},
}

// buyerTarget is testdata/agent/buyer.py, or .mjs, as a team runs it under chaoskit: its own
// variable names mapped onto the services' URLs, nothing of chaoskit in it.
func buyerTarget(t *testing.T, argv []string, cassette string, args ...string) process.Target {
	return process.Target{
		Argv:      append(slices.Clone(argv), args...),
		StateArgv: append(slices.Clone(argv), "--dump-state"),
		Env: []string{"STATE_DIR=${CHAOSKIT_STATE_DIR}", "PURCHASING_URL=${CHAOSKIT_HTTP_URL}",
			"NOTIFY_MCP_URL=${CHAOSKIT_MCP_URL}"},
		// The ids a provider gives are fresh in every answer: the conversation keeps them.
		Ignore:   []string{"$[*].tool_calls[*].id", "$[*].tool_call_id"},
		Services: agentServices(t, cassette),
	}
}

// An agent that reaches its model, a REST service and an MCP server over HTTP, with only
// environment variables pointing it at chaoskit, is tested as it ships: the correct agent passes
// a kill, a cut model stream, a model call that never answers (the agent's timeout gives up on
// it and asks again) and a tool call whose answer is lost; the one that sends no
// idempotency keys duplicates its order when killed after the order was applied and before its
// checkpoint. (Every kill and every model and tool fault: TestAgentOverHTTPEveryFault, under
// -tags campaigns.)
func TestUnmodifiedAgentOverHTTP(t *testing.T) {
	for _, a := range agents {
		t.Run(a.lang, func(t *testing.T) {
			checkAgent(t, a.argv(t), func(int) []string { return []string{"kill@2", "model-cut@0", "model-hang@0", "tool-ambiguous@1"} })
		})
	}
}

// checkAgent runs the correct agent of argv under the schedules of scheds (given its golden run's
// length), each of which it must pass, and the agent without keys under a kill after its order
// was applied, which must duplicate it.
func checkAgent(t *testing.T, argv []string, scheds func(beats int) []string) {
	t.Helper()
	correct, err := sim.NewRunner(harness.Fresh(buyerTarget(t, argv, "cassette.json")), sim.Options{Name: "buyer"})
	if err != nil {
		t.Fatal(err)
	}
	g, err := correct.Golden(nil)
	if err != nil {
		t.Fatal(err)
	}
	trace := g.Trace()
	applied := slices.IndexFunc(trace, func(l string) bool {
		return strings.HasPrefix(l, "tool purchase_orders") && strings.HasSuffix(l, "applied")
	})
	if applied < 0 || !slices.ContainsFunc(trace, func(l string) bool { return strings.HasPrefix(l, "tool notify") }) {
		t.Fatalf("golden run never called purchase_orders and notify:\n%s", strings.Join(trace, "\n"))
	}
	for _, s := range scheds(g.Len()) {
		if c := correct.Run(schedule(t, s)); c.Verdict.Outcome != oracle.Pass {
			t.Errorf("correct agent under %s: %s", s, c)
		}
	}
	nokey, err := sim.NewRunner(harness.Fresh(buyerTarget(t, argv, "cassette.json", "--no-key")), sim.Options{Name: "buyer --no-key"})
	if err != nil {
		t.Fatal(err)
	}
	kill := fmt.Sprintf("kill@%d", applied+1)
	if c := nokey.Run(schedule(t, kill)); c.Verdict.Outcome != oracle.Fail || !strings.Contains(c.String(), "purchase_orders") {
		t.Errorf("the agent without idempotency keys under %s: %s; want its order duplicated", kill, c)
	}
}

// schedule parses s.
func schedule(t *testing.T, s string) faults.Schedule {
	t.Helper()
	sched, err := faults.ParseSchedule(s)
	if err != nil {
		t.Fatal(err)
	}
	return sched
}

// A model request the cassette does not answer makes the run undecided, saying what was asked
// and which rule of the cassette did not hold.
func TestCassetteMissIsUndecided(t *testing.T) {
	_, err := sim.NewRunner(harness.Fresh(buyerTarget(t, agents[0].argv(t), "short.json")), sim.Options{Name: "buyer/short", Timeout: 5 * time.Second})
	if !errors.Is(err, harness.ErrUndecided) {
		t.Fatalf("err = %v, want harness.ErrUndecided", err)
	}
	for _, want := range []string{"no answer in the cassette for this chat.completions request", `interactions[0] "order": turn is 2, not 1`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v\nwant it to say %q", err, want)
		}
	}
}

// The same campaign of an agent over HTTP decides the same every run: the same cases, beats
// and verdicts.
func TestAgentOverHTTPIsDeterministic(t *testing.T) {
	sameTwice(t, agents[0].argv(t), "kill@3", "model-cut@0")
}

// sameTwice runs the schedules of the agent of argv without keys twice, with a runner each
// time, and fails t if the two differ in a verdict or a beat.
func sameTwice(t *testing.T, argv []string, scheds ...string) {
	t.Helper()
	var runs [2]string
	for i := range runs {
		rn, err := sim.NewRunner(harness.Fresh(buyerTarget(t, argv, "cassette.json", "--no-key")), sim.Options{Name: "buyer"})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, s := range scheds {
			c := rn.Run(schedule(t, s))
			fmt.Fprintf(&b, "%s\n", c)
			for _, beat := range c.Beats {
				fmt.Fprintf(&b, "%s\n", beat.Label())
			}
		}
		runs[i] = b.String()
	}
	if runs[0] != runs[1] {
		t.Errorf("two runs differ:\n%s\n---\n%s", runs[0], runs[1])
	}
}

// A --env value names only the variables a process gets.
func TestUnknownChaoskitVariableIsRefused(t *testing.T) {
	target := process.Target{Argv: []string{"true"}, Env: []string{"X=${CHAOSKIT_MCP_URL}"}}
	err := target.Validate()
	if err == nil || !strings.Contains(err.Error(), "CHAOSKIT_MCP_URL") {
		t.Fatalf("err = %v, want a refusal naming CHAOSKIT_MCP_URL (no tool is declared)", err)
	}
}
