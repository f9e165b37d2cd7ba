package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/reports"
)

// How a test runner drives a campaign: --list prints the cases run would run, in its order;
// --only runs some of them, and --stream prints each as it finishes, as report.json holds it;
// the report directory holds those cases.
func TestListOnlyStream(t *testing.T) {
	full := loadDir(t, campaignDir(t, actThenSave...).dir)
	code, out, errs := chaoskit(t, append([]string{"run", "--list"}, actThenSave...)...)
	if code != exitOK || errs != "" {
		t.Fatalf("--list: exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(full.Cases) {
		t.Fatalf("--list printed %d cases, run ran %d", len(lines), len(full.Cases))
	}
	var some []string
	for i, line := range lines {
		var l campaign.Listed
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("line %d: %v: %s", i+1, err, line)
		}
		if c := full.Cases[i]; !reflect.DeepEqual(l, campaign.Listed{Target: c.Target, ID: c.ID, Index: c.Index, Schedule: c.Schedule}) {
			t.Fatalf("line %d lists %+v, run's case %d is %s", i+1, l, i, c.ID)
		}
		if i%40 == 7 || full.Cases[i].Verdict == "fail" && len(some) < 4 { // failures too, with their traces
			some = append(some, l.ID)
		}
	}

	dir := filepath.Join(t.TempDir(), "some")
	args := append([]string{"run", "--stream", "--out", dir}, actThenSave...)
	for _, id := range some {
		args = append(args, "--only", id)
	}
	code, out, _ = chaoskit(t, args...)
	rep := loadDir(t, dir)
	var streamed []reports.Case
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var c reports.Case
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("--stream printed %q: %v", line, err)
		}
		streamed = append(streamed, c)
	}
	if len(rep.Cases) != len(some) || len(streamed) != len(some) {
		t.Fatalf("asked for %d cases: the report holds %d, --stream printed %d", len(some), len(rep.Cases), len(streamed))
	}
	failed := 0
	for i, c := range rep.Cases {
		want := full.Cases[c.Index]
		if c.ID != some[i] || c.Verdict != want.Verdict || c.Repro != want.Repro || c.Metrics != want.Metrics || len(c.Trace) != len(want.Trace) {
			t.Errorf("case %s: %+v\nin the whole campaign: %+v", some[i], c, want)
		}
		if c.Verdict == "fail" {
			failed++
		}
	}
	for _, c := range streamed {
		if want := full.Cases[c.Index]; c.ID != want.ID || c.Verdict != want.Verdict {
			t.Errorf("streamed %s %s, the campaign's case %d is %s %s", c.ID, c.Verdict, c.Index, want.ID, want.Verdict)
		}
	}
	if failed == 0 || code != exitFail {
		t.Errorf("exit %d with %d of the cases failed, want 1 and some", code, failed)
	}
	// The report says it holds the selected cases, not the campaign's, and names no fault kind
	// as left without a case; so does the text summary.
	if rep.Options.Only != len(some) || len(rep.Summary.Targets[0].NoCase) != 0 {
		t.Errorf("options.only %d, no_case %v; want %d and none", rep.Options.Only, rep.Summary.Targets[0].NoCase, len(some))
	}
	md, err := os.ReadFile(filepath.Join(dir, "summary.md"))
	if want := fmt.Sprintf("only the %d cases selected (chaoskit run --only), not the whole campaign", len(some)); err != nil || !strings.Contains(string(md), want) {
		t.Errorf("summary.md does not say %q:\n%s", want, md)
	}
	_, out, _ = chaoskit(t, append([]string{"run", "--out", filepath.Join(t.TempDir(), "one"), "--only", some[0]}, actThenSave...)...)
	if !strings.Contains(out, "note: the report holds only the 1 case --only selected, not the whole campaign") || strings.Contains(out, "no case of") {
		t.Errorf("the text summary of one selected case:\n%s", out)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--list", "--out", dir}, "--list runs no case and writes nothing: drop --out"},
		{[]string{"--only", "reference/act-then-save:kill@100000", "--out", dir}, `--only: no such case in the campaign: "reference/act-then-save:kill@100000"`},
		{[]string{"--stream", "--format", "text,json", "--out", dir}, "--stream prints the cases on stdout"},
		{[]string{"--resume", dir, "--only", some[0]}, "--resume continues the whole campaign: drop --only"},
	} {
		code, _, errs := chaoskit(t, append(append([]string{"run"}, tc.args...), actThenSave...)...)
		if code != exitUsage || !strings.Contains(errs, tc.want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", tc.args, code, errs, tc.want)
		}
	}
}

// --list says on stderr, one line each, what the campaign will decide nothing about: what run
// exits 3 for, and what the pytest plugin and the node:test helper turn into a failing test
// named undecided (they match the line's start, "chaoskit: nothing will be decided").
func TestListSaysWhatWillBeUndecided(t *testing.T) {
	code, out, errs := chaoskit(t, "run", "--list", "--target", "reference", "--faults", "kill,torn", "--cases", "2")
	want := "chaoskit: nothing will be decided for reference under torn: it has no case of them (no beat of its golden run where they apply, or --cases 2 left them out)\n"
	if code != exitOK || errs != want || strings.Count(out, "\n") != 2 {
		t.Fatalf("exit %d, stderr %q, want %q; stdout:\n%s", code, errs, want, out)
	}
}
