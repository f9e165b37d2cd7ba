package reports

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/oracle"
)

func TestProblemsOrder(t *testing.T) {
	fail := func(schedule, property string) *Case {
		return &Case{Schedule: schedule, Verdict: oracle.Fail, Violations: []oracle.Violation{{Property: property}}}
	}
	cases := []*Case{
		{Schedule: "kill@0", Verdict: oracle.Pass},
		{Schedule: "kill@1", Verdict: oracle.Unknown},
		fail("kill@2", "same-state"),
		fail("kill@3", "same-state"),
		fail("power@3", "same-state"),
		fail("kill@4", "no-duplicate-effects"),
		{Schedule: "kill@5", Verdict: oracle.Unknown},
	}
	var got []string
	for _, c := range problems(cases) {
		got = append(got, c.Schedule)
	}
	want := []string{"kill@2", "power@3", "kill@4", "kill@3", "kill@1", "kill@5"}
	if !slices.Equal(got, want) {
		t.Errorf("problems order = %v, want %v", got, want)
	}
}

func TestNiceScale(t *testing.T) {
	for _, tc := range []struct{ v, top, step int }{
		{0, 1, 1}, {1, 1, 1}, {5, 5, 1}, {7, 8, 2}, {10, 10, 2}, {11, 15, 5}, {90, 100, 20}, {341, 400, 100}, {2293, 2500, 500},
	} {
		if top, step := niceScale(tc.v); top != tc.top || step != tc.step {
			t.Errorf("niceScale(%d) = %d, %d; want %d, %d", tc.v, top, step, tc.top, tc.step)
		}
	}
}

func TestHeadline(t *testing.T) {
	for _, tc := range []struct {
		c    Case
		want string
	}{
		{Case{Verdict: oracle.Fail, Violations: []oracle.Violation{{Property: "same-state", Detail: "\n  differs:\n-a\n+b"}}}, "same-state: differs:"},
		{Case{Verdict: oracle.Fail, Violations: []oracle.Violation{{Property: "a", Detail: "x"}, {Property: "b"}, {Property: "c"}}}, "a: x (+2 more)"},
		{Case{Verdict: oracle.Unknown, Reason: "hung\nat beat 4"}, "unknown: hung"},
		{Case{Verdict: oracle.Unknown}, "unknown: no reason given"},
	} {
		if got := headline(&tc.c); got != tc.want {
			t.Errorf("headline = %q, want %q", got, tc.want)
		}
	}
}

// TestRenderersWithoutSummary checks that a report whose summary was never computed renders as
// if it had been.
func TestRenderersWithoutSummary(t *testing.T) {
	full := demoReport(t)
	bare := *full
	bare.Summary = Summary{}
	for name, render := range renderers {
		var want, got bytes.Buffer
		if err := render(full, &want); err != nil {
			t.Fatal(err)
		}
		if err := render(&bare, &got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(want.Bytes(), got.Bytes()) {
			t.Errorf("%s without a summary differs from %s with one", name, name)
		}
	}
}

// TestRenderersDeterministic checks that every renderer writes the same bytes each time.
func TestRenderersDeterministic(t *testing.T) {
	r := demoReport(t)
	for name, render := range renderers {
		var a, b bytes.Buffer
		if err := render(r, &a); err != nil {
			t.Fatal(err)
		}
		if err := render(r, &b); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Errorf("%s wrote different output for the same report", name)
		}
	}
}

var renderers = map[string]func(*Report, io.Writer) error{
	"Markdown": (*Report).Markdown,
	"JUnit":    (*Report).JUnit,
	"HTML":     (*Report).HTML,
}

// render renders r with one of the renderers, failing t on an error.
func render(t *testing.T, r *Report, with func(*Report, io.Writer) error) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := with(r, &b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// writeTemp writes data to a file of that name in a new temporary directory, returning its path.
func writeTemp(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// runTool runs an external program for at most a minute, returning what it printed.
func runTool(name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return exec.CommandContext(ctx, name, args...).CombinedOutput()
}
