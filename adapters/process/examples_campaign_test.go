//go:build campaigns

package process_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/adapters/process"
	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/internal/leftover"
	"github.com/chaoskit/chaoskit/internal/needs"
	"github.com/chaoskit/chaoskit/internal/testbin"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
)

// Git's own fsyncs are not enough for a log on git refs, whatever core.fsync says: with
// core.fsync=all and nothing more, a power cut after an append takes the event back (git never
// fsyncs the directory its ref was renamed into), and a start redoes an event it had marked
// durable (bounded-work-lost). The example passes only because it fsyncs those directories, and
// the objects mktree and commit-tree write without an fsync.
func TestBratTrustingGitLosesEventsToPower(t *testing.T) {
	tg := brat.onFUSEDisk(t, process.CallBeats)
	needs.Command(t, "git", installGit)
	tg.Argv = append(tg.Argv, "--git-fsync", "all", "--trust-git")
	t.Parallel()
	cases, err := campaign.Explore(context.Background(), exampleRunner(t, "brat trusting git", tg), campaign.Options{Faults: []faults.Kind{faults.Power}})
	if err != nil {
		t.Fatal(err)
	}
	redone := 0
	for _, c := range cases {
		if c.Breaks(oracle.BoundedWorkLost) {
			redone++
		}
	}
	if redone == 0 {
		t.Fatalf("no power cut of %d took an appended event back", len(cases))
	}
	t.Logf("%d of %d power cuts took an appended event back", redone, len(cases))
}

// On a FUSE disk the brat example's log survives a power cut at every request, and after its
// end: it fsyncs the objects git's mktree and commit-tree leave unsynced, and the directories
// git never syncs. (Git names its temporary files at random, so only requests are beats.)
func TestBratExampleSurvivesPowerOnFUSE(t *testing.T) {
	tg := brat.onFUSEDisk(t, process.CallBeats)
	needs.Command(t, "git", installGit)
	t.Parallel()
	if n, _ := passesEveryCase(t, exampleRunner(t, "brat on fuse", tg), faults.Power); n != 11 {
		t.Errorf("%d cases, want a power cut at each of the 10 requests and one after the end (power@end)", n)
	}
}

// On a FUSE disk every file operation of the Burr example is a beat, SQLite's included, and its
// database survives a kill, a power cut or a torn write at (an even sample of) them. It takes
// synchronous=EXTRA: with FULL, nothing fsyncs the directory after a commit unlinks the
// journal, so a power cut brings the journal back and the next open rolls the step back.
func TestBurrExampleSurvivesPowerOnFUSE(t *testing.T) {
	tg := burr.onFUSEDisk(t, process.AllBeats)
	t.Parallel()
	rn := exampleRunner(t, "burr on fuse", tg)
	g, _ := rn.Golden(nil)
	if trace := strings.Join(g.Trace(), "|"); !strings.Contains(trace, "fs.remove burr.db-journal|fs.syncdir .|mark step 0 gather") {
		t.Errorf("the first step's commit does not fsync the directory after unlinking the journal:\n%s", trace)
	}
	cases, err := campaign.Explore(context.Background(), rn, campaign.Options{Faults: []faults.Kind{faults.Kill, faults.Power, faults.Torn}, Cases: 40})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if c.Verdict.Outcome != oracle.Pass {
			t.Errorf("%s", c)
		}
	}
}

// The broken Burr example acts before it saves, without a key: the command line catches it
// with no-duplicate-effects wherever an order was filed and not yet saved (a kill after the
// call) or retried without its key (a lost reply, a timeout), and the replay command it prints
// reproduces the failure.
func TestBurrBrokenExampleIsCaughtByTheCLI(t *testing.T) {
	t.Parallel()
	sh := newShell(t)
	out, code, cases := sh.campaign(burr, true, "kill,tool-transient,tool-ambiguous,tool-timeout", "report")
	if code != 1 {
		t.Fatalf("chaoskit run exited %d, want 1:\n%s", code, out)
	}
	var caught, repros []string
	for _, c := range cases {
		if c.breaks(oracle.NoDuplicateEffects) {
			caught, repros = append(caught, c.Schedule), append(repros, c.Repro)
		}
	}
	// A kill at each call's applied beat, and a lost reply or a timeout at each call's sent beat.
	want := "kill@1 kill@5 kill@8 kill@11 kill@14 tool-ambiguous@0 tool-ambiguous@4 tool-ambiguous@7 tool-ambiguous@10 tool-ambiguous@13 tool-timeout@0 tool-timeout@4 tool-timeout@7 tool-timeout@10 tool-timeout@13"
	if got := strings.Join(caught, " "); got != want {
		t.Errorf("no-duplicate-effects under %s\nwant %s", got, want)
	}
	var replay string // the first replay command printed
	for _, line := range strings.Split(out, "\n") {
		if line = strings.TrimSpace(line); strings.HasPrefix(line, "chaoskit replay ") {
			replay = line
			break
		}
	}
	if !slices.Contains(repros, replay) {
		t.Fatalf("printed %q, not the replay command of a duplicate:\n%s", replay, out)
	}
	if out, code := sh.run(replay); code != 1 || !strings.Contains(out, "violated no-duplicate-effects") {
		t.Fatalf("%s\nexited %d, want 1 and no-duplicate-effects:\n%s", replay, code, out)
	}
	sh.clean()
}

