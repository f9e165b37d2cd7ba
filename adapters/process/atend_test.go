package process_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/adapters/process"
	"github.com/chaoskit/chaoskit/adapters/process/fusefs"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/internal/needs"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
)

// A Python harness that does its step and writes its final result, report.json, without an
// fsync, and exits 0, loses it to a power cut after its end (power@end), on a FUSE disk, and
// fails same-state; the same harness fsyncing the file and its directory passes. Before
// power@end every power case of the first passed: the write after the last beat was never cut.
func TestPowerAfterTheEndOfAProcess(t *testing.T) {
	needs.Err(t, fusefs.Available())
	client, _ := filepath.Abs("python")
	script := `import os, sys; sys.path.insert(0, sys.argv[1]); import chaoskit
d = os.environ["CHAOSKIT_STATE_DIR"]
if sys.argv[2] == "state":
    try:
        print(open(os.path.join(d, "report.json")).read())
    except FileNotFoundError:
        print('"no report"')
    sys.exit(0)
ck = chaoskit.connect()
ck.call("create_po", {"usd": 100}, key="po-1")
ck.mark("filed")
with open(os.path.join(d, "report.json"), "w") as f:
    f.write('{"po": "filed"}')
    if sys.argv[2] == "fsync":
        f.flush(); os.fsync(f.fileno())
if sys.argv[2] == "fsync":
    fd = os.open(d, os.O_RDONLY); os.fsync(fd); os.close(fd)
ck.done("ok")`
	argv := func(mode string) []string { return []string{pythonExe(t), "-S", "-B", "-c", script, client, mode} }
	end := faults.Schedule{{Kind: faults.Power, Beat: faults.End}}
	for _, tc := range []struct {
		mode string
		want oracle.Outcome
	}{{"nofsync", oracle.Fail}, {"fsync", oracle.Pass}} {
		target := process.Target{Argv: argv(tc.mode), StateArgv: argv("state"), ToolList: tools, Disk: process.FUSE}
		rn, err := sim.NewRunner(harness.Fresh(target), sim.Options{Name: tc.mode})
		if err != nil {
			t.Fatal(err)
		}
		c := rn.Run(end)
		if c.Verdict.Outcome != tc.want || tc.want == oracle.Fail && !c.Breaks(oracle.SameState) {
			t.Errorf("%s under power@end: %s, want %s:\n%s", tc.mode, c.Verdict.Outcome, tc.want, c)
		}
		if tc.want == oracle.Fail && !strings.Contains(c.Verdict.Diff, "no report") {
			t.Errorf("%s: the state read back after the power cut should have no report: %s", tc.mode, c.Verdict.Diff)
		}
	}
}
