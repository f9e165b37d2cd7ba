package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/oracle"
)

// A target refused as not deterministic still gets its report directory, so that a CI step
// that publishes it finds why: one unknown case, its golden run, with the first difference of
// the two golden runs and the command that shows it again; the exit code stays 3.
func TestRefusedTargetWritesItsReport(t *testing.T) {
	_, child := built(t)
	dir := filepath.Join(t.TempDir(), "report")
	// Noise in the state directory, new every run: the golden runs leave different states.
	noisy := `sh -c 'head -c 8 /dev/urandom > "$CHAOSKIT_STATE_DIR/noise"; exec "$0" -mode correct' ` + child
	code, out, errs := chaoskit(t, "run", "--exec", noisy, "--name", "noisy", "--tool", "create_po=idempotent,latency=1s",
		"--tool", "check=idempotent,async=10m", "--out", dir)
	if code != exitUnknown || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "noisy: target is not deterministic: two golden runs left different states") {
		t.Fatalf("exit %d, want 3 and one line of stderr saying why\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	for _, name := range []string{"report.json", "summary.md", "junit.xml", "report.html"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	rep := loadDir(t, dir)
	if len(rep.Cases) != 1 || len(rep.Summary.Targets) != 1 || rep.Summary.Targets[0].Unknown != 1 {
		t.Fatalf("want one unknown case, got %+v", rep.Cases)
	}
	c := rep.Cases[0]
	if c.Target != "noisy" || c.ID != "noisy:" || len(c.Schedule) != 0 || c.Verdict != oracle.Unknown ||
		!strings.HasPrefix(c.Reason, "target is not deterministic: two golden runs left different states") {
		t.Errorf("case %+v", c)
	}
	wantIn(t, "stdout", out, "UNDECIDED: unknown ×1", "noisy : unknown: target is not deterministic", "--schedule ''")
	replay, err := splitCommand(c.Repro)
	if err != nil || len(replay) < 2 || replay[0] != "chaoskit" {
		t.Fatalf("repro %q: %v", c.Repro, err)
	}
	code, _, errs = chaoskit(t, replay[1:]...)
	if code != exitUnknown || !strings.Contains(errs, "target is not deterministic") {
		t.Errorf("%s: exit %d, want 3 saying why: %s", c.Repro, code, errs)
	}
}
