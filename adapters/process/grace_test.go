package process_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/adapters/process"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
)

// chargesPy is a Python agent of four steps, each a charge (not idempotent), then its
// checkpoint (a temporary file, fsynced, renamed), then a pause of 10s. How it takes SIGTERM is
// its second argument: "default" leaves Python's default (it dies at once); "graceful" sets a
// flag, finishes the step in flight, checkpoints and exits 0 between steps, as a service stops
// on SIGTERM; "ignore" ignores it.
const chargesPy = `import os, signal, sys; sys.path.insert(0, sys.argv[1]); import chaoskit
asked = []
if sys.argv[2] == "graceful":
    signal.signal(signal.SIGTERM, lambda *_: asked.append(1))
elif sys.argv[2] == "ignore":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
ck = chaoskit.connect()
path = os.path.join(ck.state_dir, "done")
done = int(open(path).read()) if os.path.exists(path) else 0
for i in range(done, 4):
    if asked:
        print("SIGTERM: stopping after step", i)
        sys.exit(0)
    ck.call("charge", {"step": i})
    with open(path + ".tmp", "w") as f:
        f.write(str(i + 1))
        f.flush()
        os.fsync(f.fileno())
    os.rename(path + ".tmp", path)
    ck.mark("step %d" % i)
    ck.sleep(10)
ck.done("charged")`

// chargesCase runs chargesPy in mode, deployed again as its next version at the beat where the
// charge of its second step is applied (before the step's checkpoint), with grace as
// sim.Options.Grace. It returns the case and its notes, in beat order.
func chargesCase(t *testing.T, mode string, grace time.Duration) (*sim.Case, string) {
	t.Helper()
	dir, _ := filepath.Abs("python")
	target := func() harness.Target {
		return process.Target{Argv: []string{pythonExe(t), "-S", "-B", "-c", chargesPy, dir, mode},
			ToolList: []harness.Tool{{Name: "charge", Contract: harness.NotIdempotent}}}
	}
	rn, err := sim.NewRunner(target, sim.Options{Name: "charges-" + mode, NextVersion: target, Grace: grace, KeepBeats: true})
	if err != nil {
		t.Fatal(err)
	}
	g, err := rn.Golden(nil)
	if err != nil {
		t.Fatal(err)
	}
	var applied []int // the beats where a charge is applied
	for k := range g.Len() {
		if g.Beat(k).Kind == sim.BeatToolApplied {
			applied = append(applied, k)
		}
	}
	if len(applied) < 2 {
		t.Fatalf("the golden run applied %d charges, want 4", len(applied))
	}
	c := rn.Run(faults.Schedule{{Kind: faults.Upgrade, Beat: applied[1]}})
	var notes strings.Builder
	for i := range c.Beats {
		if n := c.Notes[i]; n != "" {
			fmt.Fprintf(&notes, "%d: %s\n", i, n)
		}
	}
	return c, notes.String()
}

// A deploy sends the command a real SIGTERM. Python's default dies of it with the charge applied
// and not checkpointed, and the next version charges again; the agent that finishes its step
// and exits passes; the one that ignores it is killed at the end of the grace period, in its
// pause after the last checkpoint it made, having run on meanwhile. (Without a grace period a
// deploy kills at once, as before: sim's TestDeployWithoutGraceDuplicatesTheStepInFlight.)
func TestDeploySendsSIGTERM(t *testing.T) {
	for _, tc := range []struct {
		mode    string
		wall    bool // the command runs on the wall clock, started without the tracer
		outcome oracle.Outcome
		notes   []string
	}{
		{"default", true, oracle.Fail, []string{"asked to stop (SIGTERM), killed if still running in 30s",
			"process 0 stopped within the deploy's grace period (failed: killed by signal terminated)"}},
		{"graceful", false, oracle.Pass, []string{"process 0 stopped within the deploy's grace period (ended without an error)", "process 1 completed"}},
		{"ignore", false, oracle.Pass, []string{"process 0 killed (SIGKILL): still running at the end of the 30s grace period of upgrade@"}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			if tc.wall {
				defer process.UntrappedClocks()()
			}
			c, notes := chargesCase(t, tc.mode, 0)
			if c.Verdict.Outcome != tc.outcome || (tc.outcome == oracle.Fail) != c.Verdict.Metrics.Duplicated {
				t.Errorf("want %s, duplicated only if it fails; got %s", tc.outcome, c)
			}
			for _, want := range tc.notes {
				if !strings.Contains(notes, want) {
					t.Errorf("the notes do not say %q:\n%s", want, notes)
				}
			}
			marks := map[int]int{} // by process, from the fault on
			for _, b := range c.Beats[c.Schedule[0].Beat:] {
				if b.Kind == sim.BeatMark {
					marks[b.Process]++
				}
			}
			if tc.mode == "ignore" && (marks[0] != 3 || marks[1] != 0) {
				t.Errorf("marks after the fault by process: %v; want the old version to run on through the last step", marks)
			}
		})
	}
}
