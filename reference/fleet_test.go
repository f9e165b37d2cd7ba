package reference_test

import (
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/reference"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/chaoskit/chaoskit/sim"
)

// The correct agent passes every case of an exhaustive run over every fault kind: storage,
// fleet (with two workers), tool, model, and the human gate that every run goes through; upgrade
// with the same version deployed again.
func TestCorrectAgentPassesEveryFaultKind(t *testing.T) {
	again := func() harness.Target { return reference.New(reference.Correct, reference.Onboarding()) }
	rn := runner(t, reference.Correct, reference.Onboarding(), campaign.Options{Options: sim.Options{Seed: 2, NextVersion: again}, Faults: faults.AllKinds()})
	perKind := map[faults.Kind]int{}
	for _, c := range rn.explore(t) {
		perKind[c.Schedule[0].Kind]++
		if c.Verdict.Outcome != oracle.Pass {
			t.Errorf("%s", c)
		}
	}
	for _, k := range faults.AllKinds() {
		// model-diverge is listed only after a model call with an alternative answer, and the
		// agent's scripted model gives none (its plan does not come from the model's text):
		// such a case would be a plain kill.
		if info, _ := k.Info(); info.Listed == faults.AfterAlternative {
			if perKind[k] != 0 {
				t.Errorf("%d %s cases ran, though the agent's model calls have no alternative answer", perKind[k], k)
			}
			continue
		}
		if perKind[k] == 0 {
			t.Errorf("no %s case ran", k)
		}
	}
	t.Logf("cases per kind: %v", perKind)
}

// The onboarding waits ten minutes for a background check and 52 hours for finance: virtual
// time makes that milliseconds.
func TestHumanGate_52HourRunTakesMilliseconds(t *testing.T) {
	start := time.Now()
	rn := runner(t, reference.Correct, reference.Onboarding(), campaign.Options{})
	c := rn.Run(nil)
	st := c.State.(reference.State)
	if st.Phase != reference.Completed || c.Result.(reference.Result).Outputs[4] != "approved" {
		t.Fatalf("phase %s, result %+v", st.Phase, c.Result)
	}
	if wall := time.Since(start); wall > 2*time.Second {
		t.Fatalf("the run took %v of real time", wall)
	}
}

// A restart, or a deploy, while the run waits for the approval resumes from the message: the
// approval is requested once and the purchase order filed once.
func TestHumanGate_RestartDuringWaitResumesFromTheSignal(t *testing.T) {
	for _, kind := range []faults.Kind{faults.Kill, faults.Deploy, faults.Power} {
		rn := runner(t, reference.Correct, reference.Onboarding(), campaign.Options{})
		wait := beatOf(t, rn, "await request_approval", 1)
		c := rn.Run(faults.Schedule{{Kind: kind, Beat: wait}})
		if c.Verdict.Outcome != oracle.Pass || c.Verdict.Metrics.Restarts == 0 {
			t.Errorf("%s during the wait: %s", kind, c)
		}
	}
}

// A rejection ends the run in the rejected state, without a purchase order; the correct agent
// still passes every case.
func TestHumanGate_RejectionEndsTheRun(t *testing.T) {
	task := reference.Onboarding()
	task.Reject = true
	rn := runner(t, reference.Correct, task, campaign.Options{Options: sim.Options{Seed: 4}, Faults: []faults.Kind{faults.Kill, faults.Power, faults.Deploy, faults.CallbackDup}})
	golden := rn.Run(nil)
	if st := golden.State.(reference.State); st.Phase != reference.Rejected || len(st.Completed) != 4 || st.InProgress {
		t.Fatalf("rejected run: phase %s, %d steps done, in progress %v", st.Phase, len(st.Completed), st.InProgress)
	}
	for _, c := range rn.explore(t) {
		if c.Verdict.Outcome != oracle.Pass {
			t.Errorf("%s", c)
		}
	}
}

var msField = regexp.MustCompile(`"duration_ms":[0-9.e+-]+,?`)

// 300 random schedules of several faults each, with two workers, give a byte-identical report
// twice over for the same seed.
func TestRandomFleetCampaignIsReproducible(t *testing.T) {
	run := func() (*reports.Report, string) {
		rn := runner(t, reference.Correct, reference.Onboarding(), campaign.Options{Options: sim.Options{Workers: 2, Seed: 300}, Mode: campaign.Random, Cases: 300, MaxFaults: 3, Faults: faults.AllKinds()})
		rep := &reports.Report{Schema: reports.Schema, Seed: 300}
		for i, c := range rn.explore(t) {
			rep.Cases = append(rep.Cases, campaign.ReportCase(c, i))
		}
		rep.Summarize(map[string]int{rn.opts.Name: rn.golden().Len()})
		b, err := json.Marshal(rep)
		if err != nil {
			t.Fatal(err)
		}
		return rep, msField.ReplaceAllString(string(b), "")
	}
	rep, first := run()
	_, second := run()
	if first != second {
		t.Fatal("two campaigns with the same seed wrote different reports")
	}
	multi := 0
	for _, c := range rep.Cases {
		if len(c.Schedule) > 1 {
			multi++
		}
	}
	sum := rep.Summary.Targets[0]
	if len(rep.Cases) != 300 || multi < 100 || sum.Failed+sum.Unknown != 0 {
		t.Fatalf("%d cases, %d with several faults, %d failed, %d unknown", len(rep.Cases), multi, sum.Failed, sum.Unknown)
	}
	t.Logf("300 cases (%d with several faults), %d restarts in all, identical twice", multi, sum.Restarts)
}

// Pauses between a heartbeat's reach and the lease's expiry leave a zombie that wakes just
// after the takeover; its late records must not count. (A review found the agent failing at
// 21-32s before new holders wrote an epoch record under their token.)
func TestCorrectAgentSurvivesMidLengthLeasePauses(t *testing.T) {
	rn := runner(t, reference.Correct, reference.Onboarding(), campaign.Options{Faults: []faults.Kind{faults.Lease}, LeasePauses: []time.Duration{21 * time.Second, 25 * time.Second, 28 * time.Second, 32 * time.Second}})
	n := 0
	for _, c := range rn.explore(t) {
		n++
		if c.Verdict.Outcome != oracle.Pass {
			t.Errorf("%s", c)
		}
	}
	t.Logf("%d cases", n)
}

// Several faults in one run, crashes in recoveries included, over storage, tools and the model.
// (A review found the agent losing its run when the process that created its directories died
// before fsyncing them and a power loss followed.)
func TestCorrectAgentSurvivesMultiFaultSchedules(t *testing.T) {
	rn := runner(t, reference.Correct, reference.Onboarding(), campaign.Options{Options: sim.Options{Seed: 8}, Mode: campaign.Random, Cases: 400, MaxFaults: 3, Faults: append(faults.StorageKinds(), append(faults.FamilyKinds(faults.ToolFamily), faults.FamilyKinds(faults.ModelFamily)...)...)})
	for _, text := range []string{"kill@2,power@40", "kill@4,power@20", "fsyncfail@2,power@40", "fsyncfail@4,power@20", "corrupt@2,power@113,power@214"} {
		s, err := faults.ParseSchedule(text)
		if err != nil {
			t.Fatal(err)
		}
		if c := rn.Run(s); c.Verdict.Outcome != oracle.Pass {
			t.Errorf("%s", c)
		}
	}
	for _, c := range rn.explore(t) {
		if c.Verdict.Outcome != oracle.Pass {
			t.Errorf("%s", c)
		}
	}
}
