package reference

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/chaoskit/chaoskit/harness"
)

// StepKind says how a step's tool call completes.
type StepKind int

// The kinds of step.
const (
	Act      StepKind = iota // the tool replies with the outcome
	Async                    // the tool accepts the call; its completion comes later as a message
	Approval                 // a person must approve; the decision comes later as a message
)

// Step is one step of a task: a tool call with its arguments.
type Step struct {
	Name string         // what the step does, e.g. "create_po"
	Tool string         // the tool it calls
	Args map[string]any // what the call does
	Kind StepKind
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
	// Reject makes the person reject the approval step, which ends the run there.
	Reject bool
}

// The timing of the agent and its world, in virtual time.
const (
	modelLatency  = 2 * time.Second  // a model call's answer
	toolDeadline  = 40 * time.Second // the agent gives up waiting on a tool call
	leaseTTL      = 30 * time.Second // a run's lease
	heartbeat     = 10 * time.Second // the watchdog renews the lease this often
	pollEvery     = 5 * time.Second  // a worker without the lease looks again this often
	watchTick     = 5 * time.Second  // the watchdog's tick
	softTimeout   = 15 * time.Second // idle this long: a status is emitted
	hardTimeout   = 25 * time.Second // idle this long: the model call is cancelled
	keyTTL        = time.Hour        // how long the tools remember an idempotency key
	backgroundFor = 10 * time.Minute // a background check completes after this
	approvalAfter = 52 * time.Hour   // finance approves after a weekend
	fullPause     = time.Second      // the first wait for space on a full disk; each next doubles
	fullPauseMax  = time.Minute      // the longest wait for space
	fullWaits     = 10               // waits for space in a row before giving up: about 5 minutes
)

// tools returns the tools of the tasks, with their contracts and timing; reject makes the
// approval a rejection.
func tools(reject bool) []harness.Tool {
	outcome := "approved"
	if reject {
		outcome = "rejected"
	}
	mutating := func(name string, latency time.Duration) harness.Tool {
		return harness.Tool{Name: name, Contract: harness.IdempotentByKey, Latency: latency, KeyTTL: keyTTL, Fenced: true}
	}
	return []harness.Tool{
		{Name: "fetch_document", Contract: harness.ReadOnly, Latency: time.Second},
		{Name: "screen_sanctions", Contract: harness.ReadOnly, Latency: 2 * time.Second},
		{Name: "emit_status", Contract: harness.ReadOnly},
		{Name: "run_background_check", Contract: harness.IdempotentByKey, Latency: time.Second, KeyTTL: keyTTL, Fenced: true, Async: backgroundFor},
		mutating("create_vendor", time.Second),
		{Name: "request_approval", Contract: harness.IdempotentByKey, Latency: time.Second, Fenced: true, Async: approvalAfter, Outcome: outcome},
		mutating("create_po", time.Second),
		mutating("provision_credentials", time.Second),
		mutating("notify", time.Second),
		{Name: "append_log", Contract: harness.NotIdempotent},
	}
}

// Tools are the tools of the tasks, with their contracts (the approval step approves).
var Tools = tools(false)

// Onboarding returns the vendor-onboarding task of the durable-execution guide: collect the
// W-9, screen for sanctions, run a background check (asynchronous: ten minutes), open the vendor
// record, have finance approve the purchase order (a person, over a weekend: 52 hours), file
// the $84,000 purchase order, provision API credentials, tell finance. The transcript is
// compacted after five steps.
func Onboarding() Task {
	return onboarding("acme", "Acme Freight", 84000)
}

func onboarding(id, vendor string, amount int) Task {
	return Task{
		ID:   id,
		Goal: "onboard vendor " + vendor,
		Steps: []Step{
			{"collect_w9", "fetch_document", map[string]any{"vendor": vendor, "doc": "W-9"}, Act},
			{"sanctions_screen", "screen_sanctions", map[string]any{"vendor": vendor}, Act},
			{"background_check", "run_background_check", map[string]any{"vendor": vendor}, Async},
			{"create_vendor", "create_vendor", map[string]any{"vendor": vendor}, Act},
			{"approve_po", "request_approval", map[string]any{"queue": "finance_po", "vendor": vendor, "amount_usd": amount}, Approval},
			{"create_po", "create_po", map[string]any{"vendor": vendor, "amount_usd": amount}, Act},
			{"provision_credentials", "provision_credentials", map[string]any{"vendor": vendor, "scope": "api"}, Act},
			{"notify_finance", "notify", map[string]any{"channel": "finance", "text": "vendor " + vendor + " onboarded"}, Act},
		},
		CompactAfter: 5,
	}
}

// Tasks returns n short onboarding tasks drawn from seed, with different vendors, amounts and
// plan lengths (four to six synchronous steps), for suites like the dojo write-up's thirty.
func Tasks(n int, seed uint64) []Task {
	rng := rand.New(rand.NewPCG(seed, 0x7461736b73))
	vendors := []string{"Acme Freight", "Borealis Metals", "Cobalt Print", "Delta Couriers", "Evergreen Paper", "Fjord Logistics", "Granite Tools", "Harbor Fuel"}
	out := make([]Task, n)
	for i := range out {
		t := onboarding(fmt.Sprintf("t%02d", i), vendors[rng.IntN(len(vendors))], 1000*(1+rng.IntN(99)))
		var steps []Step
		for _, s := range t.Steps {
			if s.Kind == Act {
				steps = append(steps, s)
			}
		}
		t.Steps = steps[:4+rng.IntN(3)]
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
		steps = append(steps, Step{name, "append_log", map[string]any{"line": name}, Act})
	}
	return Task{ID: "loop", Goal: "build and ship", Steps: steps, SnapshotEvery: 1}
}

// model is the agent's scripted model: for each step it "decides" to call the step's tool. It is
// deterministic, so a resumed run makes the same decisions as the golden one.
func model(t Task, step int) Message {
	s := t.Steps[step]
	return Message{Role: "assistant", Content: fmt.Sprintf("[tool_use %s %s]", s.Tool, s.Name)}
}
