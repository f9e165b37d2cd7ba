package agents_test

// The agents of this directory, run as they ship, with no chaoskit code in them: each is a
// process.Target whose services (the model API from its cassette, its REST doubles and MCP
// tools) chaoskit serves on loopback, with only environment variables pointing the agent at
// them. A correct agent passes the cases; each buggy twin fails them with the property its bug
// breaks.
//
// It needs node and npm (and python3 for the Python agent); it runs npm ci here when
// node_modules is missing (better-sqlite3 compiles against /usr/include/node when present).
// Without them it skips, except under CI=true, where it fails.

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

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

func TestMain(m *testing.M) {
	process.Init() // chaoskit's reaper and FUSE server are copies of this program
	os.Exit(m.Run())
}

// needNode returns node's path once the npm packages are installed (needs.NPM).
func needNode(t *testing.T) string {
	t.Helper()
	return needs.NPM(t, ".")
}

// mcpTool is a declared MCP tool with its schema.
func mcpTool(t *testing.T, text, description, schema string) mcp.Tool {
	t.Helper()
	tool, err := mcp.ParseTool(text)
	if err != nil {
		t.Fatal(err)
	}
	tool.Description = description
	tool.InputSchema = json.RawMessage(schema)
	return tool
}

// openAIAgent is openai-agent.mjs with extra flags, as its README declares it.
func openAIAgent(t *testing.T, node string, flags ...string) spec {
	return spec{
		argv:      append([]string{node, "openai-agent.mjs"}, flags...),
		stateArgv: []string{node, "openai-agent.mjs", "--dump-state"},
		dir:       ".",
		cassette:  "cassettes/openai-agent.json",
		routes: []string{
			"POST /v1/purchase_orders=idempotent-by-header:Idempotency-Key,name=purchase_orders",
			"POST /v1/charges=idempotent-by-header:Idempotency-Key,name=charges",
		},
		tools: []mcp.Tool{mcpTool(t, "notify_finance=idempotent-by-meta:idempotency_key",
			"Tell finance about a purchase that was paid.",
			`{"type":"object","properties":{"purchase_order_id":{"type":"string"},"amount_usd":{"type":"number"},"summary":{"type":"string"}},"required":["purchase_order_id","amount_usd","summary"]}`)},
		env: map[string]string{"PAYMENTS_API_URL": "${CHAOSKIT_HTTP_URL}"},
	}
}

// langGraphAgent is langgraph-agent.mjs with extra flags, as its README declares it.
func langGraphAgent(t *testing.T, node string, flags ...string) spec {
	keyed := `,"idempotency_key":{"type":"string","description":"Set by the agent, not the model."}`
	return spec{
		argv:      append([]string{node, "langgraph-agent.mjs"}, flags...),
		stateArgv: []string{node, "langgraph-agent.mjs", "--dump-state"},
		dir:       ".",
		cassette:  "cassettes/langgraph-agent.json",
		tools: []mcp.Tool{
			mcpTool(t, "get_order=read-only", "Look an order up.",
				`{"type":"object","properties":{"order_id":{"type":"string"}},"required":["order_id"]}`),
			mcpTool(t, "issue_refund=idempotent-by-arg:$.idempotency_key", "Refund the customer of an order.",
				`{"type":"object","properties":{"order_id":{"type":"string"},"amount_usd":{"type":"number"},"reason":{"type":"string"}`+keyed+`},"required":["order_id","amount_usd","reason"]}`),
			mcpTool(t, "email_customer=idempotent-by-arg:$.idempotency_key", "Email the customer of an order.",
				`{"type":"object","properties":{"order_id":{"type":"string"},"to":{"type":"string"},"subject":{"type":"string"},"body":{"type":"string"}`+keyed+`},"required":["order_id","to","subject","body"]}`),
		},
	}
}

// pythonAgent is support_agent.py with extra flags, as its README declares it.
func pythonAgent(python string, flags ...string) spec {
	return spec{
		argv:      append([]string{python, "support_agent.py"}, flags...),
		stateArgv: []string{python, "support_agent.py", "--dump-state"},
		dir:       ".",
		cassette:  "cassettes/support-agent.json",
		routes: []string{
			"POST /v1/tickets=idempotent-by-header:Idempotency-Key,name=tickets",
			"POST /v1/tickets/{id}/comments=idempotent-by-header:Idempotency-Key,name=comments",
			"POST /v1/emails=idempotent-by-header:Idempotency-Key,name=emails",
		},
		env: map[string]string{"TICKETS_API_URL": "${CHAOSKIT_HTTP_URL}", "MAIL_API_URL": "${CHAOSKIT_HTTP_URL}"},
	}
}

