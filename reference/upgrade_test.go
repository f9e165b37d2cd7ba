package reference_test

import (
	"testing"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/reference"
	"github.com/chaoskit/chaoskit/sim"
)

// upgradeCases runs upgrade@k at every beat of the golden run of variant v doing the Burr
// loop's first four steps, deployed as a version that does all five (the agent gains a step).
func upgradeCases(t *testing.T, v reference.Variant) []*sim.Case {
	t.Helper()
	old := reference.Pipeline()
	old.Steps = old.Steps[:4]
	next := reference.Pipeline()
	rn, err := sim.NewRunner(func() harness.Target { return reference.New(v, old) }, sim.Options{
		Name:        "reference",
		NextVersion: func() harness.Target { return reference.New(v, next) },
	})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := rn.Golden(nil)
	var cases []*sim.Case
	for k := range g.Len() {
		cases = append(cases, rn.Run(faults.Schedule{{Kind: faults.Upgrade, Beat: k}}))
	}
	return cases
}

// The reference agent gains a step: deployed at any beat, the new version finishes the run as
// if it had run from the start, with every effect applied once.
func TestReferenceAgentGainingAStepSurvivesTheDeploy(t *testing.T) {
	for _, c := range upgradeCases(t, reference.Correct) {
		if c.Verdict.Outcome != oracle.Pass {
			t.Errorf("%s", c)
		}
	}
}
