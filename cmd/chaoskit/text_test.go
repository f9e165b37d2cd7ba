package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/reports"
)

// The text table shows work lost as unmeasured, not 0.00, for a target that makes no progress
// marks, and its mean for one that does.
func TestTextTableSaysWorkLostUnmeasured(t *testing.T) {
	rep := &reports.Report{Summary: reports.Summary{Targets: []reports.TargetSummary{
		{Target: "nomarks", Stats: reports.Stats{Cases: 3, Passed: 3, WorkLostUnmeasured: 3}},
		{Target: "marks", Stats: reports.Stats{Cases: 3, Passed: 3, WorkLostBeatsMean: 1.5}},
	}}}
	var b bytes.Buffer
	printTable(&b, rep, "target", func(*reports.TargetSummary) string { return "" })
	lines := strings.Split(b.String(), "\n")
	if !strings.Contains(lines[1], " unmeasured ") || strings.Contains(lines[1], "0.00") || !strings.Contains(lines[2], "1.50") {
		t.Errorf("the table:\n%s", b.String())
	}
}
