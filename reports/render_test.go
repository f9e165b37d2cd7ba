package reports

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/oracle"
)

func TestProblemsOrder(t *testing.T) {
	fail := func(schedule, property string) *Case {
		return &Case{Schedule: faults.MustParseSchedule(schedule), Verdict: oracle.Fail, Violations: []oracle.Violation{{Property: property}}}
	}
	cases := []*Case{
		{Schedule: faults.MustParseSchedule("kill@0"), Verdict: oracle.Pass},
		{Schedule: faults.MustParseSchedule("kill@1"), Verdict: oracle.Unknown},
		fail("kill@2", "same-state"),
		fail("kill@3", "same-state"),
		fail("power@3", "same-state"),
		fail("kill@4", "no-duplicate-effects"),
		{Schedule: faults.MustParseSchedule("kill@5"), Verdict: oracle.Unknown},
	}
	var got []string
	for _, c := range problems(cases) {
		got = append(got, c.Schedule.String())
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

// The campaign line says how many schedules a campaign capped with Options.Cases ran per
// target: drawn at random, or sampled from each target's exhaustive list, of how many.
func TestCampaignLineSaysOfHowMany(t *testing.T) {
	report := func(mode string, schedules ...int) *Report {
		r := &Report{Seed: 1, Options: Options{Mode: mode, Cases: 80}}
		for i, n := range schedules {
			r.Summary.Targets = append(r.Summary.Targets, TargetSummary{Target: fmt.Sprint("t", i), Schedules: n})
		}
		return r
	}
	for _, tc := range []struct {
		r    *Report
		want string
	}{
		{report("random", 0), "seed 1 · mode random · 80 schedules per target"},
		{report("exhaustive", 698), "seed 1 · mode exhaustive · 80 of 698 schedules, sampled evenly"},
		{report("exhaustive", 698, 698), "seed 1 · mode exhaustive · 80 of 698 schedules per target, sampled evenly"},
		{report("exhaustive", 698, 0, 1203, 311), "seed 1 · mode exhaustive · at most 80 schedules per target, sampled evenly from lists of 698, 1203 and 311"},
		{report("exhaustive", 0), "seed 1 · mode exhaustive · at most 80 schedules per target"},
	} {
		if got := tc.r.campaignLine(); got != tc.want {
			t.Errorf("campaignLine = %q, want %q", got, tc.want)
		}
	}
}

func TestHeadline(t *testing.T) {
	for _, tc := range []struct {
		c    Case
		want string
	}{
		{Case{Verdict: oracle.Fail, Violations: []oracle.Violation{{Property: "same-state", Detail: "\n  differs:\n-a\n+b"}}}, "same-state: differs: -a; +b"},
		{Case{Verdict: oracle.Fail, Violations: []oracle.Violation{{Property: "same-result", Detail: "the result differs (-golden +faulty):\n" +
			strings.Repeat("x", 200) + "\n" + strings.Repeat("-y\n", 40)}}}, "same-result: the result differs (-golden +faulty): " + strings.Repeat("x", 200) + "; and 40 more lines"},
		{Case{Verdict: oracle.Fail, Violations: []oracle.Violation{{Property: "same-result", Detail: "differs:\n" + strings.Repeat("-y\n", 60)}}},
			"same-result: differs: -y" + strings.Repeat("; -y", 39) + "; and 20 more lines"},
		{Case{Verdict: oracle.Fail, Violations: []oracle.Violation{{Property: "p", Detail: strings.Repeat("long ", 100) + "\nnext"}}}, "p: " + strings.Repeat("long ", 99) + "long"},
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

func TestPlural(t *testing.T) {
	for _, tc := range []struct {
		n          int
		noun, want string
	}{
		{0, "target", "0 targets"}, {1, "target", "1 target"}, {2, "target", "2 targets"},
		{1, "comparison", "1 comparison"}, {3, "comparison", "3 comparisons"},
		{1, "property", "1 property"}, {2, "property", "2 properties"}, {2, "key", "2 keys"},
		{1, "process", "1 process"}, {5, "process", "5 processes"}, {2, "match", "2 matches"},
	} {
		if got := Count(tc.n, tc.noun); got != tc.want {
			t.Errorf("Count(%d, %q) = %q, want %q", tc.n, tc.noun, got, tc.want)
		}
	}
}

// A case shows the replay command of its shrunk schedule, which the campaign wrote, only when
// the shrunk schedule is not the schedule itself.
func TestShrunkRepro(t *testing.T) {
	c := &Case{Schedule: faults.MustParseSchedule("kill@1,kill@9"), Shrunk: faults.MustParseSchedule("kill@1"),
		Repro: "chaoskit replay --target t --seed 1 --schedule 'kill@1,kill@9'", ShrunkRepro: "chaoskit replay --target t --seed 1 --schedule 'kill@1'"}
	if got := shrunkRepro(c); got != c.ShrunkRepro {
		t.Errorf("shrunkRepro = %q", got)
	}
	for _, c := range []*Case{{Schedule: faults.MustParseSchedule("kill@1"), Shrunk: faults.MustParseSchedule("kill@1"), ShrunkRepro: c.Repro}, {Schedule: faults.MustParseSchedule("kill@1"), Repro: c.Repro}} {
		if got := shrunkRepro(c); got != "" {
			t.Errorf("a case not shrunk further has a shrunk replay command %q", got)
		}
	}
}

func TestTargetNotes(t *testing.T) {
	got := targetNotes(mustView(t, randomReport(t)).targets[0])
	want := []string{
		"bounded-work-lost not checked in 16 of 1500 cases: the target made no progress marks (mark each durable step: Env.Mark in Go, mark in the process clients) (15), a corruption destroyed durable progress, so redoing work is expected (1)",
		"same-result, same-state not checked in 15 of 1500 cases: the run did not complete",
		"1 case had a fault that never fired (judged on the faults that fired)",
		"1 case passed by refusing to go on without a person (a refusal where no tool call was in doubt, after a power cut or a torn write, usually hides durable state the harness lost: --gate refused==0 fails them)",
		"2 processes ended on their own with an error or a panic",
	}
	if !slices.Equal(got, want) {
		t.Errorf("targetNotes =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := targetNotes(mustView(t, demoReport(t)).targets[0]); len(got) != 0 {
		t.Errorf("a target with nothing to note has notes %q", got)
	}
}

func TestHeadlines(t *testing.T) {
	r := randomReport(t)
	v := mustView(t, r)
	total, targets := v.totals, v.targets
	if got, want := failedLine(&total, targets, nil), "7 cases failed across 1 target"; got != want {
		t.Errorf("failedLine = %q, want %q", got, want)
	}
	if got, want := totalsLine(&total, len(targets)), "1500 cases over 1 target: 1493 passed (0 detected), 7 failed, 0 unknown"; got != want {
		t.Errorf("totalsLine = %q, want %q", got, want)
	}
	if got, want := verdictLine(&targets[0].Stats), "7 of 1500 cases failed (same-result ×7, same-state ×7)"; got != want {
		t.Errorf("verdictLine = %q, want %q", got, want)
	}
	demo := demoReport(t)
	v = mustView(t, demo)
	total, targets = v.totals, v.targets
	if got := failedLine(&total, targets, nil); !regexp.MustCompile(`^\d+ cases failed across 7 of 9 targets; \d+ could not be decided$`).MatchString(got) {
		t.Errorf("failedLine of the demo = %q", got)
	}
	if got := verdictLine(&targets[0].Stats); got != "all 245 cases passed" {
		t.Errorf("verdictLine of a target that passed = %q", got)
	}
}

// With the targets meant to fail named, the headline counts their failures apart: a demo whose
// variants fail as they should does not read as a campaign gone wrong.
func TestHeadlineOfTargetsMeantToFail(t *testing.T) {
	views := func(failed ...int) ([]*targetView, *Stats) {
		var out []*targetView
		var total Stats
		for i, f := range failed {
			out = append(out, &targetView{TargetSummary: TargetSummary{Target: fmt.Sprint("t", i), Stats: Stats{Cases: 100, Failed: f, Passed: 100 - f}}})
			total.Cases, total.Failed = total.Cases+100, total.Failed+f
		}
		return out, &total
	}
	for _, tc := range []struct {
		failed []int
		expect []string
		want   string
	}{
		{[]int{0, 40, 3}, []string{"t1", "t2"}, "43 cases failed across 2 of 3 targets, all of them in the 2 targets meant to fail (each carries a bug on purpose); the other target, meant to pass, failed none"},
		{[]int{0, 0, 40, 3}, []string{"t2", "t3"}, "43 cases failed across 2 of 4 targets, all of them in the 2 targets meant to fail (each carries a bug on purpose); the 2 other targets, meant to pass, failed none"},
		{[]int{5, 40, 3}, []string{"t1", "t2"}, "48 cases failed across 3 targets, 43 of them in the 2 targets meant to fail (each carries a bug on purpose) and 5 in targets meant to pass"},
		{[]int{0, 40, 0}, []string{"t1", "t2"}, "40 cases failed across 1 of 3 targets, all of them in the 2 targets meant to fail (each carries a bug on purpose); the other target, meant to pass, failed none; 1 of the 2 targets meant to fail failed no case"},
		{[]int{0, 40}, nil, "40 cases failed across 1 of 2 targets"},
	} {
		targets, total := views(tc.failed...)
		if got := failedLine(total, targets, tc.expect); got != tc.want {
			t.Errorf("failedLine(%v, expecting %v) =\n%s\nwant\n%s", tc.failed, tc.expect, got, tc.want)
		}
	}
}