// The broken brat example trusts its view on start: a kill between an event's ref update and
// the view's write (at each event's mark) makes it write the event again, or request a second
// session and spawn a second agent.
func TestBratBrokenExampleIsCaught(t *testing.T) {
	needs.Command(t, "git", installGit)
	t.Parallel()
	cases := explore(t, exampleRunner(t, "brat --broken", brat.target(t, true)), faults.Kill)
	var caught []string
	for _, c := range cases {
		if c.Breaks(oracle.SameState) {
			caught = append(caught, c.Schedule.String())
		}
		if c.Schedule.String() == "kill@2" && !(c.Breaks(oracle.NoPhantomEffects) && c.Breaks(oracle.NoLostEffects)) {
			t.Errorf("kill@2 does not spawn the agent of a second session:\n%s", c)
		}
	}
	if want := "kill@1 kill@2 kill@5 kill@7 kill@8"; strings.Join(caught, " ") != want {
		t.Errorf("same-state broken under %v, want %s", caught, want)
	}
}

// The Burr example survives a SIGKILL at every beat and every tool fault at every call: it
// records its intent and key before it acts, retries under the same key, and commits its step
// before it marks it. The plan it records with its intent is not asked of the model again.
func TestBurrExampleSurvivesKillsAndToolFaults(t *testing.T) {
	t.Parallel()
	rn := exampleRunner(t, "burr", burr.target(t, false))
	cases := explore(t, rn, append([]faults.Kind{faults.Kill}, toolFaults...)...)
	restarts, remade := 0, 0
	for _, c := range cases {
		if c.Verdict.Outcome != oracle.Pass {
			t.Errorf("%s", c)
		}
		restarts, remade = restarts+c.Verdict.Metrics.Restarts, remade+c.Verdict.Metrics.ModelCallsRemade
	}
	g, _ := rn.Golden(nil)
	var want []string
	for i, action := range []string{"gather", "plan", "build", "verify", "ship"} {
		if action == "plan" {
			want = append(want, "model plan the loop")
		}
		key := fmt.Sprintf("loop-1:%d:%s", i, action)
		want = append(want, "tool create_po key="+key+" sent", "tool create_po key="+key+" applied", fmt.Sprintf("mark step %d %s", i, action))
	}
	if got := g.Trace(); !slices.Equal(got, want) {
		t.Errorf("golden trace:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if kills := g.Len(); len(cases) != kills+3*5 || restarts != kills || remade != 0 {
		t.Errorf("%d cases, %d restarts, %d model calls made again: want a kill at each of the %d beats (a restart each), 3 tool faults at each of the 5 calls, and no model call made again", len(cases), restarts, remade, kills)
	}
}

// The brat example rebuilds its view from the log on every start: the command line passes it
// under a SIGKILL at every beat and every tool fault.
func TestBratExampleSurvivesKillsThroughTheCLI(t *testing.T) {
	needs.Command(t, "git", installGit)
	t.Parallel()
	sh := newShell(t)
	out, code, cases := sh.campaign(brat, false, "kill,tool-transient,tool-ambiguous,tool-timeout", "report")
	if code != 0 || len(cases) != 10+3 {
		t.Fatalf("chaoskit run exited %d with %d cases, want 0 and 13 (10 beats, 1 call):\n%s", code, len(cases), out)
	}
	sh.clean()
}

// Through the command line, as the example's README runs it: the correct example passes every
// case of kill and the tool faults; the broken one fails under kill with no-duplicate-effects,
// and the first replay command chaoskit prints, run as printed, fails the same way with exit
// code 1. Nothing is left behind.
func TestNodeExampleCLI(t *testing.T) {
	needNode(t)
	bin := filepath.Dir(testbin.Chaoskit(t))
	tmp, dir := t.TempDir(), nodeExampleDir(t)
	scope := leftover.New(tmp)
	env := append(os.Environ(), "PATH="+bin+string(filepath.ListSeparator)+os.Getenv("PATH"), "TMPDIR="+tmp, scope.Env())
	// run runs a shell command line in the example's directory, as a user would type it.
	run := func(line string) (string, int) {
		t.Helper()
		cmd := exec.Command("/bin/sh", "-c", line)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("%s: %v", line, err)
		}
		return string(out), cmd.ProcessState.ExitCode()
	}
	chaoskitRun := func(exec, faults, out string) (string, int) {
		words := []string{"chaoskit", "run"}
		for _, w := range append(nodeExampleCLIFlags(exec), "--faults", faults, "--out", filepath.Join(tmp, out)) {
			words = append(words, campaign.ShellQuote(w))
		}
		return run(strings.Join(words, " "))
	}

	out, code := chaoskitRun("node app.mjs", "kill,tool", "correct")
	rep, err := loadSummary(filepath.Join(tmp, "correct", "report.json"))
	if err != nil || code != 0 || len(rep.Summary.Targets) != 1 {
		t.Fatalf("exit code %d, %v\n%s", code, err, out)
	}
	s := rep.Summary.Targets[0]
	if s.Passed != s.Cases || s.GoldenBeats != 9 {
		t.Fatalf("summary %+v\n%s", s, out)
	}
	// 3 steps of 3 beats: 9 kills, and each tool fault at each of the 3 calls (callback-dup
	// has no asynchronous completion to repeat).
	for kind, n := range map[string]int{"kill": 9, "tool-transient": 3, "tool-ambiguous": 3, "tool-timeout": 3} {
		if got := s.ByFault[kind].Cases; got != n {
			t.Errorf("%d cases of %s, want %d", got, kind, n)
		}
	}

	out, code = chaoskitRun("node app.mjs --broken", "kill", "broken")
	if code != 1 || !strings.Contains(out, "no-duplicate-effects") {
		t.Fatalf("exit code %d, want 1 and no-duplicate-effects:\n%s", code, out)
	}
	var replay string
	for _, line := range strings.Split(out, "\n") {
		if line = strings.TrimSpace(line); strings.HasPrefix(line, "chaoskit replay ") {
			replay = line
			break
		}
	}
	if replay == "" {
		t.Fatalf("no replay command printed:\n%s", out)
	}
	if out, code := run(replay); code != 1 || !strings.Contains(out, "no-duplicate-effects") {
		t.Fatalf("%s\nexit code %d, want 1 and no-duplicate-effects:\n%s", replay, code, out)
	}
	scope.Check(t)
}

