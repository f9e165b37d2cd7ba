package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/spf13/afero"
)

// writeLines writes a journal of the given lines into a new report directory.
func writeLines(t *testing.T, lines ...string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(campaign.JournalPath(dir), []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// journalLines returns the lines of the journal of a finished run, newlines kept.
func journalLines(t *testing.T) []string {
	b, err := os.ReadFile(campaign.JournalPath(campaignDir(t, actThenSave...).dir))
	if err != nil {
		t.Fatal(err)
	}
	return strings.SplitAfter(string(b), "\n")
}

// run --resume refuses a journal it cannot read with one line naming the file and the line; it
// cuts a torn last line off, runs the rest, and writes the report an uninterrupted run writes.
func TestResumeOfDamagedJournals(t *testing.T) {
	lines := journalLines(t)
	head, c1, c2, c3 := lines[0], lines[1], lines[2], lines[3]
	for _, tc := range []struct {
		name  string
		lines []string
		want  string
	}{
		{"garbage line", []string{head, c1, "garbage\n", c3}, "line 3: not a case, yet cases follow it"},
		{"no header", []string{c1, c2}, "line 1: not a chaoskit journal header"},
		{"empty", nil, "empty"},
	} {
		dir := writeLines(t, tc.lines...)
		code, _, errOut := chaoskit(t, "run", "--resume", dir)
		if want := campaign.JournalPath(dir); code != exitUsage || !strings.Contains(errOut, want) || !strings.Contains(errOut, tc.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 naming %s and %q", tc.name, code, errOut, want, tc.want)
		}
	}

	dir := writeLines(t, head, c1, c2, c3[:40])
	if code, _, errOut := chaoskit(t, "run", "--resume", dir, "--format", "json"); code != exitFail {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	sameReport(t, filepath.Join(campaignDir(t, actThenSave...).dir, "report.json"), filepath.Join(dir, "report.json"))
	if st, err := campaign.ReadJournal(afero.NewOsFs(), campaign.JournalPath(dir)); err != nil || st.Len() != len(lines)-2 {
		t.Fatalf("the resumed journal: %v", err)
	}
}

// A journal whose cases are not those of the campaign (the target changed since) is refused.
func TestJournalOfAnotherTarget(t *testing.T) {
	lines := journalLines(t)
	id := regexp.MustCompile(`"id":"[^"]*"`)
	dir := writeLines(t, lines[0], id.ReplaceAllString(lines[1], `"id":"reference/act-then-save:kill@99999"`))
	code, _, errOut := chaoskit(t, "run", "--resume", dir)
	if code != exitUsage || !strings.Contains(errOut, "reference/act-then-save:kill@99999") || !strings.Contains(errOut, "did the target change") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}
