package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/oracle"
)

// --fs-model chooses what a power loss keeps, the report records it, each failure's replay
// command repeats it, and a replay from the report uses it: the variant that fsyncs no directory
// fails under posix and passes under ext4-ordered, whose fsync of a file commits the renames
// before it; the variant that fsyncs nothing fails under both.
func TestRunFSModel(t *testing.T) {
	dir := t.TempDir()
	run := func(target, model string) (int, string) {
		out := filepath.Join(dir, strings.ReplaceAll(target, "/", "-")+"-"+model)
		code, stdout, errOut := chaoskit(t, "run", "--target", target, "--faults", "power", "--fs-model", model, "--format", "json", "--out", out)
		if code != exitOK && code != exitFail {
			t.Fatalf("%s under %s: exit %d: %s%s", target, model, code, stdout, errOut)
		}
		return code, out
	}
	for _, tc := range []struct {
		target      string
		posix, ext4 int
	}{
		{"reference/no-dirsync", exitFail, exitOK},
		{"reference/no-fsync", exitFail, exitFail},
	} {
		if code, _ := run(tc.target, "posix"); code != tc.posix {
			t.Errorf("%s under posix: exit %d, want %d", tc.target, code, tc.posix)
		}
		if code, _ := run(tc.target, "ext4-ordered"); code != tc.ext4 {
			t.Errorf("%s under ext4-ordered: exit %d, want %d", tc.target, code, tc.ext4)
		}
	}
	_, out := run("reference/no-fsync", "ext4-ordered")
	rep := loadDir(t, out)
	if rep.Options.FSModel != "ext4-ordered" {
		t.Fatalf("report options record fs_model %q, want ext4-ordered", rep.Options.FSModel)
	}
	var failed string
	for _, c := range rep.Cases {
		if c.Verdict == oracle.Fail {
			failed = c.ID
			if !strings.HasSuffix(c.Repro, " --fs-model ext4-ordered") {
				t.Fatalf("case %s replays with %q, which does not name the model", c.ID, c.Repro)
			}
			break
		}
	}
	code, stdout, errOut := chaoskit(t, "replay", "--case", failed, out)
	if code != exitFail || !strings.Contains(stdout, "reproduces the report's verdict: fail") {
		t.Fatalf("replay --case %s: exit %d\n%s%s", failed, code, stdout, errOut)
	}
	// A campaign of another model is another campaign: resuming it with the other model, or
	// gating one against a baseline of the other, is refused.
	code, _, errOut = chaoskit(t, "run", "--resume", out, "--fs-model", "posix")
	if code != exitUsage || !strings.Contains(errOut, "--fs-model posix differs from the campaign journaled in") {
		t.Errorf("resume under another model: exit %d, stderr %q", code, errOut)
	}
	_, posixOut := run("reference/no-fsync", "posix")
	code, _, errOut = chaoskit(t, "gate", "--baseline", filepath.Join(posixOut, "report.json"), out)
	if code != exitUsage || !strings.Contains(errOut, "filesystem model ext4-ordered, not posix") {
		t.Errorf("gate against a baseline of another model: exit %d, stderr %q", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(out, "report.json")); err != nil {
		t.Fatal(err)
	}
}
