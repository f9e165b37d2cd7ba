package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/adapters/process/fusefs"
	"github.com/chaoskit/chaoskit/internal/leftover"
	"github.com/chaoskit/chaoskit/internal/needs"
	"github.com/chaoskit/chaoskit/internal/testbin"
	"github.com/chaoskit/chaoskit/oracle"
)

// built returns the paths of the chaoskit binary and of the process adapter's test child,
// built once for every test package.
func built(t *testing.T) (cli, child string) {
	t.Helper()
	return testbin.Chaoskit(t), testbin.Build(t, "./adapters/process/testdata/child")
}

// childArgs are the flags of a campaign over the test child in its correct mode.
func childArgs(child string) []string {
	return []string{"--exec", child + " -mode correct", "--name", "orders", "--tool", "create_po=idempotent,latency=1s",
		"--tool", "check=idempotent,async=10m", "--state", child + " -dump-state"}
}

// A campaign over a command leaves no process and no directory behind, and neither does
// chaoskit itself SIGKILLed in the middle of one: its reaper kills the commands' process groups
// and removes its directory.
func TestExecLeavesNothingBehind(t *testing.T) {
	cli, child := built(t)
	tmp := t.TempDir()
	scope := leftover.New(tmp)
	run := func(args ...string) *exec.Cmd {
		cmd := exec.Command(cli, append([]string{"run"}, args...)...)
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp, scope.Env())
		return cmd
	}
	out := filepath.Join(tmp, "report-1")
	if b, err := run(append(childArgs(child), "--faults", "kill,tool", "--out", out)...).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if rep := loadDir(t, out); rep.Summary.Targets[0].Cases != 18 || rep.Summary.Targets[0].Passed != 18 {
		t.Fatalf("summary %+v", rep.Summary.Targets[0].Stats)
	}
	scope.Check(t)

	out = filepath.Join(tmp, "report-2")
	cmd := run(append(childArgs(child), "--faults", "kill", "--mode", "random", "--cases", "100000", "--out", out)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(filepath.Join(out, "cases.jsonl"))
		if bytes.Count(b, []byte("\n")) > 5 && len(scope.Left()) > 1 {
			break // cases are being journaled, and a command runs
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the campaign did not get going: %q", b)
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	scope.Check(t)
	noCgroupsOf(t, cmd.Process.Pid)
}

// noCgroupsOf fails the test if the chaoskit process pid left its cgroup directory (chaoskit-PID-*
// in this process's cgroup v2 directory, where chaoskit makes one per command) once its reaper
// has had a moment.
func noCgroupsOf(t *testing.T, pid int) {
	t.Helper()
	var mnt, own string
	if b, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) > 4 && slices.Contains(f, "cgroup2") && f[slices.Index(f, "-")+1] == "cgroup2" {
				mnt = f[4]
			}
		}
	}
	if b, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if p, ok := strings.CutPrefix(line, "0::"); ok {
				own = p
			}
		}
	}
	if mnt == "" {
		return // no cgroup v2 here: chaoskit made none
	}
	pattern := filepath.Join(mnt, own, fmt.Sprintf("chaoskit-%d-*", pid))
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		left, _ := filepath.Glob(pattern)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("cgroups left behind: %v", left)
		}
	}
}

// A TMPDIR too long for a Unix socket's path under it (107 bytes on Linux) is no reason to
// fail: chaoskit puts its directory in /tmp instead.
func TestExecUnderALongTMPDIR(t *testing.T) {
	cli, child := built(t)
	tmp := filepath.Join(t.TempDir(), strings.Repeat("d", 100))
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "report")
	cmd := exec.Command(cli, append(append([]string{"run"}, childArgs(child)...), "--faults", "kill", "--out", out)...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if rep := loadDir(t, out); rep.Summary.Targets[0].Passed == 0 {
		t.Fatalf("summary %+v", rep.Summary.Targets[0].Stats)
	}
}

