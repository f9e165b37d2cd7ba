package process_test

import (
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/adapters/process"
	"github.com/chaoskit/chaoskit/adapters/process/fusefs"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/internal/needs"
	"github.com/chaoskit/chaoskit/sim"
)

// A Node program whose pool threads write two files at once on a FUSE disk, with a timer
// ticking, takes the same beats in every run: a request is held until the command is
// quiescent and requests held together run in their canonical order, one a quiescence apart,
// and a thread whose request the helper has not yet read is not taken for blocked (so the
// clock does not move past the timer while a write waits in the kernel's queue).
func TestFUSEConcurrentWritesTakeTheSameBeats(t *testing.T) {
	needs.Err(t, fusefs.Available())
	target := process.Target{Argv: []string{needNode(t), "testdata/fuse/two_writers.mjs"}, Disk: process.FUSE}
	defer noChaoskitMounts(t)
	var first string
	const runs = 2 // each runner makes two golden runs and compares them: four in all
	for i := range runs {
		rn, err := sim.NewRunner(harness.Fresh(target), sim.Options{Name: "two-writers"})
		if err != nil {
			t.Fatal(err)
		}
		g, _ := rn.Golden(nil)
		trace := strings.Join(g.Trace(), "\n")
		if i == 0 {
			first = trace
			for _, want := range []string{"fs.write a.json.tmp", "fs.write b.json.tmp", "fs.sync b.json.tmp", "fs.rename b.json.tmp -> b.json", "wait"} {
				if !strings.Contains(trace, want) {
					t.Fatalf("the golden trace lacks %q:\n%s", want, trace)
				}
			}
			t.Logf("%d beats", g.Len())
			continue
		}
		if trace != first {
			t.Fatalf("run %d took other beats than run 1:\n%s\n--- run 1:\n%s", i+1, trace, first)
		}
	}
}
