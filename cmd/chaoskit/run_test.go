package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/chaoskit/chaoskit/sim"
)

// The acceptance tests, in its order: a variant fails and the directory holds the five
// files; the reference agent passes; every failing case replays to its verdict; a baseline without
// duplicates gates a report with duplicates; the same seed gives the same report; shards merge
// into the unsharded report. (The SIGKILL test is in resume_test.go, bad input in
// badinput_test.go.)

func TestRunVariantFailsAndWritesEveryFile(t *testing.T) {
	f := campaignDir(t, actThenSave...)
	if f.code != exitFail {
		t.Fatalf("exit %d, want 1\n%s\n%s", f.code, f.out, f.errs)
	}
	for _, name := range []string{"report.json", "cases.jsonl", "summary.md", "junit.xml", "report.html"} {
		if fi, err := os.Stat(filepath.Join(f.dir, name)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
	if matches, _ := filepath.Glob(filepath.Join(f.dir, ".*")); len(matches) > 0 {
		t.Errorf("temporary files left behind: %v", matches)
	}
	rep := loadDir(t, f.dir)
	s := rep.Summary.Targets[0]
	if s.Target != "reference/act-then-save" || s.Failed == 0 || s.Duplicates == 0 || s.Violations["no-duplicate-effects"] == 0 {
		t.Fatalf("summary %+v", s)
	}
	if !slices.Equal(rep.Options.Targets, []string{"reference/act-then-save"}) || !slices.Equal(rep.Options.Faults, []string{"kill", "power"}) {
		t.Errorf("options %+v", rep.Options)
	}
	for i, c := range rep.Cases {
		if c.Index != i {
			t.Fatalf("case %d has index %d", i, c.Index)
		}
	}
	wantIn(t, "stdout", f.out, "reference/act-then-save", "FAILED: no-duplicate-effects", "chaoskit replay --target reference/act-then-save --seed 1 --schedule '")
	if want := "cases failed\n"; !strings.HasSuffix(f.errs, want) || strings.Count(f.errs, "\n") != 1 {
		t.Errorf("stderr %q, want one line ending %q", f.errs, want)
	}
	journal, _ := os.ReadFile(filepath.Join(f.dir, "cases.jsonl"))
	if n := strings.Count(string(journal), "\n"); n != len(rep.Cases)+1 {
		t.Errorf("the journal has %d lines for %d cases and a header", n, len(rep.Cases))
	}
}

func TestRunReferencePasses(t *testing.T) {
	f := campaignDir(t, "--target", "reference", "--faults", "kill,power", "--mode", "exhaustive")
	if f.code != exitOK || f.errs != "" {
		t.Fatalf("exit %d, want 0\n%s\n%s", f.code, f.out, f.errs)
	}
	if rep := loadDir(t, f.dir); rep.Summary.Targets[0].Passed != len(rep.Cases) || len(rep.Cases) < 100 {
		t.Fatalf("%d of %d cases passed", rep.Summary.Targets[0].Passed, len(rep.Cases))
	}
}

func TestReplayReproducesEveryFailure(t *testing.T) {
	f := campaignDir(t, actThenSave...)
	rep := loadDir(t, f.dir)
	report := filepath.Join(f.dir, "report.json")
	failures := 0
	for _, c := range rep.Cases {
		if c.Verdict != oracle.Fail {
			continue
		}
		failures++
		// From the report, with the flag after the report this time...
		code, out, errOut := chaoskit(t, "replay", report, "--case", c.ID)
		if code != exitFail || !strings.Contains(out, "reproduces the report's verdict: fail") || !strings.Contains(out, "violated "+c.Violations[0].Property) || errOut != "" {
			t.Fatalf("replay --case %s: exit %d\n%s%s", c.ID, code, out, errOut)
		}
		if !strings.Contains(out, ">>") || !strings.Contains(out, "<- "+c.Schedule.String()) {
			t.Errorf("replay --case %s does not mark the fault among the beats:\n%s", c.ID, out)
		}
		// ... and through the repro command the report stores, which must be exactly one.
		args := shellWords(t, c.Repro)
		if args[0] != "chaoskit" {
			t.Fatalf("repro %q", c.Repro)
		}
		if code, out, errOut := chaoskit(t, args[1:]...); code != exitFail || !strings.Contains(out, "violated "+c.Violations[0].Property) {
			t.Fatalf("%s: exit %d\n%s%s", c.Repro, code, out, errOut)
		}
	}
	if failures == 0 {
		t.Fatal("no failing case to replay")
	}
	// A passing case replays as a pass, exit 0.
	i := slices.IndexFunc(rep.Cases, func(c reports.Case) bool { return c.Verdict == oracle.Pass })
	if code, out, _ := chaoskit(t, "replay", "--case", rep.Cases[i].ID, f.dir); code != exitOK || !strings.Contains(out, ": pass") {
		t.Fatalf("replay of passing case %s: exit %d\n%s", rep.Cases[i].ID, code, out)
	}
}

// shellWords splits a command line as a POSIX shell would, for the single quotes that repro
// commands use.
func shellWords(t *testing.T, cmd string) []string {
	var words []string
	var word strings.Builder
	quoted, inWord := false, false
	for _, r := range cmd {
		switch {
		case r == '\'':
			quoted, inWord = !quoted, true
		case r == ' ' && !quoted:
			if inWord {
				words = append(words, word.String())
				word.Reset()
			}
			inWord = false
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("unbalanced quotes in %q", cmd)
	}
	if inWord {
		words = append(words, word.String())
	}
	return words
}

func TestGateAgainstBaseline(t *testing.T) {
	f := campaignDir(t, actThenSave...)
	rep := loadDir(t, f.dir)
	// The baseline: the same campaign before the bug, without its duplicates.
	for i := range rep.Cases {
		c := &rep.Cases[i]
		c.Duplicates, c.DuplicatesByTool = 0, nil
		c.Violations = slices.DeleteFunc(c.Violations, func(v oracle.Violation) bool { return v.Property == "no-duplicate-effects" })
	}
	rep.Summarize(map[string]int{"reference/act-then-save": rep.Summary.Targets[0].GoldenBeats})
	baseline := filepath.Join(t.TempDir(), "baseline.json")
	if err := rep.WriteFile(baseline); err != nil {
		t.Fatal(err)
	}
	current := filepath.Join(f.dir, "report.json")

	code, out, errOut := chaoskit(t, "gate", "--baseline", baseline, current)
	if code != exitFail {
		t.Fatalf("exit %d, want 1\n%s%s", code, out, errOut)
	}
	wantIn(t, "stdout", out,
		"regression: reference/act-then-save: duplicates 0 → ",
		"regression: reference/act-then-save: no-duplicate-effects 0 → ",
		"regression: reference/act-then-save [kill]: duplicates 0 → ",
		"regression: reference/act-then-save [power]: duplicates 0 → ")
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(line, "regression: ") {
			t.Errorf("not a regression line: %q", line)
		}
	}
	if !strings.Contains(errOut, "regressions against "+baseline) || strings.Count(errOut, "\n") != 1 {
		t.Errorf("stderr %q", errOut)
	}

	// Flags after the report work too; a report is no worse than itself, nor than a worse one.
	for _, args := range [][]string{
		{"gate", current, "--baseline", current},
		{"gate", baseline, "--baseline", current},
		{"gate", current, "--baseline", baseline, "--tolerance", "*=1000"},
	} {
		if code, out, errOut := chaoskit(t, args...); code != exitOK {
			t.Errorf("chaoskit %v: exit %d\n%s%s", args, code, out, errOut)
		}
	}

	// A gate expression on its own, and with the baseline.
	if code, out, _ := chaoskit(t, "gate", "--gate", "duplicates{fault=power}==0", current); code != exitFail || !strings.Contains(out, "gate failed: reference/act-then-save [power]: duplicates is ") {
		t.Errorf("gate --gate: exit %d\n%s", code, out)
	}
	if code, out, _ := chaoskit(t, "gate", "--gate", "cases>0", "--baseline", current, current); code != exitOK || !strings.Contains(out, "gate held: 3 comparisons") {
		t.Errorf("gate --gate --baseline: exit %d\n%s", code, out)
	}
}

func TestSameSeedSameReport(t *testing.T) {
	args := []string{"run", "--target", "reference/no-fsync,reference", "--faults", "storage", "--mode", "random", "--cases", "40", "--seed", "11", "--format", "json"}
	a, b := t.TempDir(), t.TempDir()
	if code, _, errOut := chaoskit(t, append(args, "--out", a)...); code != exitFail {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// The number of cases at once changes nothing.
	if code, _, errOut := chaoskit(t, append(args, "--out", b, "--parallel", "1")...); code != exitFail {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	sameReport(t, filepath.Join(a, "report.json"), filepath.Join(b, "report.json"))
	if rep := loadDir(t, a); rep.Seed != 11 || rep.Options.Cases != 40 || len(rep.Cases) != 80 {
		t.Fatalf("seed %d, options %+v, %d cases", rep.Seed, rep.Options, len(rep.Cases))
	}
}

// --workers, the old name of --parallel (a worker is now a copy of the target), still works, and
// says once that it is deprecated.
func TestWorkersIsTheOldNameOfParallel(t *testing.T) {
	code, _, errOut := chaoskit(t, "run", "--target", "reference", "--faults", "kill", "--mode", "random", "--cases", "2",
		"--format", "json", "--out", t.TempDir(), "--workers", "1")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	const note = "chaoskit: --workers is deprecated: it is --parallel now"
	if n := strings.Count(errOut, note); n != 1 {
		t.Errorf("stderr says %d times %q:\n%s", n, note, errOut)
	}
}

func TestMergeRefusesOtherCampaigns(t *testing.T) {
	dir := t.TempDir()
	shard := func(name string, args ...string) string {
		out := filepath.Join(dir, name)
		base := []string{"run", "--target", "reference", "--faults", "kill", "--format", "json", "--out", out}
		if code, _, errOut := chaoskit(t, append(base, args...)...); code != exitOK {
			t.Fatalf("%s: exit %d: %s", name, code, errOut)
		}
		return out
	}
	a1, a2 := shard("a1", "--shard", "1/2"), shard("a2", "--shard", "2/2")
	b2 := shard("b2", "--shard", "2/2", "--seed", "2")
	c3 := shard("c3", "--shard", "3/3")
	whole := shard("whole")
	for _, tc := range []struct {
		shards []string
		want   string
	}{
		{[]string{a1, b2}, "shard 2/2 is of another campaign than shard 1/2: seed 2, not 1"},
		{[]string{a1, c3}, "split the campaign differently"},
		{[]string{a1}, "shard 2/2 is missing"},
		{[]string{a1, a2, a1}, "shard 1/2 given twice"},
		{[]string{a1, whole}, "not a shard"},
	} {
		code, _, errOut := chaoskit(t, append([]string{"merge", "--out", filepath.Join(dir, "m")}, tc.shards...)...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("merge %v: exit %d, stderr %q; want exit 2 and %q", tc.shards, code, errOut, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "m")); err == nil {
		t.Error("a refused merge wrote its directory")
	}
}

func TestRunGateDecidesTheExitCode(t *testing.T) {
	base := append([]string{"run", "--format", "text"}, actThenSave...)
	dir := t.TempDir()
	code, out, errOut := chaoskit(t, append(base, "--out", dir, "--gate", "duplicates==0, lost_effects==0, work_lost_beats_mean{target=reference/*}<=100")...)
	if code != exitFail {
		t.Fatalf("exit %d, want 1\n%s%s", code, out, errOut)
	}
	wantIn(t, "stdout", out,
		"gate failed: reference/act-then-save: duplicates is ",
		"gate failed: reference/act-then-save [kill]: duplicates is ",
		", want == 0\n")
	if strings.Contains(out, "lost_effects is") || strings.Contains(out, "work_lost_beats_mean is") {
		t.Errorf("a comparison that held is listed as failed:\n%s", out)
	}
	if !strings.Contains(errOut, "the gate failed 3 of 9 comparisons") {
		t.Errorf("stderr %q", errOut)
	}
	// A gate that holds makes the run exit 0, though cases failed.
	code, out, errOut = chaoskit(t, append(base, "--out", dir, "--gate", "no-duplicate-effects<=1000, state_mismatches{fault=kill}>=0")...)
	if code != exitOK || !strings.Contains(out, "gate held: 4 comparisons") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
}

func TestReportWriteFailureKeepsTheJournal(t *testing.T) {
	dir := t.TempDir()
	// report.json cannot be replaced: it is a directory that is not empty.
	if err := os.MkdirAll(filepath.Join(dir, "report.json", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := chaoskit(t, append([]string{"run", "--out", dir}, actThenSave...)...)
	if code != exitUsage || !strings.Contains(errOut, "report.json") || !strings.Contains(errOut, "the cases are in "+filepath.Join(dir, "cases.jsonl")) || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("exit %d, stderr %q\n%s", code, errOut, out)
	}
	// The other files were written, and the journal holds every case: resuming it writes the
	// report once the obstacle is gone.
	for _, name := range []string{"summary.md", "junit.xml", "report.html"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Error(err)
		}
	}
	os.RemoveAll(filepath.Join(dir, "report.json"))
	if code, _, errOut := chaoskit(t, "run", "--resume", dir); code != exitFail {
		t.Fatalf("resume: exit %d: %s", code, errOut)
	}
	sameReport(t, filepath.Join(campaignDir(t, actThenSave...).dir, "report.json"), filepath.Join(dir, "report.json"))
}

func TestListTargetsAndFaults(t *testing.T) {
	code, out, _ := chaoskit(t, "targets")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != exitOK || len(lines) != len(registry()) || !strings.HasPrefix(lines[0], "reference ") || !strings.Contains(out, "reference/act-then-save") {
		t.Fatalf("targets: exit %d\n%s", code, out)
	}
	code, out, _ = chaoskit(t, "faults")
	if code != exitOK || !strings.Contains(out, "diskfull@N:BYTES[+DURATION]") || !strings.Contains(out, "power@N[:subset]") || !strings.Contains(out, "torn@N[:garbage]") || !strings.Contains(out, "lease@N+DURATION") {
		t.Fatalf("faults: exit %d\n%s", code, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if len(strings.Fields(line)) < 4 {
			t.Errorf("faults line %q lacks a summary", line)
		}
	}
}

func TestHelp(t *testing.T) {
	code, out, _ := chaoskit(t, "help")
	if code != exitOK {
		t.Fatalf("help: exit %d", code)
	}
	for _, c := range commands {
		wantIn(t, "help", out, "  "+c.name+" ")
		code, out, errOut := chaoskit(t, c.name, "--help")
		if code != exitOK || errOut != "" || !strings.HasPrefix(out, "usage of chaoskit "+c.name) {
			t.Errorf("%s --help: exit %d\n%s%s", c.name, code, out, errOut)
		}
	}
	_, out, _ = chaoskit(t, "run", "-h")
	wantIn(t, "run -h", out, "-target", "-resume", "-shard", "-gate", "-format", "-exec", "-restart")
	if code, helpRun, _ := chaoskit(t, "help", "run"); code != exitOK || helpRun != out {
		t.Errorf("help run: exit %d, and not run -h's text:\n%s", code, helpRun)
	}
	for _, args := range [][]string{{"version"}, {"--version"}} {
		if code, v, _ := chaoskit(t, args...); code != exitOK || !strings.HasPrefix(v, "chaoskit ") {
			t.Errorf("%v: exit %d: %q", args, code, v)
		}
	}
}

// A new campaign in a directory that holds an earlier report removes that report first: if it
// is interrupted, nothing beside its journal looks like a finished report.
func TestNewCampaignClearsTheOldReport(t *testing.T) {
	dir := t.TempDir()
	run := func(format string) {
		t.Helper()
		if code, _, errOut := chaoskit(t, "run", "--target", "reference", "--faults", "kill", "--cases", "3", "--format", format, "--out", dir); code != exitOK {
			t.Fatalf("exit %d: %s", code, errOut)
		}
	}
	run("json,md,junit,html")
	run("json") // a new campaign, which writes only report.json: the old others must go
	for _, f := range reports.Formats() {
		_, err := os.Stat(filepath.Join(dir, reports.FileName(f)))
		if gone := errors.Is(err, fs.ErrNotExist); gone != (f != "json") {
			t.Errorf("%s: gone %v after a campaign writing only report.json (%v)", reports.FileName(f), gone, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "cases.jsonl")); err != nil {
		t.Errorf("the journal went too: %v", err)
	}
}

// The exit code follows the verdicts: 1 if a case failed, else 3 if one is unknown, else 0; a
// target that is not deterministic cannot be decided (3).
func TestExitCodes(t *testing.T) {
	report := func(verdicts ...oracle.Outcome) *reports.Report {
		r := &reports.Report{}
		for _, v := range verdicts {
			r.Cases = append(r.Cases, reports.Case{Target: "t", Verdict: v})
		}
		return r
	}
	for _, tc := range []struct {
		rep  *reports.Report
		code int
		msg  string
	}{
		{report(oracle.Pass, oracle.Pass), exitOK, ""},
		{report(oracle.Pass, oracle.Unknown), exitUnknown, "chaoskit: 1 of 2 cases could not be decided\n"},
		{report(oracle.Unknown, oracle.Fail, oracle.Pass), exitFail, "chaoskit: 1 of 3 cases failed\n"},
		{report(), exitOK, ""},
	} {
		var stderr strings.Builder
		if code := exitCode(judge(tc.rep, nil, io.Discard), &stderr); code != tc.code || stderr.String() != tc.msg {
			t.Errorf("%d cases: exit %d, stderr %q; want %d, %q", len(tc.rep.Cases), code, stderr.String(), tc.code, tc.msg)
		}
	}
	err := targetError(fmt.Errorf("reference: %w: beat 3 differs", sim.ErrNondeterministic))
	if code := exitCode(err, io.Discard); code != exitUnknown {
		t.Errorf("a nondeterministic target: exit %d", code)
	}
	if code := exitCode(targetError(errors.New("golden run failed")), io.Discard); code != exitUsage {
		t.Errorf("a target whose golden run fails: exit %d", code)
	}
	// Stopped by a signal: 128 plus its number, as a shell says it, never 2.
	for _, tc := range []struct {
		err  error
		code int
		msg  string
	}{
		{fmt.Errorf("%w after 3 of 9 cases: %w", campaign.ErrInterrupted, signalled{syscall.SIGTERM}), 143, "chaoskit: campaign interrupted after 3 of 9 cases: stopped by SIGTERM\n"},
		{fmt.Errorf("r: golden run %w: %w", sim.ErrInterrupted, signalled{syscall.SIGINT}), 130, "chaoskit: r: golden run interrupted: stopped by SIGINT\n"},
	} {
		var stderr strings.Builder
		if code := exitCode(tc.err, &stderr); code != tc.code || stderr.String() != tc.msg {
			t.Errorf("%v: exit %d, stderr %q; want %d, %q", tc.err, code, stderr.String(), tc.code, tc.msg)
		}
	}
}

// A replayed schedule with a fault that never fires is unknown (exit 3), naming the fault and
// why: the golden run's length, or the beat it names, which is not one its kind fires at (a tool
// fault at a beat that is no tool call does not fire at the next one). The verdict claims nothing
// that was not checked.
func TestReplayOfAFaultThatNeverFires(t *testing.T) {
	for _, tc := range []struct{ schedule, want string }{
		{"kill@100000", "the golden run makes 162"},
		{"switch@8:9", "names a worker the run does not have"},
		{"kill@3,power@100000", "not every fault fired: power@100000 is past the run's end"},
		{"tool-transient@2", `no fault fired, so the case tested nothing: tool-transient@2 did not fire: it fires only at a tool call, and beat 2 is "fs.syncdir ."`},
	} {
		code, out, _ := chaoskit(t, "replay", "--target", "reference", "--schedule", tc.schedule)
		if code != exitUnknown || !strings.Contains(out, ": unknown (") || !strings.Contains(out, tc.want) {
			t.Errorf("replay %s: exit %d, want %d and %q:\n%s", tc.schedule, code, exitUnknown, tc.want, out)
		}
	}
}

// replay --trace shows the beats of a case that passes, as a failure's are shown: around the
// fault, where each process starts and how it ended; without it a pass is one line.
func TestReplayTraceShowsWhatHappened(t *testing.T) {
	args := []string{"replay", "--target", "reference", "--schedule", "kill@5"}
	code, out, _ := chaoskit(t, args...)
	if code != exitOK || strings.Contains(out, "beats around the fault") {
		t.Fatalf("replay: exit %d:\n%s", code, out)
	}
	code, out, _ = chaoskit(t, append(args, "--trace")...)
	for _, want := range []string{"reference under kill@5 (seed 1): pass\n  beats around the fault:\n", "0  p0  lease acquire run-acme   [process 0 starts]",
		">>     5  p0  fs.sync run/wal.log   <- kill@5   [process 0 crashed by kill@5", "[process 1 completed]"} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("replay --trace: exit %d, want 0 and %q:\n%s", code, want, out)
		}
	}
}

// A gate that compares nothing does not hold: exit 2, saying why.
func TestGateThatComparesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty.json")
	if err := (&reports.Report{Schema: reports.Schema}).WriteFile(path); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := chaoskit(t, "gate", "--gate", "failed==0", path)
	if code != exitUsage || !strings.Contains(errOut, "the gate failed==0 compared nothing: the report has no cases") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

// --resume on a directory that holds no journal (a run killed before it wrote one) starts the
// campaign its flags describe there, saying so in one line; without a target it is refused (see
// TestBadInput).
func TestResumeWithoutAJournalStartsTheCampaign(t *testing.T) {
	dir := t.TempDir()
	code, _, errOut := chaoskit(t, "run", "--resume", dir, "--target", "reference", "--faults", "kill", "--format", "json")
	if code != exitOK || errOut != "chaoskit: "+dir+" holds no journal: running the campaign from its start\n" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if rep := loadDir(t, dir); len(rep.Cases) == 0 {
		t.Error("no cases in the report")
	}
}

// The printed summary sums each problem up on one line that cuts nothing short: a detail whose
// first line announces a diff is followed by the diff's first lines, not left hanging at its
// colon, and a long line is printed whole.
func TestPrintedProblemsCutNothing(t *testing.T) {
	long := `create_po {"vendor":"Acme Freight","lines":[` + strings.Repeat(`{"sku":"pallet","qty":12},`, 8) + `]} applied 2× (golden 1×)`
	problems := []*reports.Case{
		{Target: "t", Schedule: faults.MustParseSchedule("kill@3"), Verdict: oracle.Fail, Repro: "chaoskit replay ...", Violations: []oracle.Violation{
			{Property: "same-result", Detail: "the result differs from the golden run's (-golden +faulty):\n.Outputs[2]: -\"a-1\" +\"a-2\""}}},
		{Target: "t", Schedule: faults.MustParseSchedule("kill@4"), Verdict: oracle.Fail, Repro: "chaoskit replay ...", Violations: []oracle.Violation{
			{Property: "no-duplicate-effects", Detail: long}}},
		{Target: "t", Schedule: faults.MustParseSchedule("kill@2,power@9"), Verdict: oracle.Fail, Repro: "chaoskit replay --schedule 'kill@2,power@9'",
			Shrunk: faults.MustParseSchedule("power@5"), ShrunkRepro: "chaoskit replay --schedule 'power@5'", Violations: []oracle.Violation{
				{Property: "bounded-work-lost", Detail: "redone"}}},
	}
	var b strings.Builder
	printProblems(&b, problems)
	wantIn(t, "the problems", b.String(),
		"  t kill@3: same-result: the result differs from the golden run's (-golden +faulty): .Outputs[2]: -\"a-1\" +\"a-2\"\n",
		"  t kill@4: no-duplicate-effects: "+long+"\n",
		"  t kill@2,power@9: bounded-work-lost: redone\n    shrunk to power@5: chaoskit replay --schedule 'power@5'\n")
	if strings.Contains(b.String(), "…") {
		t.Errorf("a line is cut short:\n%s", b.String())
	}
}

// A target's verdict says how many of its passing cases passed by stopping loudly, which the
// "survived" column counts with the rest, and what it has no case of.
func TestTargetVerdictCountsDetected(t *testing.T) {
	ts := &reports.TargetSummary{Target: "t", Stats: reports.Stats{Cases: 199, Passed: 199, Detected: 3}, NoCase: []string{"callback-dup"}}
	if got, want := targetVerdict(ts), "passed; 3 detected (stopped loudly); no case of callback-dup"; got != want {
		t.Fatalf("targetVerdict = %q, want %q", got, want)
	}
}

// An exhaustive campaign capped with --cases says of how many schedules each target's cases are a
// sample: the count of its whole list, which an uncapped run runs.
func TestCappedCampaignSaysOfHowMany(t *testing.T) {
	whole := loadDir(t, campaignDir(t, "--target", "reference", "--faults", "kill", "--mode", "exhaustive").dir)
	capped := campaignDir(t, "--target", "reference", "--faults", "kill", "--mode", "exhaustive", "--cases", "50")
	rep := loadDir(t, capped.dir)
	n := len(whole.Cases)
	if len(rep.Cases) != 50 || rep.Summary.Targets[0].Schedules != n || whole.Summary.Targets[0].Schedules != 0 {
		t.Fatalf("%d cases of %d schedules; the whole campaign's %d (schedules %d)", len(rep.Cases), rep.Summary.Targets[0].Schedules, n, whole.Summary.Targets[0].Schedules)
	}
	md, err := os.ReadFile(filepath.Join(capped.dir, "summary.md"))
	if err != nil {
		t.Fatal(err)
	}
	wantIn(t, "summary.md", string(md), fmt.Sprintf("mode exhaustive · 50 of %d schedules, sampled evenly", n))
	// Shards of it merge into a report that says so too.
	dir := t.TempDir()
	var shards []string
	for _, s := range []string{"1/2", "2/2"} {
		out := filepath.Join(dir, "shard"+s[:1])
		shards = append(shards, out)
		if code, _, errOut := chaoskit(t, "run", "--target", "reference", "--faults", "kill", "--mode", "exhaustive", "--cases", "50", "--shard", s, "--format", "json", "--out", out); code != exitOK {
			t.Fatalf("shard %s: exit %d: %s", s, code, errOut)
		}
	}
	merged := filepath.Join(dir, "merged")
	if code, _, errOut := chaoskit(t, append([]string{"merge", "--format", "json", "--out", merged}, shards...)...); code != exitOK {
		t.Fatalf("merge: exit %d: %s", code, errOut)
	}
	sameReport(t, filepath.Join(capped.dir, "report.json"), filepath.Join(merged, "report.json"))
}
