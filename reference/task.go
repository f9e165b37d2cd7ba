package reference

import (
	"fmt"
	"math/rand/v2"

	"github.com/chaoskit/chaoskit/harness"
)

// Step is one step of a task: a tool call with its arguments.
type Step struct {
	Name string         // what the step does, e.g. "create_po"
	Tool string         // the tool it calls
	Args map[string]any // what the call does
}

// Task is what the agent is asked to do: a plan of steps, each a tool call.
type Task struct {
	ID    string
	Goal  string
	Steps []Step
	// CompactAfter, if positive, compacts the transcript once that many steps are done: the
	// messages so far are replaced by a summary, as an agent does when its context fills up.
	CompactAfter int
	// SnapshotEvery writes a snapshot after every that many committed steps (default 2).
	SnapshotEvery int
}

// Tools are the tools of the vendor-onboarding tasks, with their contracts.
var Tools = []harness.Tool{
	{Name: "fetch_document", Contract: harness.ReadOnly},
	{Name: "screen_sanctions", Contract: harness.ReadOnly},
	{Name: "create_vendor", Contract: harness.IdempotentByKey},
	{Name: "create_po", Contract: harness.IdempotentByKey},
	{Name: "provision_credentials", Contract: harness.IdempotentByKey},
	{Name: "notify", Contract: harness.IdempotentByKey},
	{Name: "append_log", Contract: harness.NotIdempotent},
}

// Onboarding returns the vendor-onboarding task of the durable-execution guide: collect the
// W-9, screen for sanctions, open the vendor record, file the $84,000 purchase order, provision
// API credentials, tell finance. The transcript is compacted after four steps.
func Onboarding() Task {
	return onboarding("acme", "Acme Freight", 84000)
}

func onboarding(id, vendor string, amount int) Task {
	return Task{
		ID:   id,
		Goal: "onboard vendor " + vendor,
		Steps: []Step{
			{"collect_w9", "fetch_document", map[string]any{"vendor": vendor, "doc": "W-9"}},
			{"sanctions_screen", "screen_sanctions", map[string]any{"vendor": vendor}},
			{"create_vendor", "create_vendor", map[string]any{"vendor": vendor}},
			{"create_po", "create_po", map[string]any{"vendor": vendor, "amount_usd": amount}},
			{"provision_credentials", "provision_credentials", map[string]any{"vendor": vendor, "scope": "api"}},
			{"notify_finance", "notify", map[string]any{"channel": "finance", "text": "vendor " + vendor + " onboarded"}},
		},
		CompactAfter: 4,
	}
}

// Tasks returns n onboarding tasks drawn from seed, with different vendors, amounts and plan
// lengths (the first four to all six steps), for suites like the dojo write-up's thirty.
func Tasks(n int, seed uint64) []Task {
	rng := rand.New(rand.NewPCG(seed, 0x7461736b73))
	vendors := []string{"Acme Freight", "Borealis Metals", "Cobalt Print", "Delta Couriers", "Evergreen Paper", "Fjord Logistics", "Granite Tools", "Harbor Fuel"}
	out := make([]Task, n)
	for i := range out {
		t := onboarding(fmt.Sprintf("t%02d", i), vendors[rng.IntN(len(vendors))], 1000*(1+rng.IntN(99)))
		t.Steps = t.Steps[:4+rng.IntN(3)]
		t.CompactAfter = 0
		out[i] = t
	}
	return out
}

// Pipeline returns the Burr write-up's five-step loop: gather, plan, build, verify, ship, each
// appending a line to a log, a side effect that is not idempotent.
func Pipeline() Task {
	var steps []Step
	for _, name := range []string{"gather", "plan", "build", "verify", "ship"} {
		steps = append(steps, Step{name, "append_log", map[string]any{"line": name}})
	}
	return Task{ID: "loop", Goal: "build and ship", Steps: steps, SnapshotEvery: 1}
}

// model is the agent's scripted model: for each step it "decides" to call the step's tool. It is
// deterministic, so a resumed run makes the same decisions as the golden one.
func model(t Task, step int) Message {
	s := t.Steps[step]
	return Message{Role: "assistant", Content: fmt.Sprintf("[tool_use %s %s]", s.Tool, s.Name)}
}