// The correct example survives a real SIGKILL at every beat and every tool fault at every call:
// it checkpoints each step before its mark, and retries with a key stable per step.
func TestNodeExampleSurvivesKillsAndToolFaults(t *testing.T) {
	node := needNode(t)
	scope := leftover.New("")
	tg := nodeExample(t, node)
	tg.Env = append(tg.Env, scope.Env())
	rn, err := sim.NewRunner(harness.Fresh(tg), sim.Options{Name: "node/app"})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := rn.Golden(nil)
	if got, want := strings.Join(g.Trace(), "|"), "tool create_po key=po-0-acme sent|tool create_po key=po-0-acme applied|mark step 0 saved|"+
		"tool create_po key=po-1-globex sent|tool create_po key=po-1-globex applied|mark step 1 saved|"+
		"tool create_po key=po-2-initech sent|tool create_po key=po-2-initech applied|mark step 2 saved"; got != want {
		t.Fatalf("golden trace\n%s\nwant\n%s", got, want)
	}
	cases, restarts := passesEveryCase(t, rn, faults.Kill, faults.ToolTransient, faults.ToolAmbiguous, faults.ToolTimeout)
	if cases != 9+3*3 || restarts != 9 {
		t.Fatalf("%d cases, %d restarts: want 9 kills (one restart each) and 3 tool faults of each kind", cases, restarts)
	}
	scope.Check(t)
}

// The broken example acts before it saves, without a key: killed between the two, it files
// the order again. no-duplicate-effects catches it at each call's applied beat, and the case
// replays.
func TestNodeExampleBrokenIsCaught(t *testing.T) {
	node := needNode(t)
	scope := leftover.New("")
	tg := nodeExample(t, node, "--broken")
	tg.Env = append(tg.Env, scope.Env())
	rn, err := sim.NewRunner(harness.Fresh(tg), sim.Options{Name: "node/app --broken"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := caughtUnder(t, rn, oracle.NoDuplicateEffects, faults.Kill), "kill@1 kill@4 kill@7"; got != want {
		t.Fatalf("caught under %q, want %q", got, want)
	}
	if c := rn.Run(faults.Schedule{{Kind: faults.Kill, Beat: 4}}); !c.Breaks(oracle.NoDuplicateEffects) {
		t.Fatalf("kill@4 does not replay: %s", c)
	}
	scope.Check(t)
}

// TestDiskFullProcesses, every diskfull case of each mode.
func TestDiskFullProcessesEveryCase(t *testing.T) { diskFullProcesses(t, 0) }
