package reference_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/reference"
	"github.com/chaoskit/chaoskit/sim"
)

// harborRuns returns n vendor onboardings, the durable-execution guide's long runs (a ten-minute
// background check, a 52-hour finance approval, the purchase order), each for another vendor and
// amount: Harbor Logistics' fleet of runs.
func harborRuns(n int) []reference.Task {
	vendors := []string{"Acme Freight", "Borealis Metals", "Cobalt Print", "Delta Couriers", "Evergreen Paper", "Fjord Logistics", "Granite Tools"}
	var out []reference.Task
	for i := range n {
		t := reference.Onboarding()
		vendor, amount := vendors[i%len(vendors)], 12000+7000*i
		t.ID, t.Goal = fmt.Sprintf("v%02d", i), "onboard vendor "+vendor
		t.Steps = slices.Clone(t.Steps)
		for j, s := range t.Steps {
			args := maps.Clone(s.Args)
			for k := range args {
				switch k {
				case "vendor":
					args[k] = vendor
				case "amount_usd":
					args[k] = amount
				case "text":
					args[k] = "vendor " + vendor + " onboarded"
				}
			}
			t.Steps[j].Args = args
		}
		out = append(out, t)
	}
	return out
}

// The durable-execution guide (seed 002): "over three months, 23% of long runs produced at least
// one duplicate side effect after crash or deploy" with an in-memory ReAct loop; "duplicate side
// effects on long runs 23% → 0%" with a checkpointed run state, a tool ledger (pending before the
// call, committed after) and idempotency keys stable per step. Here a fleet of 20 onboardings,
// each run three times under up to two crashes and deploys drawn from its seed, with each agent:
// the in-memory loop duplicates effects in some runs, the reference in none and passes them all.
func TestSeedHarbor_DuplicatesAcrossAFleet_InMemorySome_LedgerAndKeysNone(t *testing.T) {
	type tally struct{ runs, withDup, failed int }
	got := map[reference.Variant]*tally{}
	order := []reference.Variant{reference.InMemory, reference.Correct}
	for i, task := range harborRuns(20) {
		for _, v := range order {
			rn := runner(t, v, task, campaign.Options{Options: sim.Options{Seed: uint64(i)}, Mode: campaign.Random,
				Cases: 3, MaxFaults: 2, Faults: []faults.Kind{faults.Kill, faults.Deploy}, NoShrink: true})
			tl := got[v]
			if tl == nil {
				tl = &tally{}
				got[v] = tl
			}
			for _, c := range rn.explore(t) {
				tl.runs++
				if c.Verdict.Metrics.Duplicates > 0 {
					tl.withDup++
				}
				if c.Verdict.Outcome != oracle.Pass {
					tl.failed++
					if v == reference.Correct {
						t.Errorf("%s", c)
					}
				}
			}
		}
	}
	for _, v := range order {
		tl := got[v]
		name := "reference (ledger and stable keys)"
		if v == reference.InMemory {
			name = "in-memory ReAct loop"
		}
		t.Logf("%-36s %2d/%d runs with a duplicate side effect (%.0f%%), %d failed", name, tl.withDup, tl.runs, 100*float64(tl.withDup)/float64(tl.runs), tl.failed)
	}
	if tl := got[reference.InMemory]; tl.withDup == 0 {
		t.Errorf("the in-memory loop duplicated no effect in %d runs under crashes and deploys; the write-up saw 23%%", tl.runs)
	}
	if tl := got[reference.Correct]; tl.withDup != 0 {
		t.Errorf("with a ledger and stable keys %d of %d runs duplicated an effect, want 0", tl.withDup, tl.runs)
	}
}

// harborPhase names the reference's phase in the guide's run state machine: a run with no state
// yet is pending, and a rejection is the terminal failed ("rejections should branch
// explicitly: terminal failed with reason").
func harborPhase(st reference.State) string {
	switch st.Phase {
	case "":
		return "pending"
	case reference.Rejected:
		return "failed"
	}
	return st.Phase
}

// The guide's transitions: pending → running; running → waiting_tool, waiting_human,
// completed, failed; a wait back to running; a human's rejection → failed.
var harborTransitions = map[string][]string{
	"pending":       {"running"},
	"running":       {"waiting_tool", "waiting_human", "completed", "failed"},
	"waiting_tool":  {"running"},
	"waiting_human": {"running", "failed"},
}