// spec is an agent as a team runs it under chaoskit.
type spec struct {
	// argv runs the agent, in dir; stateArgv prints its durable state.
	argv, stateArgv []string
	dir             string
	// cassette is the model's answers (adapters/provider/CASSETTE.md); none for an agent that
	// asks no model.
	cassette string
	// routes are the REST doubles (rest.ParseRoute), tools the MCP server's.
	routes []string
	tools  []mcp.Tool
	// env maps chaoskit's variables onto the team's own, as --env 'NAME=${CHAOSKIT_HTTP_URL}'.
	env map[string]string
}

// target is the agent as chaoskit runs it: what chaoskit run --exec with --cassette, --http,
// --tool and --env makes of it.
func (s spec) target(t *testing.T) process.Target {
	t.Helper()
	cfg := services.Config{Tools: s.tools}
	if s.cassette != "" {
		c, err := provider.Load(s.cassette)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Cassette = c
	}
	for _, text := range s.routes {
		r, err := rest.ParseRoute(text)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Routes = append(cfg.Routes, r)
	}
	var env []string
	for k, v := range s.env {
		env = append(env, k+"="+v)
	}
	slices.Sort(env)
	return process.Target{Argv: s.argv, StateArgv: s.stateArgv, Dir: s.dir, Env: env, Services: cfg}
}

// twin is an agent variant and whether it is buggy; quick ones run by default, the rest under
// -tags campaigns.
type twin struct {
	name  string
	spec  spec
	buggy bool
	quick bool
}

// twins are the agents and their buggy twins.
func twins(t *testing.T, node string) []twin {
	python := needs.Command(t, "python3", "apt-get install -y python3")
	return []twin{
		{"openai/responses", openAIAgent(t, node), false, true},
		{"openai/chat", openAIAgent(t, node, "--chat-completions"), false, false},
		{"openai/responses/no-key", openAIAgent(t, node, "--no-key"), true, true},
		{"openai/chat/rerun", openAIAgent(t, node, "--chat-completions", "--rerun"), true, false},
		{"langgraph", langGraphAgent(t, node), false, true},
		{"langgraph/no-key", langGraphAgent(t, node, "--no-key"), true, false},
		{"langgraph/rerun", langGraphAgent(t, node, "--rerun"), true, true},
		{"python", pythonAgent(python), false, true},
		{"python/no-key", pythonAgent(python, "--no-key"), true, true},
	}
}

// runner returns the simulation of tw's agent, its golden runs done.
func runner(t *testing.T, tw twin) *sim.Runner {
	t.Helper()
	rn, err := sim.NewRunner(harness.Fresh(tw.spec.target(t)), sim.Options{Name: tw.name})
	if err != nil {
		t.Fatal(err)
	}
	return rn
}

// kills returns a kill at every beat of the golden run that is an effect of a tool that is not
// read-only (its beat "applied"): the crashes that find an effect done and its answer not yet
// kept.
func kills(t *testing.T, rn *sim.Runner, tw twin) []faults.Schedule {
	t.Helper()
	g, err := rn.Golden(nil)
	if err != nil {
		t.Fatal(err)
	}
	readOnly := map[string]bool{}
	for _, tool := range tw.spec.target(t).Tools() {
		readOnly[tool.Name] = tool.Contract == harness.ReadOnly
	}
	var out []faults.Schedule
	for k := range g.Len() {
		if b := g.Beat(k); strings.HasSuffix(b.Label(), " applied") && !readOnly[b.Name] {
			out = append(out, faults.Schedule{{Kind: faults.Kill, Beat: k}})
		}
	}
	if len(out) == 0 {
		t.Fatalf("the golden run applied no effect:\n%s", strings.Join(g.Trace(), "\n"))
	}
	return out
}

// TestAgents runs each agent and a buggy twin of it golden, then killed at the first beat where
// a tool's effect has landed, and restarted on what survived: the correct agents pass, each
// buggy twin fails (TestAgentCampaigns, -tags campaigns, runs every twin, kills at every such
// beat and adds the model's and tools' faults).
func TestAgents(t *testing.T) {
	node := needNode(t)
	for _, tw := range twins(t, node) {
		if !tw.quick {
			continue
		}
		t.Run(tw.name, func(t *testing.T) {
			rn := runner(t, tw)
			c := rn.Run(kills(t, rn, tw)[0])
			switch {
			case tw.buggy && c.Verdict.Outcome != oracle.Fail:
				t.Errorf("buggy twin: %s", c)
			case !tw.buggy && c.Verdict.Outcome != oracle.Pass:
				t.Errorf("%s", c)
			default:
				t.Logf("%s: %s", c.Schedule, c.Verdict.Outcome)
			}
		})
	}
}
