package process_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/adapters/process"
	"github.com/chaoskit/chaoskit/adapters/process/fusefs"
	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/internal/needs"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
)

// A real process on the FUSE disk under a disk full for a minute: the harness that exits with
// status 1 on ENOSPC, as most programs do, passes, its failed processes restarted by the
// supervisor until space is back; each way of getting a full disk wrong breaks the property it
// must (testdata/enospc/checkpoint.py). Two cases of each mode's campaign, taken evenly;
// TestDiskFullProcessesEveryCase (-tags campaigns) runs them all.
func TestDiskFullProcesses(t *testing.T) { diskFullProcesses(t, 2) }

// diskFullProcesses runs TestDiskFullProcesses with at most cases diskfull cases a mode (0: all).
func diskFullProcesses(t *testing.T, cases int) {
	needs.Err(t, fusefs.Available())
	for _, tc := range []struct {
		mode     string
		property string // "" for a pass
		detail   string
	}{
		{"exit", "", ""},
		{"swallow", oracle.SameState, "state"},
		{"spin", oracle.Completes, "spins: "},
		{"exit0", oracle.SameState, "state"},
		{"inplace", oracle.Completes, "fails every time after every fault has ended"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			script := "testdata/enospc/checkpoint.py"
			tg := process.Target{Argv: pythonArgv(t, script, tc.mode), StateArgv: pythonArgv(t, script, "--dump-state"), Disk: process.FUSE}
			rn, err := newRunner(t, tg, sim.Options{Name: "enospc " + tc.mode})
			if err != nil {
				t.Fatal(err)
			}
			cases, err := campaign.Explore(context.Background(), rn, campaign.Options{Faults: []faults.Kind{faults.DiskFull}, DiskFullFor: time.Minute, Cases: cases})
			if err != nil {
				t.Fatal(err)
			}
			caught, failed := 0, 0
			for _, c := range cases {
				failed += c.Verdict.Metrics.FailedProcesses
				switch {
				case tc.property == "" && c.Verdict.Outcome != oracle.Pass:
					t.Errorf("%s", c)
				case tc.property != "" && c.Breaks(tc.property):
					caught++
					if !strings.Contains(c.String(), tc.detail) {
						t.Errorf("%s does not say %q:\n%s", tc.property, tc.detail, c)
					}
				}
			}
			switch {
			case len(cases) == 0:
				t.Fatal("no diskfull case")
			case tc.property == "" && failed == 0:
				t.Errorf("%d cases passed, but no process failed on the full disk: the supervisor was not tested", len(cases))
			case tc.property != "" && caught == 0:
				t.Errorf("none of %d diskfull cases broke %s", len(cases), tc.property)
			}
			t.Logf("%s: %d cases, %d caught, %d failed processes", tc.mode, len(cases), caught, failed)
		})
	}
}
