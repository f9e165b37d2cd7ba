package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/reports"
)

// A harness that never finishes is refused within its bound, with one line naming the bound and
// the flag that raises it, and leaves nothing behind; so is one that runs past its bound in
// virtual time.
func TestEndlessTargetIsRefusedWithinItsBound(t *testing.T) {
	command, child, tmp, scope := scoped(t)
	cmd := command("run", "--exec", child+" -mode endless", "--name", "endless", "--faults", "kill", "--max-beats", "5000", "--out", filepath.Join(tmp, "report"))
	out, err := cmd.CombinedOutput()
	want := "chaoskit: endless: the golden run did not finish within 5000 beats (--max-beats; it had reached 0s of virtual time): a harness that never ends, or one that needs a higher --max-beats\n"
	if code := cmd.ProcessState.ExitCode(); code != exitUsage || string(out) != want {
		t.Fatalf("exit %d (%v), output:\n%s\nwant exit %d and\n%s", code, err, out, exitUsage, want)
	}
	scope.Check(t)

	code, _, errOut := chaoskit(t, "run", "--target", "reference", "--max-virtual-time", "10h", "--out", filepath.Join(tmp, "reference"))
	want = "chaoskit: reference: the golden run did not finish within 10h0m0s of virtual time (--max-virtual-time; it had made 95 beats): a harness that never ends, or one that needs a higher --max-virtual-time\n"
	if code != exitUsage || errOut != want {
		t.Fatalf("exit %d, stderr %q, want exit %d and %q", code, errOut, exitUsage, want)
	}
}

// Bounds other than the defaults are in the report's options and in every replay command, a
// resume takes them from the journal (and refuses others), and replay --case uses them.
func TestBoundsAreRecorded(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "report")
	run := []string{"run", "--target", "reference", "--faults", "kill", "--cases", "2", "--max-beats", "400", "--max-virtual-time", "720h", "--out", dir, "--format", "json"}
	if code, _, errOut := chaoskit(t, run...); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	rep := loadDir(t, dir)
	var first *reports.Case
	rep.Each(func(c *reports.Case) error {
		if first == nil {
			first = c
		}
		return nil
	})
	if o := rep.Options; o.MaxBeats != 400 || o.MaxVirtualTime != "720h0m0s" || !strings.HasSuffix(first.Repro, " --max-beats 400 --max-virtual-time 720h0m0s") {
		t.Fatalf("options %+v, repro %q", o, first.Repro)
	}
	code, _, errOut := chaoskit(t, "run", "--resume", dir, "--max-beats", "500")
	if code != exitUsage || !strings.Contains(errOut, "--max-beats 500 differs from the campaign journaled in") {
		t.Fatalf("a resume with another bound: exit %d: %s", code, errOut)
	}
	code, out, errOut := chaoskit(t, "replay", "--case", first.ID, dir)
	if code != exitOK || !strings.Contains(out, "--max-beats 400 --max-virtual-time 720h0m0s") {
		t.Fatalf("replay --case: exit %d:\n%s%s", code, out, errOut)
	}
	code, _, errOut = chaoskit(t, "replay", "--case", first.ID, dir, "--max-beats", "100")
	if code != exitUsage || !strings.Contains(errOut, "did not finish within 100 beats (--max-beats") {
		t.Fatalf("replay --case under a lower bound: exit %d: %s", code, errOut)
	}
}
