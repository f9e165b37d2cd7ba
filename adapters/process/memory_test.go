package process_test

import (
	"testing"

	"github.com/chaoskit/chaoskit/adapters/process"
	"github.com/chaoskit/chaoskit/faults"
)

// A campaign keeps, of what the state command printed for each case's disk, a digest, and the
// documents themselves only within a budget: its memory does not grow with its cases however
// large the state. (It kept every output, 1,024 of them at most: a state of 4 MiB over 74 cases
// took a campaign from 41 MB to 588 MB.) Here a harness whose every kill case ends with other
// files (a log of where each process started), under a state command printing 2 MiB, runs an
// exhaustive kill campaign of some forty cases; what the campaign leaves alive, its report
// dropped, is the golden run's document and the budget's, not the cases'.
// BenchmarkStateMemory measures the same at larger sizes.
func TestStateMemoryIsFlatInCases(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a campaign of forty cases with a state of 2 MiB")
	}
	cases, _, kept := stateCampaign(t, 2, process.Plain, []faults.Kind{faults.Kill}, 0)
	t.Logf("%d cases with a state of 2 MiB leave %.1f MiB alive", cases, kept)
	// The golden run's document (2 MiB) and the budget's (16 MiB); every output would be 2 MiB
	// a case, 60 MiB or more.
	if cases < 30 || kept > 24 {
		t.Errorf("%d cases with a state of 2 MiB leave %.1f MiB alive: want 30 or more, and at most 24 MiB", cases, kept)
	}
}
