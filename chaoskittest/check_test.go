package chaoskittest_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/chaoskittest"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/reference"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/chaoskit/chaoskit/sim"
	"github.com/spf13/afero"
	"pgregory.net/rapid"
)

// agent returns a constructor of the reference agent's variant v, on the onboarding task.
func agent(v reference.Variant) func() harness.Target {
	return func() harness.Target { return reference.New(v, reference.Onboarding()) }
}

// TestMain, when re-executed by the tests below with CHAOSKIT_CHECK_HELPER set, runs tests of
// Check that are meant to fail, and only those.
func TestMain(m *testing.M) {
	if os.Getenv("CHAOSKIT_CHECK_HELPER") != "" {
		random := campaign.Options{Mode: campaign.Random, Cases: 30}
		random.Seed = 3
		testing.Main(func(pat, str string) (bool, error) { return regexp.MatchString(pat, str) }, []testing.InternalTest{
			{Name: "TestCheckHelperExhaustive", F: func(t *testing.T) {
				chaoskittest.Check(t, agent(reference.ActThenSave), campaign.Options{})
			}},
			{Name: "TestCheckHelperRandom", F: func(t *testing.T) {
				chaoskittest.Check(t, agent(reference.UnstableKey), random)
			}},
			{Name: "TestCheckHelperRefused", F: func(t *testing.T) {
				chaoskittest.Check(t, refuser, campaign.Options{Faults: []faults.Kind{faults.Kill}})
			}},
			{Name: "TestCheckHelperUpgrade", F: func(t *testing.T) {
				chaoskittest.Check(t, oldPipeline, deploysPipeline)
			}},
			{Name: "TestCheckHelperNoCase", F: func(t *testing.T) {
				chaoskittest.Check(t, logTarget, campaign.Options{Faults: []faults.Kind{faults.Kill, faults.CallbackDup}})
			}},
		}, nil, nil)
	}
	os.Exit(m.Run())
}

// runHelper runs one helper test in a child process and returns its output and whether it
// passed.
func runHelper(t *testing.T, name string, args ...string) (string, bool) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^" + name + "$", "-test.v"}, args...)...)
	cmd.Env = append(os.Environ(), "CHAOSKIT_CHECK_HELPER=1")
	out, err := cmd.CombinedOutput()
	if _, exit := err.(*exec.ExitError); err != nil && !exit {
		t.Fatal(err)
	}
	return string(out), err == nil
}

var replayRe = regexp.MustCompile(`replay: go test (\S+) -run '(\^[^']+\$)' -chaoskit\.schedule='([^']+)'( -chaoskit\.seed=(\d+))?`)

// Check fails the test for a broken harness, printing the violation, the beats around the
// fault and a go test command naming the package; running that command replays exactly that
// case, which fails the same way.
func TestCheckPrintsACommandThatReplaysTheFailure(t *testing.T) {
	out, ok := runHelper(t, "TestCheckHelperExhaustive")
	if ok {
		t.Fatalf("Check passed a harness that duplicates effects:\n%s", out)
	}
	for _, want := range []string{"violated no-duplicate-effects", "beats around the fault", ">> ", "did not pass"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// Each finding names the line of the test that called Check, not chaoskit's own.
	if !strings.Contains(out, "check_test.go:") || regexp.MustCompile(`\bcheck\.go:\d+: chaoskit`).MatchString(out) {
		t.Errorf("findings are not attributed to the caller of Check:\n%s", out)
	}
	m := replayRe.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no replay command in:\n%s", out)
	}
	if m[1] != "./chaoskittest" || m[2] != "^TestCheckHelperExhaustive$" {
		t.Errorf("replay runs %s %s", m[1], m[2])
	}
	again, ok := runHelper(t, "TestCheckHelperExhaustive", "-chaoskit.schedule="+m[3])
	if ok || !strings.Contains(again, "under "+m[3]+" (seed 0): fail") || !strings.Contains(again, "violated no-duplicate-effects") {
		t.Fatalf("replaying %s:\n%s", m[3], again)
	}
	if strings.Count(again, "violated no-duplicate-effects") != 1 {
		t.Errorf("the replay ran more than the one case:\n%s", again)
	}
}

