package process_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/adapters/process"
	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
)

// nodeExampleDir is the Node example's directory, examples/node, as an absolute path.
func nodeExampleDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("examples", "node"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// nodeExample returns the Node example as a target: correct, or with args such as --broken.
func nodeExample(t *testing.T, node string, args ...string) process.Target {
	return process.Target{
		Argv:      append([]string{node, "app.mjs"}, args...),
		Dir:       nodeExampleDir(t),
		ToolList:  []harness.Tool{{Name: "create_po", Contract: harness.IdempotentByKey, Latency: time.Second}},
		StateArgv: []string{node, "app.mjs", "--dump-state"},
	}
}

// nodeExampleCLIFlags are the flags of chaoskit run that make the Node example a target, as
// its README gives them.
func nodeExampleCLIFlags(exec string) []string {
	return []string{"--exec", exec, "--tool", "create_po=idempotent-by-key,latency=1s", "--state", "node app.mjs --dump-state"}
}

// The correct example survives a real SIGKILL at every beat and every tool fault at every call:
// it checkpoints each step before its mark, and retries with a key stable per step.
func TestNodeExampleSurvivesKillsAndToolFaults(t *testing.T) {
	node := needNode(t)
	rn, err := harness.NewRunner(harness.Fresh(nodeExample(t, node)), harness.Options{Name: "node/app"})
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
	noNodeLeftovers(t, nodeExampleDir(t))
}

// The broken example acts before it saves, without a key: killed between the two, it files
// the order again. no-duplicate-effects catches it at each call's applied beat, and the case
// replays.
func TestNodeExampleBrokenIsCaught(t *testing.T) {
	node := needNode(t)
	rn, err := harness.NewRunner(harness.Fresh(nodeExample(t, node, "--broken")), harness.Options{Name: "node/app --broken"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := caughtUnder(t, rn, oracle.NoDuplicateEffects, faults.Kill), "kill@1 kill@4 kill@7"; got != want {
		t.Fatalf("caught under %q, want %q", got, want)
	}
	if c := rn.Run(faults.Schedule{{Kind: faults.Kill, Beat: 4}}); !c.Breaks(oracle.NoDuplicateEffects) {
		t.Fatalf("kill@4 does not replay: %s", c)
	}
	noNodeLeftovers(t, nodeExampleDir(t))
}

// Through the command line, as the example's README runs it: the correct example passes every
// case of kill and the tool faults; the broken one fails under kill with no-duplicate-effects,
// and the first replay command chaoskit prints, run as printed, fails the same way with exit
// code 1. Nothing is left behind.
func TestNodeExampleCLI(t *testing.T) {
	needNode(t)
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "chaoskit"), "./cmd/chaoskit")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building chaoskit: %v\n%s", err, out)
	}
	tmp, dir := t.TempDir(), nodeExampleDir(t)
	env := append(os.Environ(), "PATH="+bin+string(filepath.ListSeparator)+os.Getenv("PATH"), "TMPDIR="+tmp)
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
	noNodeLeftovers(t, dir)
	if left, _ := filepath.Glob(filepath.Join(tmp, "chaoskit-*")); len(left) > 0 {
		t.Fatalf("left behind: %v", left)
	}
}

// reportSummary is the part of a report.json (chaoskit.report/v1) the tests read: each
// target's totals, overall and by fault kind.
type reportSummary struct {
	Summary struct {
		Targets []struct {
			GoldenBeats   int `json:"golden_beats"`
			Cases, Passed int
			ByFault       map[string]struct{ Cases, Passed int } `json:"by_fault"`
		}
	}
}

// loadSummary reads the summary of a report.json, leniently: only the fields of
// reportSummary, whatever else the report holds.
func loadSummary(path string) (*reportSummary, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r reportSummary
	return &r, json.Unmarshal(b, &r)
}

// noNodeLeftovers fails the test if a process still runs in dir (a node the campaign started),
// once the reaper has had a moment.
func noNodeLeftovers(t *testing.T, dir string) {
	t.Helper()
	var left []string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		left = left[:0]
		links, _ := filepath.Glob("/proc/[0-9]*/cwd")
		for _, l := range links {
			if cwd, err := os.Readlink(l); err == nil && cwd == dir {
				b, _ := os.ReadFile(filepath.Join(filepath.Dir(l), "cmdline"))
				left = append(left, filepath.Base(filepath.Dir(l))+": "+string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes left running in %s:\n%s", dir, strings.Join(left, "\n"))
		}
	}
}
