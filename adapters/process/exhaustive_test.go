package process_test

import (
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
)

// passesEveryCase runs the exhaustive campaign of kinds over rn's target, fails the test for
// each case that does not pass, and returns how many cases ran and how many restarts they took.
func passesEveryCase(t *testing.T, rn *sim.Runner, kinds ...faults.Kind) (cases, restarts int) {
	t.Helper()
	for _, c := range explore(t, rn, kinds...) {
		if c.Verdict.Outcome != oracle.Pass {
			t.Errorf("%s", c)
		}
		cases++
		restarts += c.Verdict.Metrics.Restarts
	}
	return cases, restarts
}

// caughtUnder runs the exhaustive campaign of kinds over rn's target and returns the schedules
// of the cases that break property, in order, separated by spaces.
func caughtUnder(t *testing.T, rn *sim.Runner, property string, kinds ...faults.Kind) string {
	t.Helper()
	var caught []string
	for _, c := range explore(t, rn, kinds...) {
		if c.Breaks(property) {
			caught = append(caught, c.Schedule.String())
		}
	}
	return strings.Join(caught, " ")
}