// The guide's run state machine and tool ledger, as the durable state shows them at every beat
// of a run (what a process restarted there would find): the run moves pending → running →
// waiting_tool (the background check) → running → waiting_human (finance) → running →
// completed, or, rejected, → failed, and only along the guide's transitions; each mutating step's
// ledger entry is written pending before its call and flips to committed after, under a key
// stable per step (run_id:step), never back. Under a crash or a deploy at every beat, each run
// ends with the golden ledger: nothing committed twice, no key changed.
func TestSeedHarbor_RunStateMachineAndToolLedger(t *testing.T) {
	for _, reject := range []bool{false, true} {
		task := reference.Onboarding()
		task.Reject = reject
		rn := runner(t, reference.Correct, task, campaign.Options{Faults: []faults.Kind{faults.Kill, faults.Power, faults.Deploy}})
		g := rn.golden()
		var phases []string
		ledger := map[string]reference.Entry{} // key -> its entry as last seen
		for k := range g.Len() {
			s, err := rn.CrashState(faults.Fault{Kind: faults.Kill, Beat: k})
			if err != nil {
				t.Fatal(err)
			}
			st := s.(reference.State)
			ph := harborPhase(st)
			if n := len(phases); n == 0 || phases[n-1] != ph {
				if n > 0 && !slices.Contains(harborTransitions[phases[n-1]], ph) {
					t.Fatalf("beat %d: %s → %s is not a transition of the run state machine", k, phases[n-1], ph)
				}
				phases = append(phases, ph)
			}
			for _, e := range st.Ledger {
				if want := fmt.Sprintf("run-%s:%d", task.ID, e.Step); e.Key != want {
					t.Fatalf("beat %d: step %d's key is %q, want the stable %q", k, e.Step, e.Key, want)
				}
				prev, seen := ledger[e.Key]
				switch {
				case !seen && e.Status != "pending":
					t.Fatalf("beat %d: %s appeared %s, without being pending first", k, e.Key, e.Status)
				case seen && prev.Status == "committed" && e.Status != "committed":
					t.Fatalf("beat %d: %s went from committed back to %s", k, e.Key, e.Status)
				}
				ledger[e.Key] = e
			}
		}
		want := []string{"pending", "running", "waiting_tool", "running", "waiting_human", "running", "completed"}
		if reject {
			want = []string{"pending", "running", "waiting_tool", "running", "waiting_human", "failed"}
		}
		if !slices.Equal(phases, want) {
			t.Errorf("reject=%v: phases %v, want %v", reject, phases, want)
		}
		for _, c := range rn.explore(t) {
			if c.Verdict.Outcome != oracle.Pass || c.Verdict.Metrics.Duplicates != 0 {
				t.Errorf("%s", c)
			}
		}
		t.Logf("reject=%v: %s; ledger %d entries, all pending before committed", reject, strings.Join(phases, " → "), len(ledger))
	}
}

// The guide: "successful resume after deploy or crash 94% (remaining 6% required manual
// intervention on corrupted checkpoints)". A corrupted checkpoint must be detected and reported,
// never silently resumed. Under a bit flipped at every beat, the reference (a CRC-32C on every
// log record and on the snapshot) either recovers (a damaged snapshot is rebuilt from the log, a
// damaged last record is a tail it continues past) or stops loudly with ErrCorrupt, a detected
// failure that asks for a person (oracle.Verdict.Detected): never a wrong state. The variant
// without checksums resumes silently from what it misreads.
func TestSeedHarbor_CorruptedCheckpointIsDetectedNeverSilentlyResumed(t *testing.T) {
	opts := campaign.Options{Options: sim.Options{Seed: 3}, Faults: []faults.Kind{faults.Corrupt}}
	rn := runner(t, reference.Correct, reference.Onboarding(), opts)
	cases := rn.explore(t)
	detected := 0
	for _, c := range cases {
		switch {
		case c.Verdict.Outcome != oracle.Pass:
			t.Errorf("a corruption went undetected or unrecovered:\n%s", c)
		case c.Verdict.Detected != "":
			detected++
			if !strings.Contains(c.Verdict.Detected, reference.ErrCorrupt.Error()) {
				t.Errorf("stopped, but not for corruption: %s", c.Verdict.Detected)
			}
		}
	}
	if detected == 0 {
		t.Error("no corruption was detected: none hit the middle of the log?")
	}
	t.Logf("reference: of %d runs with a bit flipped, %d resumed correctly, %d (%.0f%%) stopped loudly for a person, 0 resumed silently",
		len(cases), len(cases)-detected, detected, 100*float64(detected)/float64(len(cases)))

	silent := 0
	for _, c := range runner(t, reference.NoChecksum, reference.Onboarding(), opts).explore(t) {
		if c.Failed() && c.Verdict.Detected == "" {
			silent++
		}
	}
	if silent == 0 {
		t.Error("the variant without checksums never resumed silently from a corrupted checkpoint")
	}
	t.Logf("no-checksum: %d of %d runs resumed silently from what a flipped bit made of the checkpoint", silent, len(cases))
}
