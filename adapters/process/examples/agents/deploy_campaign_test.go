//go:build campaigns

package agents_test

// langgraph-deploy.mjs under a deploy of its version 2 in the middle of a run (an upgrade
// fault): what LangGraph.js does with a thread the old graph checkpointed, and what chaoskit
// marks of it (docs/findings/langgraphjs-graph-upgrade.md).

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/adapters/mcp"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
)

// deployGraph is langgraph-deploy.mjs with flags, as its header runs it under chaoskit: the
// support team's four MCP tools, approve_refund used by version 2 only.
func deployGraph(t *testing.T, node string, flags ...string) spec {
	keyed := `,"idempotency_key":{"type":"string","description":"Set by the workflow."}`
	order := `"order_id":{"type":"string"}`
	amount := `"amount_usd":{"type":"number"}`
	return spec{
		argv:      append([]string{node, "langgraph-deploy.mjs"}, flags...),
		stateArgv: []string{node, "langgraph-deploy.mjs", "--dump-state"},
		dir:       ".",
		tools: []mcp.Tool{
			mcpTool(t, "get_order=read-only", "Look an order up.",
				`{"type":"object","properties":{`+order+`},"required":["order_id"]}`),
			mcpTool(t, "approve_refund=idempotent-by-arg:$.idempotency_key", "Approve a refund before it is made.",
				`{"type":"object","properties":{`+order+`,`+amount+keyed+`},"required":["order_id","amount_usd"]}`),
			mcpTool(t, "issue_refund=idempotent-by-arg:$.idempotency_key", "Refund the customer of an order.",
				`{"type":"object","properties":{`+order+`,`+amount+`,"reason":{"type":"string"}`+keyed+`},"required":["order_id","amount_usd","reason"]}`),
			mcpTool(t, "email_customer=idempotent-by-arg:$.idempotency_key", "Email the customer of an order.",
				`{"type":"object","properties":{`+order+`,"to":{"type":"string"},"subject":{"type":"string"},"body":{"type":"string"}`+keyed+`},"required":["order_id","to","subject","body"]}`),
		},
	}
}

// deployTwin is a version 2 of langgraph-deploy.mjs, the version 1 it follows, and what chaoskit
// must say of a deploy of it at each beat of version 1's golden run.
type deployTwin struct {
	name      string
	v1, flags []string // version 1's flags and version 2's
	// wants says, by the beat of the deploy (its tool and "sent" or "applied"), what the case
	// must be; a deploy at any other beat must pass on version 2's path.
	wants map[string]want
}

// want is a case's verdict and what it is marked (oracle.Stranded, Duplicated, Replanned, or
// "old path" for a run excused as having kept to version 1's path).
type want struct {
	outcome oracle.Outcome
	mark    string
}

// oldPath is the mark of a case excused because it ended as version 1's golden run.
const oldPath = "old path"

// deployTwins are version 2 and its buggy twins. Before issue_refund is sent, version 1 has not
// checkpointed lookup and version 2 runs the thread from its start. From issue_refund on, the
// thread is past lookup and LangGraph resumes it at refund, after approve's place: version 2
// migrates it, the twin without the migration is refused by its own refund node. From
// email_customer on, the refund is checkpointed and the thread is about to enter notify: it
// finishes on version 1's path, except in the twin that renamed notify, where it ends there.
// With keys made of the superstep, the migration and the new node move refund two steps on:
// a refund version 1 made but did not checkpoint is made again.
func deployTwins() []deployTwin {
	oldPathToo := map[string]want{"email_customer sent": {oracle.Pass, oldPath}, "email_customer applied": {oracle.Pass, oldPath}}
	with := func(m map[string]want) map[string]want {
		out := maps.Clone(oldPathToo)
		maps.Copy(out, m)
		return out
	}
	v2 := []string{"--version", "2"}
	return []deployTwin{
		{"v2", nil, v2, oldPathToo},
		{"v2/no-migration", nil, append(v2, "--no-migration"), with(map[string]want{
			"issue_refund sent": {oracle.Fail, oracle.Stranded}, "issue_refund applied": {oracle.Fail, oracle.Stranded}})},
		{"v2/rename", nil, append(v2, "--rename"), map[string]want{
			"email_customer sent": {oracle.Fail, oracle.Replanned}, "email_customer applied": {oracle.Fail, oracle.Replanned}}},
		{"v2/step-keys", []string{"--step-keys"}, append(v2, "--step-keys"), with(map[string]want{
			"issue_refund applied": {oracle.Fail, oracle.Duplicated + ", " + oracle.Replanned}})},
	}
}

// deployRunner returns the simulation of version 1 with tw as its next version, golden runs done.
func deployRunner(t *testing.T, node string, tw deployTwin) *sim.Runner {
	t.Helper()
	v1, v2 := deployGraph(t, node, tw.v1...).target(t), deployGraph(t, node, tw.flags...).target(t)
	rn, err := sim.NewRunner(harness.Fresh(v1), sim.Options{Name: "langgraph-deploy/" + tw.name, NextVersion: harness.Fresh(v2)})
	if err != nil {
		t.Fatal(err)
	}
	return rn
}

// markOf is what case c is marked: stranded, duplicated, replanned, old path, or nothing.
func markOf(c *sim.Case) string {
	m := c.Verdict.Metrics
	var marks []string
	for _, x := range []struct {
		on   bool
		name string
	}{{m.Stranded, oracle.Stranded}, {m.Duplicated, oracle.Duplicated}, {m.Replanned, oracle.Replanned}} {
		if x.on {
			marks = append(marks, x.name)
		}
	}
	if slices.ContainsFunc(c.Verdict.NotChecked, func(s string) bool { return strings.Contains(s, "the old version's golden run") }) {
		marks = append(marks, oldPath)
	}
	return strings.Join(marks, ", ")
}

// TestLangGraphDeploy deploys each version 2 of langgraph-deploy.mjs at every beat of version
// 1's golden run and checks each case's verdict and marks against deployTwins.
func TestLangGraphDeploy(t *testing.T) {
	node := needNode(t)
	for _, tw := range deployTwins() {
		t.Run(tw.name, func(t *testing.T) {
			rn := deployRunner(t, node, tw)
			g, err := rn.Golden(nil)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			for k := range g.Len() {
				b := g.Beat(k)
				at := b.Name + " sent"
				if b.Kind == sim.BeatToolApplied {
					at = b.Name + " applied"
				}
				seen[at] = true
				w, ok := tw.wants[at]
				if !ok {
					w = want{oracle.Pass, ""}
				}
				c := rn.Run(faults.Schedule{{Kind: faults.Upgrade, Beat: k}})
				if got := markOf(c); c.Verdict.Outcome != w.outcome || got != w.mark {
					t.Errorf("%s at %s: %s, marked %q; want %s, marked %q\n%s", c.Schedule, b.Label(), c.Verdict.Outcome, got, w.outcome, w.mark, c)
					continue
				}
				t.Logf("%s at %s: %s, marked %q", c.Schedule, b.Label(), c.Verdict.Outcome, markOf(c))
			}
			for at := range tw.wants {
				if !seen[at] {
					t.Errorf("version 1's golden run has no beat %q:\n%s", at, strings.Join(g.Trace(), "\n"))
				}
			}
		})
	}
}
