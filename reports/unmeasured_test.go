package reports_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/reports"
)

// A target that makes no progress marks has its work lost not measured: every rendering says
// so rather than show 0.00, and a gate on work lost fails saying it was not measured rather
// than hold for want of a measure; a baseline that measured it is regressed from. A target
// with marks shows its figures as before.
func TestWorkLostNotMeasured(t *testing.T) {
	c := func(target, schedule string, lost int, unmeasured bool) reports.Case {
		s := faults.MustParseSchedule(schedule)
		return reports.Case{Target: target, ID: target + ":" + schedule, Schedule: s, Verdict: oracle.Pass, Violations: []oracle.Violation{},
			Metrics: oracle.Metrics{WorkLostBeats: lost, WorkLostUnmeasured: unmeasured}}
	}
	rep := &reports.Report{Schema: reports.Schema, Seed: 1, Options: reports.Options{Targets: []string{"nomarks", "marks"}, Mode: "exhaustive", Faults: []string{"kill"}},
		Cases: []reports.Case{c("nomarks", "kill@0", 0, true), c("nomarks", "kill@1", 0, true), c("marks", "kill@0", 2, false), c("marks", "kill@1", 3, false)}}
	rep.Cases[1].Index, rep.Cases[3].Index = 1, 1
	if err := rep.Summarize(map[string]int{"nomarks": 2, "marks": 2}); err != nil {
		t.Fatal(err)
	}
	nomarks, marks := rep.Summary.Targets[0], rep.Summary.Targets[1]
	if nomarks.WorkLostMeasured() || nomarks.WorkLostUnmeasured != 2 || !marks.WorkLostMeasured() || marks.WorkLostBeatsMean != 2.5 {
		t.Fatalf("summaries: %+v / %+v", nomarks.Stats, marks.Stats)
	}
	var md, html, junit bytes.Buffer
	if err := rep.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	if err := rep.HTML(&html); err != nil {
		t.Fatal(err)
	}
	if err := rep.JUnit(&junit); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"Markdown": md.String(), "HTML": html.String()} {
		if !strings.Contains(out, "| nomarks | 2 | 2 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | not measured |") && !strings.Contains(out, `<td class="num">not measured</td>`) {
			t.Errorf("%s does not say nomarks's work lost is not measured:\n%s", name, out)
		}
		if !strings.Contains(out, "2.50") {
			t.Errorf("%s does not show marks's mean work lost, 2.50", name)
		}
	}
	if !strings.Contains(junit.String(), `<testsuite name="nomarks" tests="2" failures="0" errors="0" skipped="0" time="0.000">
    <properties>
      <property name="work_lost_beats_mean" value="not measured: its cases made no progress marks"></property>
    </properties>`) || strings.Count(junit.String(), "<properties>") != 1 {
		t.Errorf("JUnit does not say nomarks's work lost is not measured, or says it of marks:\n%s", junit.String())
	}

	g, err := reports.ParseGate("work_lost_beats_mean<=3, duplicates==0", rep.Options)
	if err != nil {
		t.Fatal(err)
	}
	_, failures := g.Check(rep)
	if len(failures) != 2 || !strings.HasPrefix(failures[0], "nomarks: work_lost_beats_mean was not measured: its cases made no progress marks") ||
		!strings.HasPrefix(failures[1], "nomarks [kill]: work_lost_beats_mean was not measured") {
		t.Errorf("the gate's failures: %q, want nomarks's work lost not measured, twice, and nothing of marks", failures)
	}

	base := &reports.Report{Schema: reports.Schema, Seed: 1, Options: rep.Options, Cases: []reports.Case{c("nomarks", "kill@0", 1, false), c("marks", "kill@0", 2, false)}}
	base.Summarize(nil)
	var lines []string
	for _, r := range reports.Compare(base, rep, reports.CompareOptions{}) {
		lines = append(lines, r.String())
	}
	if got := strings.Join(lines, "\n"); !strings.Contains(got, "nomarks: work_lost_beats_mean 1 → not measured (no progress marks)") {
		t.Errorf("against a baseline that measured it: %s", got)
	}
}
