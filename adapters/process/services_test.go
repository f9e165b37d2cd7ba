package process_test

import (
	"os"
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

// buyerTarget is testdata/agent/buyer.py as a team runs it under chaoskit: its own variable
// names mapped onto the services' URLs, nothing of chaoskit in it.
func buyerTarget(t *testing.T, cassette string, args ...string) process.Target {
	return process.Target{
		Argv:      append([]string{pythonExe(t), "-S", "-B", "testdata/agent/buyer.py"}, args...),
		StateArgv: []string{pythonExe(t), "-S", "-B", "testdata/agent/buyer.py", "--dump-state"},
		Env: []string{"STATE_DIR=${CHAOSKIT_STATE_DIR}", "PURCHASING_URL=${CHAOSKIT_HTTP_URL}",
			"NOTIFY_MCP_URL=${CHAOSKIT_MCP_URL}"},
		// The ids a provider gives are fresh in every answer: the conversation keeps them.
		Ignore:   []string{"$[*].tool_calls[*].id", "$[*].tool_call_id"},
		Services: agentServices(t, cassette),
	}
}

// An agent that reaches its model, a REST service and an MCP server over HTTP, with only
// environment variables pointing it at chaoskit, is tested as it ships: a kill at every beat,
// each model and tool fault at a beat where it fires; the correct agent passes them all, the
// one that sends no idempotency keys duplicates its order.
func TestUnmodifiedAgentOverHTTP(t *testing.T) {
	correct, err := sim.NewRunner(harness.Fresh(buyerTarget(t, "cassette.json")), sim.Options{Name: "buyer"})
	if err != nil {
		t.Fatal(err)
	}
	g, err := correct.Golden(nil)
	if err != nil {
		t.Fatal(err)
	}
	trace := strings.Join(g.Trace(), "\n")
	for _, want := range []string{"purchase_orders", "notify"} {
		if !strings.Contains(trace, want) {
			t.Fatalf("golden run never called %s:\n%s", want, trace)
		}
	}
	cases := explore(t, correct, faults.Kill)
	if len(cases) < 4 {
		t.Fatalf("%d kill cases: want one at each of the agent's beats (model calls, tools, writes)", len(cases))
	}
	for _, c := range cases {
		if c.Verdict.Outcome != oracle.Pass {
			t.Errorf("correct agent: %s", c)
		}
	}
	for _, s := range []string{"model-cut@0", "model-error@0:503", "tool-ambiguous@1", "tool-transient@3", "tool-timeout@1", "model-diverge@0", "model-hang@0", "model-ratelimit@0"} {
		sched, err := faults.ParseSchedule(s)
		if err != nil {
			t.Fatal(err)
		}
		if c := correct.Run(sched); c.Verdict.Outcome != oracle.Pass {
			t.Errorf("correct agent under %s: %s", s, c)
		}
	}

	nokey, err := sim.NewRunner(harness.Fresh(buyerTarget(t, "cassette.json", "--no-key")), sim.Options{Name: "buyer --no-key"})
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for _, c := range explore(t, nokey, faults.Kill) {
		if c.Verdict.Outcome == oracle.Fail && strings.Contains(c.String(), "purchase_orders") {
			failed++
		}
	}
	if failed == 0 {
		t.Error("the agent without idempotency keys passed every kill: a kill after its order was applied and before its checkpoint must duplicate the order")
	}
}

// A model request the cassette does not answer makes the run undecided, saying what was asked.
func TestCassetteMissIsUndecided(t *testing.T) {
	_, err := sim.NewRunner(harness.Fresh(buyerTarget(t, "short.json")), sim.Options{Name: "buyer/short", Timeout: 5 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "cassette") {
		t.Fatalf("err = %v, want the golden run refused for a request the cassette does not answer", err)
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
