package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/reports"
)

// chaoskit runs the command line in-process and returns its exit code and output.
func chaoskit(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// msField matches a wall-clock field of a report, to drop it before comparing.
var msField = regexp.MustCompile(`(?m)^\s*"[a-z_]*_ms": [0-9.e+-]+,?\n`)

func TestDemo(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := chaoskit(t, "demo", "--out", dir, "--seed", "7")
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"agent", "survived", "duplicates", "reference ", "passes every case", "reference/act-then-save", "caught: no-duplicate-effects", "every variant was caught"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	rep, err := reports.Load(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Seed != 7 || len(rep.Summary.Targets) != 9 || len(rep.Cases) < 1000 {
		t.Fatalf("seed %d, %d targets, %d cases", rep.Seed, len(rep.Summary.Targets), len(rep.Cases))
	}
	ref := rep.Summary.Targets[0]
	if ref.Target != "reference" || ref.Failed != 0 || ref.ByFault["power"].Cases == 0 {
		t.Errorf("reference summary %+v", ref)
	}
	for _, c := range rep.Cases {
		if c.Verdict == reports.Fail && (len(c.Violations) == 0 || !strings.HasPrefix(c.Repro, "chaoskit replay --target "+c.Target+" --seed 7 --schedule '"+c.Schedule+"'")) {
			t.Fatalf("case %s: violations %v repro %q", c.ID, c.Violations, c.Repro)
		}
	}

	// The same seed gives the same report, once the wall-clock fields are dropped.
	again := t.TempDir()
	if code, _, errOut := chaoskit(t, "demo", "--seed", "7", "--out", again); code != exitOK {
		t.Fatalf("second run: exit %d: %s", code, errOut)
	}
	a, _ := os.ReadFile(filepath.Join(dir, "report.json"))
	b, _ := os.ReadFile(filepath.Join(again, "report.json"))
	if msField.ReplaceAllString(string(a), "") != msField.ReplaceAllString(string(b), "") {
		t.Fatal("two demo runs with the same seed wrote different reports")
	}
	if !bytes.Contains(a, []byte(`"duration_ms"`)) {
		t.Fatal("the report has no wall-clock field to drop: the comparison proves nothing")
	}
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"demo", "--colour"}, "demo: -colour"},
		{[]string{"demo", "--seed", "x"}, `invalid value "x" for flag -seed`},
		{[]string{"demo", "extra"}, `demo takes no arguments, got "extra"`},
	} {
		code, _, errOut := chaoskit(t, tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) || strings.Count(errOut, "\n") > 1 {
			t.Errorf("chaoskit %v: exit %d, stderr %q; want exit 2 and one line containing %q", tc.args, code, errOut, tc.want)
		}
	}
}