// In random mode Check runs Options.Cases schedules drawn from Options.Seed, as chaoskit run
// does, and shows each failure shrunk: the schedule it prints and replays is the smallest that
// still fails, and the same command line replays it.
func TestCheckRandomShrinksAndReplays(t *testing.T) {
	out, ok := runHelper(t, "TestCheckHelperRandom")
	if ok {
		t.Fatalf("Check passed a harness with unstable keys:\n%s", out)
	}
	all := replayRe.FindAllStringSubmatch(out, -1)
	if len(all) == 0 {
		t.Fatalf("no replay command in:\n%s", out)
	}
	m := all[0] // each failing subtest's line replays its shrunk schedule
	if !strings.Contains(out, "; shrunk to "+m[3]+"; replay: ") {
		t.Errorf("the first failure's line does not show its shrunk schedule:\n%s", out)
	}
	shrunk, seed := m[3], m[5]
	if strings.Contains(shrunk, ",") || seed != "3" {
		t.Errorf("the first failure replays %s with seed %s: one fault suffices, seed 3", shrunk, seed)
	}
	again, ok := runHelper(t, "TestCheckHelperRandom", "-chaoskit.schedule="+shrunk, "-chaoskit.seed="+seed)
	if ok || !strings.Contains(again, "under "+shrunk+" (seed 3): fail") {
		t.Fatalf("replaying %s:\n%s", shrunk, again)
	}
	cli := fmt.Sprintf("chaoskit replay --target reference/unstable-key --seed 3 --schedule '%s'", shrunk)
	t.Logf("the same case from the command line: %s", cli)
}

// Random schedules that shrink to the same one are one failure, shown in full once.
func TestCheckRandomShowsEachShrunkFailureOnce(t *testing.T) {
	out, ok := runHelper(t, "TestCheckHelperRandom", "-chaoskit.seed=2") // two shrink to kill@0
	if ok {
		t.Fatalf("Check passed a harness with unstable keys:\n%s", out)
	}
	shown := regexp.MustCompile(`under (\S+) \(seed 2\): fail`).FindAllStringSubmatch(out, -1)
	seen := map[string]bool{}
	for _, m := range shown {
		if seen[m[1]] {
			t.Errorf("the failure under %s is shown twice:\n%s", m[1], out)
		}
		seen[m[1]] = true
	}
	if !strings.Contains(out, "of them shrank to a failure shown above)") {
		t.Errorf("the count does not say how many shrank to a failure shown:\n%s", out)
	}
}

// A seed given on the command line is in every replay command, even 0: without it the replay
// would run under the code's Options.Seed (3 here), another case.
func TestCheckReplayKeepsAnOverriddenSeed(t *testing.T) {
	out, ok := runHelper(t, "TestCheckHelperRandom", "-chaoskit.seed=0")
	if ok {
		t.Fatalf("Check passed a harness with unstable keys under seed 0:\n%s", out)
	}
	all := replayRe.FindAllStringSubmatch(out, -1)
	if len(all) == 0 {
		t.Fatalf("no replay command in:\n%s", out)
	}
	for _, m := range all {
		if m[5] != "0" {
			t.Fatalf("a replay command without -chaoskit.seed=0: %s", m[0])
		}
	}
	shrunk := all[0][3]
	again, ok := runHelper(t, "TestCheckHelperRandom", "-chaoskit.schedule="+shrunk, "-chaoskit.seed=0")
	if ok || !strings.Contains(again, "under "+shrunk+" (seed 0): fail") {
		t.Fatalf("replaying %s with seed 0:\n%s", shrunk, again)
	}
}

func TestCheckPassesTheReference(t *testing.T) {
	chaoskittest.Check(t, agent(reference.Correct), campaign.Options{})
}

// printingTB stands in for a *testing.T in the example, printing what Check reports.
type printingTB struct {
	testing.TB
	name string
}