// A report records which command ran and a digest of the files it names; resuming a campaign
// whose script changed since is refused, and a gate against a baseline of another campaign is
// too, while a baseline of another version of the same target compares.
func TestProvenanceAndBaselines(t *testing.T) {
	_, child := built(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "harness.sh")
	write := func(body string) {
		if err := os.WriteFile(script, []byte("#!/bin/sh\n# "+body+"\nexec "+child+" -mode correct\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("version 1")
	args := func(out string, more ...string) []string {
		return append([]string{"run", "--exec", "sh " + script, "--name", "po", "--tool", "create_po=idempotent", "--faults", "kill", "--out", out}, more...)
	}
	old := filepath.Join(dir, "old")
	if code, _, errOut := chaoskit(t, args(old)...); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	rep := loadDir(t, old)
	if p := rep.Provenance; p == nil || p.Chaoskit == "" || p.Args[0] != "run" || rep.Options.Commands[0].Digest == "" {
		t.Fatalf("provenance %+v, command %+v", p, rep.Options.Commands)
	}
	write("version 2")
	code, _, errOut := chaoskit(t, "run", "--resume", old)
	if code != exitUsage || !strings.Contains(errOut, "the files of target po changed since its journal was written") {
		t.Fatalf("resuming a changed target: exit %d: %s", code, errOut)
	}
	cur := filepath.Join(dir, "new")
	if code, _, errOut := chaoskit(t, args(cur)...); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if code, out, errOut := chaoskit(t, "gate", "--baseline", old, cur); code != exitOK {
		t.Fatalf("a new version against the old: exit %d: %s%s", code, out, errOut)
	}
	other := filepath.Join(dir, "other")
	if code, _, errOut := chaoskit(t, args(other, "--seed", "2")...); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	code, _, errOut = chaoskit(t, "gate", "--baseline", old, other)
	if code != exitUsage || !strings.Contains(errOut, "is a report of another campaign (seed 2, not 1)") {
		t.Fatalf("a baseline of another seed: exit %d: %s", code, errOut)
	}
}

// The same with the commands' state directories mounted over FUSE: a SIGKILLed chaoskit's
// reaper unmounts them; if the reaper is killed too, the next chaoskit to start finds the stale
// mounts and removes them.
func TestFUSEMountsAreNeverLeft(t *testing.T) {
	needs.Err(t, fusefs.Available())
	cli, child := built(t)
	tmp := t.TempDir()
	scope := leftover.New(tmp)
	start := func(args ...string) *exec.Cmd {
		cmd := exec.Command(cli, append(append([]string{"run"}, childArgs(child)...), args...)...)
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp, scope.Env())
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	running := func(cmd *exec.Cmd) {
		for deadline := time.Now().Add(20 * time.Second); !slices.ContainsFunc(scope.Left(), func(l string) bool { return strings.HasPrefix(l, "mount ") }); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatal("no mount appeared")
			}
		}
	}
	for _, killReaper := range []bool{false, true} {
		cmd := start("--disk", "fuse", "--faults", "kill,power", "--mode", "random", "--cases", "100000", "--out", filepath.Join(tmp, fmt.Sprint("r", killReaper)))
		running(cmd)
		if killReaper {
			for _, pid := range reapers(tmp) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		// Checked after the next run, if the reaper was killed too.
		defer noCgroupsOf(t, cmd.Process.Pid)
		if killReaper { // nobody cleaned up: the next run does, before it starts
			next := exec.Command(cli, "run", "--target", "reference", "--faults", "kill", "--cases", "1", "--out", filepath.Join(tmp, "next"))
			next.Env = append(os.Environ(), "TMPDIR="+tmp, scope.Env())
			if out, err := next.CombinedOutput(); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			// The reference agent is not a command: nothing made it create its root, so start
			// one that is, briefly.
			cmd := start("--faults", "kill", "--out", filepath.Join(tmp, "next-exec"))
			cmd.Wait()
		}
		scope.Check(t)
	}
}

// reapers returns the pids of the reapers watching over directories under tmp.
func reapers(tmp string) []int {
	var pids []int
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, c := range cmdlines {
		b, err := os.ReadFile(c)
		if err == nil && bytes.Contains(b, []byte("\x00__chaoskit-helper\x00reaper\x00"+tmp+"/")) {
			if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(c))); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// A campaign that checked nothing of a fault kind asked for did not pass it: the test child has
// no asynchronous tool here, so callback-dup has no beat to fire at. Every kill case passes, and
// the run still exits 3, naming the target and the kind; the report lists the kind as no_case.
func TestNoCaseOfAKindIsNotAPass(t *testing.T) {
	_, child := built(t)
	out := filepath.Join(t.TempDir(), "report")
	code, stdout, errOut := chaoskit(t, "run", "--exec", child+" -mode correct", "--name", "orders", "--tool", "create_po=idempotent,latency=1s",
		"--tool", "check=idempotent", "--state", child+" -dump-state", "--faults", "kill,callback-dup", "--out", out, "--format", "json")
	want := "nothing was decided for orders under callback-dup: it has no case of them (no beat of its golden run where they apply)"
	if code != exitUnknown || !strings.Contains(errOut, want) {
		t.Fatalf("exit %d, want %d and %q:\n%s%s", code, exitUnknown, want, stdout, errOut)
	}
	rep := loadDir(t, out)
	if s := rep.Summary.Targets[0]; s.Failed != 0 || s.Unknown != 0 || s.Cases == 0 || !slices.Equal(s.NoCase, []string{"callback-dup"}) {
		t.Fatalf("summary %+v, no_case %v", s.Stats, s.NoCase)
	}
}

// A case replays as its campaign ran it: a harness that gives up on a transient tool error fails
// every tool-transient case under --restart never, and passes under the default policy, which
// restarts it. The replay command each case prints names the policy, and reproduces the failure.
func TestReplayCommandsCarryTheRestartPolicy(t *testing.T) {
	_, child := built(t)
	out := filepath.Join(t.TempDir(), "report")
	code, stdout, errOut := chaoskit(t, "run", "--exec", child+" -mode act-then-save", "--name", "quitter", "--tool", "create_po=idempotent,latency=1s",
		"--faults", "tool-transient", "--restart", "never", "--restart-backoff", "5s", "--out", out, "--format", "json")
	if code != exitFail {
		t.Fatalf("exit %d, want 1:\n%s%s", code, stdout, errOut)
	}
	c := loadDir(t, out).Cases[0]
	if c.Verdict != oracle.Fail || !strings.HasSuffix(c.Repro, " --restart never --restart-backoff 5s") {
		t.Fatalf("case %s: %s, repro %q", c.ID, c.Verdict, c.Repro)
	}
	words, err := splitCommand(c.Repro)
	if err != nil {
		t.Fatal(err)
	}
	if code, out, _ := chaoskit(t, words[1:]...); code != exitFail || !strings.Contains(out, "violated completes") {
		t.Errorf("%s: exit %d, want the failure again:\n%s", c.Repro, code, out)
	}
	policy := slices.Index(words, "--restart")
	if code, out, _ := chaoskit(t, words[1:policy]...); code != exitOK {
		t.Errorf("the same replay under the default policy: exit %d, want a pass:\n%s", code, out)
	}
}

// A command on a FUSE disk whose file operations differ from run to run is refused as not
// deterministic, and told that --beats calls lifts that.
func TestNondeterministicFilesSuggestBeatsCalls(t *testing.T) {
	needs.Err(t, fusefs.Available())
	code, out, errOut := chaoskit(t, "run", "--exec", `sh -c 'echo x > "$CHAOSKIT_STATE_DIR/tmp.$$"'`, "--name", "tmp", "--disk", "fuse", "--faults", "kill", "--out", t.TempDir())
	const advice = "(if tmp's file operations are what differs from run to run: name temporary files without randomness or the pid, as NAME.tmp, and keep logs out of the state directory; else --beats calls makes only its requests beats"
	if code != exitUnknown || !strings.Contains(errOut, "tmp: target is not deterministic: two golden runs diverge at beat 0") ||
		!strings.Contains(errOut, advice) {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	// run --list, which the pytest plugin and the node:test helper call first, says the same.
	code, out, errOut = chaoskit(t, "run", "--list", "--exec", `sh -c 'echo x > "$CHAOSKIT_STATE_DIR/tmp.$$"'`, "--name", "tmp", "--disk", "fuse", "--faults", "kill")
	if code != exitUnknown || !strings.Contains(errOut, advice) {
		t.Fatalf("run --list: exit %d\n%s%s", code, out, errOut)
	}
}

// A command line is split as a shell splits it, but no shell runs it: an unquoted operator is
// refused (TestBadInput), and a quoted one is an argument like any other.
func TestExecSplitsWithoutAShell(t *testing.T) {
	for line, want := range map[string][]string{
		"sh -c 'python3 app.py | cat'": {"sh", "-c", "python3 app.py | cat"},
		`grep "|" log`:                 {"grep", "|", "log"},
		`echo \; '>' "&&"`:             {"echo", ";", ">", "&&"},
		"python3 app.py --level=>3":    {"python3", "app.py", "--level=>3"},
	} {
		if got, err := splitCommand(line); err != nil || !slices.Equal(got, want) {
			t.Errorf("splitCommand(%q) = %q, %v; want %q", line, got, err, want)
		}
	}
}

// What a command printed before it failed, a traceback say, is quoted on stderr as the lines it
// printed, indented, after the error's one line, which ends with its last line.
func TestFailureQuotesTheOutputAsLines(t *testing.T) {
	script := `printf 'Traceback (most recent call last):\n  File "app.py", line 3\n\033[31mValueError: boom\033[0m\n' >&2; exit 1`
	code, _, errOut := chaoskit(t, "run", "--exec", joinCommand([]string{"sh", "-c", script}), "--out", t.TempDir())
	want := `chaoskit: sh -c ` + script + `: golden run failed: exited with status 1; its output ends: "\x1b[31mValueError: boom\x1b[0m"
    Traceback (most recent call last):
      File "app.py", line 3
    \x1b[31mValueError: boom\x1b[0m
`
	if code != exitUsage || errOut != want {
		t.Fatalf("exit %d, stderr:\n%s\nwant exit 2 and:\n%s", code, errOut, want)
	}
}

// A deploy's grace period (--grace) is recorded in the report and given in each case's replay
// command, which replays the case under it. The child dies of the SIGTERM (Go's default) with its
// call in flight (sent, its 1s latency not over): the call dies with it, as when a command exits
// with a call in flight, and the next version makes it.
func TestReplayCommandsCarryTheGracePeriod(t *testing.T) {
	_, child := built(t)
	out := filepath.Join(t.TempDir(), "report")
	args := append(childArgs(child), "--upgrade-exec", child+" -mode correct", "--faults", "upgrade", "--only", "orders:upgrade@3",
		"--grace", "5s", "--out", out, "--format", "json")
	if code, stdout, errOut := chaoskit(t, append([]string{"run"}, args...)...); code != exitOK {
		t.Fatalf("exit %d, want 0:\n%s%s", code, stdout, errOut)
	}
	rep := loadDir(t, out)
	c := rep.Cases[0]
	if rep.Options.Grace != "5s" || !strings.HasSuffix(c.Repro, " --grace 5s") {
		t.Fatalf("grace %q recorded, case %s replayed by %q; want 5s, and --grace 5s", rep.Options.Grace, c.ID, c.Repro)
	}
	words, err := splitCommand(c.Repro)
	if err != nil {
		t.Fatal(err)
	}
	code, replayed, _ := chaoskit(t, append(words[1:], "--trace")...)
	for _, want := range []string{"upgrade@3: process 0 asked to stop (SIGTERM), killed if still running in 5s",
		"process 0 stopped within the deploy's grace period (failed: killed by signal terminated)"} {
		if !strings.Contains(replayed, want) {
			t.Errorf("the replay's trace does not say %q", want)
		}
	}
	if next := regexp.MustCompile(`\n\s*4\s+p(\d)\s`).FindStringSubmatch(replayed); code != exitOK || next == nil || next[1] != "1" {
		t.Errorf("%s: exit %d, want a pass with beat 4 the next version's:\n%s", c.Repro, code, replayed)
	}
}

// Several --exec, each with its next version: --upgrade-exec and --upgrade-state pair with them
// in order, and each target's upgrade case deploys its own.
func TestUpgradeExecPairsWithEachExec(t *testing.T) {
	_, child := built(t)
	out := filepath.Join(t.TempDir(), "report")
	code, stdout, errOut := chaoskit(t, "run", "--exec", child+" -mode correct", "--name", "a", "--exec", child+" -mode correct", "--name", "b",
		"--tool", "create_po=idempotent,latency=1s", "--tool", "check=idempotent,async=10m", "--state", child+" -dump-state",
		"--upgrade-exec", child+" -mode correct", "--upgrade-exec", child+" -mode act-then-save",
		"--upgrade-state", child+" -dump-state", "--upgrade-state", child+" -dump-state",
		"--faults", "upgrade", "--only", "a:upgrade@3", "--only", "b:upgrade@3", "--out", out, "--format", "json")
	if code != exitOK && code != exitFail { // b's next version saves after it acts: it may fail
		t.Fatalf("exit %d, want 0 or 1:\n%s%s", code, stdout, errOut)
	}
	rep := loadDir(t, out)
	var next []string
	for _, cmd := range rep.Options.Commands {
		next = append(next, cmd.Name+": "+strings.Join(cmd.Upgrade[1:], " "))
	}
	if want := []string{"a: -mode correct", "b: -mode act-then-save"}; !slices.Equal(next, want) || len(rep.Cases) != 2 {
		t.Errorf("next versions %q, %d cases; want %q and 2", next, len(rep.Cases), want)
	}
	for _, c := range rep.Cases {
		if want := map[string]string{"a": "-mode correct", "b": "-mode act-then-save"}[c.Target]; !strings.Contains(c.Repro, "--upgrade-exec '"+child+" "+want+"'") {
			t.Errorf("case %s replays with %q, want the next version %q", c.ID, c.Repro, want)
		}
	}
}
