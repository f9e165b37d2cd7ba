package process_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/adapters/process"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
)

// turnsPy is a Python agent that makes no progress marks: three turns, each a model call and a
// tool call under a key stable per step. With RESUME it saves the turns done after each (a
// temporary file, fsynced, renamed) and starts from there; without, it starts over each time.
const turnsPy = `import os, sys; sys.path.insert(0, sys.argv[1]); import chaoskit
ck = chaoskit.connect()
path = os.path.join(ck.state_dir, "done")
done = 0
if sys.argv[2] == "resume" and os.path.exists(path):
    done = int(open(path).read())
for i in range(done, 3):
    text = ck.model("turn %d" % i, "file it")
    ck.call("create_po", {"what": text, "step": i}, key="step-%d" % i)
    with open(path + ".tmp", "w") as f:
        f.write(str(i + 1))
        f.flush()
        os.fsync(f.fileno())
    os.rename(path + ".tmp", path)
ck.done("filed")`

// A process target without marks gets work lost too: the agent that starts over re-asks the
// turns before the crash and fails bounded-work-lost; the one that resumes passes.
func TestWorkLostWithoutMarksInPython(t *testing.T) {
	dir, _ := filepath.Abs(".")
	for _, mode := range []string{"restart", "resume"} {
		t.Run(mode, func(t *testing.T) {
			target := process.Target{Argv: []string{pythonExe(t), "-S", "-B", "-c", turnsPy, filepath.Join(dir, "python"), mode}, ToolList: []harness.Tool{{Name: "create_po", Contract: harness.IdempotentByKey}}}
			rn, err := sim.NewRunner(harness.Fresh(target), sim.Options{Name: "turns-" + mode})
			if err != nil {
				t.Fatal(err)
			}
			g, err := rn.Golden(nil)
			if err != nil {
				t.Fatal(err)
			}
			failed := 0
			for _, k := range []int{1, g.Len() - 2} { // in the first turn, and in the last (every beat: sim's TestWorkLostWithoutMarks)
				c := rn.Run(faults.Schedule{{Kind: faults.Kill, Beat: k}})
				m := c.Verdict.Metrics
				switch {
				case m.WorkLostUnmeasured:
					t.Fatalf("kill@%d: work lost not measured", k)
				case mode == "resume" && c.Verdict.Outcome != oracle.Pass:
					t.Errorf("kill@%d of the resuming agent: %s", k, c)
				case c.Breaks(oracle.BoundedWorkLost):
					failed++
					if d := c.Verdict.Violations[0].Detail; !strings.Contains(d, `model call "turn 0"`) || m.WorkLostBeats < 3 {
						t.Errorf("kill@%d: %q, work lost %d beats", k, d, m.WorkLostBeats)
					}
				}
			}
			if mode == "restart" && failed == 0 {
				t.Errorf("no kill failed the agent that starts over")
			}
		})
	}
}
