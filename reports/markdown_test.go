package reports

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/oracle"
)

func renderMarkdown(t *testing.T, r *Report) string {
	t.Helper()
	var b bytes.Buffer
	if err := r.Markdown(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// cellSeparator matches a "|" that ends a table cell: one not escaped by a backslash.
var cellSeparator = regexp.MustCompile(`(^|[^\\])\|`)

func TestMarkdownTables(t *testing.T) {
	r := demoReport(t)
	md := renderMarkdown(t, r)
	if !strings.HasPrefix(md, "# chaoskit report\n") {
		t.Errorf("Markdown does not start with its heading:\n%.200s", md)
	}
	rows := 0
	for line := range strings.Lines(md) {
		if !strings.HasPrefix(line, "| ") {
			continue
		}
		rows++
		// Each row of either table has as many cells as its header; a "|" inside a cell would
		// add one.
		cells := len(cellSeparator.FindAllString(strings.TrimSuffix(line, "\n"), -1)) - 1
		if cells != len(targetColumns) && cells != len(kindColumns) {
			t.Errorf("table row with %d cells: %q", cells, line)
		}
	}
	// A header and a rule for each table, a row per target and a row per fault kind.
	if want := 4 + len(r.Summary.Targets) + len(mustView(t, r).kinds); rows != want {
		t.Errorf("tables have %d rows, want %d", rows, want)
	}
	if !strings.Contains(md, `| weird\|\<b\>&"target" | `) {
		t.Errorf("the nasty target's row is not escaped as expected")
	}
}

func TestMarkdownFailures(t *testing.T) {
	r := demoReport(t)
	md := renderMarkdown(t, r)
	_, failures, ok := strings.Cut(md, "\n## Failures\n")
	if !ok {
		t.Fatal("no Failures section")
	}
	sections := strings.Split(failures, "\n### ")[1:]
	withProblems := 0
	for _, ts := range mustView(t, r).targets {
		if len(ts.Problems) > 0 {
			withProblems++
		}
	}
	if len(sections) != withProblems {
		t.Fatalf("%d target sections under Failures, want %d", len(sections), withProblems)
	}
	for _, s := range sections {
		cases := strings.Count(s, "\n- `")
		replays := strings.Count(s, "\n  replay: `")
		if cases < 1 || cases > markdownCasesPerTarget || replays != cases {
			t.Errorf("section lists %d cases and %d replay commands:\n%s", cases, replays, s)
		}
		if cases == markdownCasesPerTarget && !strings.Contains(s, "\n- … and ") {
			t.Errorf("a full section does not say how many more there are:\n%s", s)
		}
	}
	if !strings.Contains(md, "- `kill@8` — "+mdText("same-state: a | pipe, <script>alert(1)</script> & ]]> and a \x01 control")+"\\\n") {
		t.Errorf("the nasty violation is not listed escaped")
	}
	if !strings.Contains(md, "replay: ``chaoskit replay --target '"+nastyTarget+"' --note `x` --schedule kill@8``") {
		t.Errorf("a repro command holding a backtick is not fenced with two")
	}
}

func TestMarkdownAllPassed(t *testing.T) {
	r := &Report{Schema: Schema, Options: Options{Mode: "random", Faults: []string{"kill"}}, Cases: []Case{
		{Target: "t", Schedule: faults.MustParseSchedule("kill@1"), Verdict: oracle.Pass, Repro: "chaoskit replay"},
	}}
	r.Summarize(nil)
	if md := renderMarkdown(t, r); !strings.Contains(md, "None: every case passed.") {
		t.Errorf("a report with no failure does not say so:\n%s", md)
	}
}

func TestMdCode(t *testing.T) {
	for in, want := range map[string]string{
		"kill@1":       "`kill@1`",
		"a `b` c":      "``a `b` c``",
		"`x`":          "`` `x` ``",
		"two\nlines":   "`two lines`",
		"a ``` b ` c ": "````a ``` b ` c ````",
	} {
		if got := mdCode(in); got != want {
			t.Errorf("mdCode(%q) = %q, want %q", in, got, want)
		}
	}
}

// A failure of a random campaign shows its shrunk schedule before the schedule as found, with the
// command that replays it; the notes say what was not checked.
func TestMarkdownShrunkAndNotes(t *testing.T) {
	md := renderMarkdown(t, randomReport(t))
	for _, want := range []string{
		"**1500 cases over 1 target: 1493 passed (0 detected), 7 failed, 0 unknown**",
		"- `kill@7,lease@107+2h` — same-result: the result differs from the golden run's (-golden +faulty): State{; - Entry0: \"old\",; + Entry0: \"new\",; - Entry1: \"old\",; + Entry1: \"new\",; - Entry2: \"old\",; + Entry2: \"new\",; - Entry3: \"old\",; and 40 more lines (+1 more)\\\n" +
			"  **shrunk to `power@7`**, which still breaks same-result; replay it: `chaoskit replay --target agent --seed 3 --schedule 'power@7'`\\\n" +
			"  replay: `chaoskit replay --target agent --seed 3 --schedule 'kill@7,lease@107+2h'`\n",
		"replay it: `go test ./orders -run '^TestOrders$' -chaoskit.schedule='power@27'`",
		"\nNot checked, and other notes:\n\n- agent: bounded-work-lost not checked in 16 of 1500 cases: ",
		"; same-result, same-state not checked in 15 of 1500 cases: the run did not complete; 1 case had a fault that never fired",
		"; 2 processes ended on their own with an error or a panic\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the summary lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(renderMarkdown(t, demoReport(t)), "Not checked, and other notes") {
		t.Error("a report with nothing to note has notes")
	}
}