func (p printingTB) Helper()                           {}
func (p printingTB) Name() string                      { return p.name }
func (p printingTB) Logf(format string, args ...any)   { fmt.Printf("log: "+format+"\n", args...) }
func (p printingTB) Errorf(format string, args ...any) { fmt.Printf("error: "+format+"\n", args...) }
func (p printingTB) Fatalf(format string, args ...any) { fmt.Printf("fatal: "+format+"\n", args...) }

// In a test, Check crashes the harness at every beat under every fault kind asked for and fails
// the test for each case that does not pass. The reference agent passes.
func ExampleCheck() {
	t := printingTB{name: "TestOnboarding"} // in a real test, the *testing.T
	chaoskittest.Check(t, agent(reference.Correct), campaign.Options{
		Faults: []faults.Kind{faults.Kill, faults.Power, faults.FsyncFail},
	})
	// Output:
	// log: chaoskit: TestOnboarding: 424 cases over 162 golden beats, 0 did not pass
}

// Schedules lets rapid draw the schedules a Random campaign would, and shrink them: every one
// is valid, and the correct agent survives each.
func TestSchedulesGenerator(t *testing.T) {
	rn, err := sim.NewRunner(agent(reference.Correct), sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	opts := campaign.Options{Faults: faults.AllKinds(), MaxFaults: 2}
	kinds := map[faults.Kind]bool{}
	rapid.Check(t, func(rt *rapid.T) {
		s := chaoskittest.Schedules(rn, opts).Draw(rt, "schedule")
		if err := s.Validate(); err != nil || len(s) == 0 || len(s) > 2 {
			rt.Fatalf("drew %q: %v", s, err)
		}
		for _, f := range s {
			kinds[f.Kind] = true
		}
		if c := rn.Run(s); c.Verdict.Outcome != oracle.Pass {
			rt.Fatalf("%s", c)
		}
	})
	if len(kinds) < 8 {
		t.Errorf("rapid drew only %d kinds of fault: %v", len(kinds), kinds)
	}
}

// With -chaoskit.out, Check writes the report directory chaoskit run writes, named for the test,
// which chaoskit gate reads.
func TestCheckWritesTheReportDirectory(t *testing.T) {
	out := t.TempDir()
	runHelper(t, "TestCheckHelperExhaustive", "-chaoskit.out="+out)
	dir := filepath.Join(out, "TestCheckHelperExhaustive")
	for _, name := range []string{"report.json", "summary.md", "junit.xml", "report.html"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := reports.Load(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Summary.Targets[0]
	if s.Target != "TestCheckHelperExhaustive" || s.Failed == 0 || s.Cases != len(rep.Cases) || rep.Options.Mode != "exhaustive" {
		t.Fatalf("summary %+v", s)
	}
	if c := rep.Cases[0]; !strings.HasPrefix(c.Repro, "go test ./chaoskittest -run '^TestCheckHelperExhaustive$'") {
		t.Fatalf("repro %q", c.Repro)
	}
}

// Each case is a subtest named for its schedule: -run picks one, which alone runs; -v lists
// them; -short runs at most 50; the environment variables stand in for the flags.
func TestCheckCasesAreSubtests(t *testing.T) {
	out, _ := runHelper(t, "TestCheckHelperExhaustive/^kill@3$")
	if n := strings.Count(out, "=== RUN   TestCheckHelperExhaustive/kill@3"); n != 1 || strings.Count(out, "=== RUN") != 2 {
		t.Fatalf("-run TestCheckHelperExhaustive/kill@3 ran %d such subtests:\n%s", n, out)
	}
	if !strings.Contains(out, "chaoskit: TestCheckHelperExhaustive: 1 cases over") {
		t.Errorf("the summary does not count the one case:\n%s", out)
	}
	out, _ = runHelper(t, "TestCheckHelperExhaustive", "-test.short")
	if n := strings.Count(out, "=== RUN   TestCheckHelperExhaustive/"); n != 50 {
		t.Errorf("-short ran %d cases, want 50", n)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCheckHelperExhaustive$", "-test.v")
	cmd.Env = append(os.Environ(), "CHAOSKIT_CHECK_HELPER=1", "CHAOSKIT_SCHEDULE=kill@39", "CHAOSKIT_SEED=0")
	b, _ := cmd.CombinedOutput()
	if !strings.Contains(string(b), "under kill@39 (seed 0)") || strings.Contains(string(b), "=== RUN   TestCheckHelperExhaustive/") {
		t.Errorf("CHAOSKIT_SCHEDULE did not run just kill@39:\n%s", b)
	}
}

// A case that passes because the harness refused to go on passes, but not silently: its subtest
// logs the refusal, what it may hide and the replay command, and the count says how many.
func TestCheckShowsRefusals(t *testing.T) {
	out, ok := runHelper(t, "TestCheckHelperRefused")
	if !ok {
		t.Fatalf("Check failed a harness that refuses to go on:\n%s", out)
	}
	for _, want := range []string{"passed as refused (the last process refused to go on: refused to go on without a person: cannot tell whether the order was filed)", "usually hides durable state the harness lost; replay: go test ", "passed by refusing to go on"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// refuser files an order once: a process that finds the sign of an earlier one refuses to go on.
func refuser() harness.Target {
	return harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
		if _, err := env.FS().Stat("begun"); err == nil {
			return nil, fmt.Errorf("%w: cannot tell whether the order was filed", harness.ErrRefused)
		}
		f, err := env.FS().Create("begun")
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if err := f.Sync(); err != nil {
			return nil, err
		}
		env.Mark("begun")
		return "filed", nil
	}}
}

// logTarget appends two lines to a log, fsyncing each, and calls no tool.
func logTarget() harness.Target {
	return harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
		b, _ := afero.ReadFile(env.FS(), "log")
		f, err := env.FS().OpenFile("log", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		for i := bytes.Count(b, []byte("\n")); i < 2; i++ {
			if _, err := f.WriteString("line\n"); err != nil || f.Sync() != nil {
				return nil, fmt.Errorf("writing line %d failed", i)
			}
			env.Mark(fmt.Sprint("line ", i))
		}
		return nil, nil
	}}
}

// A Check asked for a fault kind of which the campaign has no case decided nothing about it, and
// does not pass: every kill case passes, and the test fails saying that callback-dup has no case.
func TestCheckWithNoCaseOfAKindFails(t *testing.T) {
	out, ok := runHelper(t, "TestCheckHelperNoCase")
	want := "chaoskit: TestCheckHelperNoCase: nothing was decided under [callback-dup]: the campaign has no case of them"
	if ok || !strings.Contains(out, want) || strings.Contains(out, "did not pass") && !strings.Contains(out, ", 0 did not pass") {
		t.Fatalf("passed %v, want a failure saying %q and every case passing:\n%s", ok, want, out)
	}
}

// oldPipeline is the reference agent doing the Burr loop's first four steps; deploysPipeline
// deploys the version that does all five (the agent gains a step) mid-run.
var (
	oldPipeline = func() harness.Target {
		old := reference.Pipeline()
		old.Steps = old.Steps[:4]
		return reference.New(reference.Correct, old)
	}
	deploysPipeline = campaign.Options{Options: sim.Options{
		NextVersion: func() harness.Target { return reference.New(reference.Correct, reference.Pipeline()) },
	}, Faults: []faults.Kind{faults.Upgrade}}
)

// Check takes the next version a deploy puts in place (Options.NextVersion): its campaign has
// an upgrade case at every beat, and -chaoskit.schedule replays one of them.
func TestCheckDeploysTheNextVersion(t *testing.T) {
	chaoskittest.Check(t, oldPipeline, deploysPipeline)
	out, ok := runHelper(t, "TestCheckHelperUpgrade", "-chaoskit.schedule=upgrade@5")
	if !ok || !strings.Contains(out, "under upgrade@5 (seed 0): pass") {
		t.Errorf("replaying upgrade@5:\n%s", out)
	}
}
