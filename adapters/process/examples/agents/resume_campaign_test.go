//go:build campaigns

package agents_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/sim"
)

// TestResumeFindings measures what each SDK's own resume makes again after a kill at each beat
// of the golden run (docs/findings/sdk-resume.md): the calls that the restarted process made
// and that the killed one had already made (a tool call under the same key, or the model's same
// turn). It checks the table the findings give, and prints it with -v.
//
// The Agents SDK resumes from the RunState saved at the last approval pause, so it makes again
// the approved call whose result the state did not hold, and every model turn and tool call
// since; LangGraph resumes on the checkpoint of the last finished superstep, so it runs the
// unfinished node again from its start, every tool call of it.
func TestResumeFindings(t *testing.T) {
	node := needNode(t)
	want := map[string][]string{
		"openai/responses": {
			0: "model turn 1",
			1: "purchase_orders",
			2: "purchase_orders",
			3: "purchase_orders, model turn 2",
			4: "purchase_orders, model turn 2, notify_finance",
			5: "purchase_orders, model turn 2, notify_finance",
			6: "charges",
			7: "charges",
			8: "charges, model turn 3",
		},
		"langgraph": {
			0: "model turn 1",
			1: "get_order",
			2: "get_order",
			3: "model turn 2",
			4: "issue_refund",
			5: "issue_refund",
			6: "issue_refund, email_customer",
			7: "issue_refund, email_customer",
			8: "model turn 3",
		},
	}
	for _, tw := range twins(t, node) {
		rows, ok := want[tw.name]
		if !ok {
			continue
		}
		t.Run(tw.name, func(t *testing.T) {
			rn := runner(t, tw)
			g, err := rn.Golden(nil)
			if err != nil {
				t.Fatal(err)
			}
			if g.Len() != len(rows) {
				t.Fatalf("the golden run made %d beats, the findings' table has %d", g.Len(), len(rows))
			}
			for k := range g.Len() {
				got := madeAgain(rn.Beats(faults.Schedule{{Kind: faults.Kill, Beat: k}}, 1))
				t.Logf("kill@%d at %-60s made again: %s", k, g.Beat(k).Label(), got)
				if got != rows[k] {
					t.Errorf("kill@%d: made again %q, the findings say %q", k, got, rows[k])
				}
			}
		})
	}
}

// turnOf is a model call's label without its request digest, which differs when what the
// agent sends the model differs.
var turnOf = regexp.MustCompile(`^model \S+ (turn \d+)`)

// madeAgain names, in order, the calls that process 1 of a case made and that process 0 had
// made before it was killed: each tool by its name, each model call by its turn.
func madeAgain(beats []sim.Beat) string {
	call := func(b sim.Beat) (string, string, bool) {
		switch {
		case b.Kind == sim.BeatModel:
			m := turnOf.FindStringSubmatch(b.Label())
			if m == nil {
				return "", "", false
			}
			return "model " + m[1], "model " + m[1], true
		case b.Kind == sim.BeatToolSent:
			return b.Name, fmt.Sprintf("%s %s", b.Name, b.Key), true
		}
		return "", "", false
	}
	made := map[string]bool{}
	var again []string
	for _, b := range beats {
		name, id, ok := call(b)
		switch {
		case !ok:
		case b.Process == 0:
			made[id] = true
		case b.Process == 1 && made[id] && !slices.Contains(again, name):
			again = append(again, name)
		}
	}
	return strings.Join(again, ", ")
}
