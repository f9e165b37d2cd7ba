package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/internal/leftover"
)

// SIGTERM stops a golden run that would never end: chaoskit kills the command's processes itself
// (its reaper, which would otherwise do it once chaoskit is gone, is killed first), keeps the
// journal and exits 143, saying how to continue.
func TestSignalStopsAnEndlessGoldenRun(t *testing.T) {
	command, child, tmp, scope := scoped(t)
	out := filepath.Join(tmp, "report")
	cmd := command("run", "--exec", child+" -mode endless", "--name", "endless", "--faults", "kill", "--out", out)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, cmd, "the endless command to run", func() bool {
		return slices.ContainsFunc(scope.Left(), func(l string) bool { return strings.HasSuffix(l, ": "+child+" -mode endless") })
	})
	interrupt(t, cmd, syscall.SIGTERM, tmp, scope)
	wantIn(t, "stderr", stderr.String(), "chaoskit: campaign interrupted before its cases started: stopped by SIGTERM (continue it with chaoskit run --resume "+out+")")
	if _, err := os.Stat(filepath.Join(out, "cases.jsonl")); err != nil {
		t.Fatalf("no journal to resume: %v", err)
	}
}

// A signal in a golden run or in a case of a campaign over a command stops it at once, leaving
// no process and no mount, and exits 128 plus the signal's number; --resume then completes the
// campaign, with the report an uninterrupted run writes. The command waits at a gate the test
// opens (adapters/process/testdata/child -mode gated), so that the signal lands where it must.
func TestSignalThenResume(t *testing.T) {
	testSignalThenResume(t, []syscall.Signal{syscall.SIGTERM}, []string{"golden run"}, []string{"plain"})
}

// testSignalThenResume runs, for each disk, an uninterrupted campaign, then for each signal and
// each moment a campaign stopped by the signal at that moment and resumed, and compares.
func testSignalThenResume(t *testing.T, sigs []syscall.Signal, moments, disks []string) {
	start, child, tmp, scope := scoped(t)
	gate := filepath.Join(tmp, "gate")
	for _, disk := range disks {
		// GATE_FROM is in the campaign's identity: both moments' campaigns are run with each value
		// uninterrupted, to compare with.
		args := func(from int, out string) []string {
			return []string{"run", "--exec", child + " -mode gated", "--name", "orders", "--env", "GATE=" + gate, "--env", fmt.Sprint("GATE_FROM=", from),
				"--tool", "create_po=idempotent,latency=1s", "--state", child + " -dump-state", "--faults", "tool,kill", "--cases", "6", "--disk", disk, "--out", out}
		}
		setGate := func(open bool) {
			os.RemoveAll(gate)
			if err := os.Mkdir(gate, 0o755); err != nil {
				t.Fatal(err)
			}
			if open {
				if err := os.WriteFile(filepath.Join(gate, "open"), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		want := map[int]string{}
		for from := range 2 {
			setGate(true)
			out := filepath.Join(tmp, fmt.Sprint(disk, "-uninterrupted-", from))
			if b, err := start(args(from, out)...).CombinedOutput(); err != nil {
				t.Fatalf("%v\n%s", err, b)
			}
			want[from] = withoutMs(t, filepath.Join(out, "report.json"))
		}
		for _, sig := range sigs {
			for _, moment := range moments {
				t.Run(fmt.Sprintf("%s/%s/%s", disk, signalled{sig}.name(), moment), func(t *testing.T) {
					from := map[string]int{"golden run": 0, "cases": 1}[moment]
					setGate(false)
					out := filepath.Join(tmp, strings.ReplaceAll(t.Name(), "/", "-"))
					cmd := start(args(from, out)...)
					var stderr strings.Builder
					cmd.Stderr = &stderr
					if err := cmd.Start(); err != nil {
						t.Fatal(err)
					}
					waiting := regexp.MustCompile(fmt.Sprintf(`^waiting-[%d-9]`, from))
					waitFor(t, cmd, "a process to wait at the gate", func() bool {
						entries, _ := os.ReadDir(gate)
						return slices.ContainsFunc(entries, func(e os.DirEntry) bool { return waiting.MatchString(e.Name()) })
					})
					interrupt(t, cmd, sig, tmp, scope)
					wantIn(t, "stderr", stderr.String(), "stopped by "+signalled{sig}.name(), "chaoskit run --resume "+out)

					setGate(true)
					if b, err := start("run", "--resume", out).CombinedOutput(); err != nil {
						t.Fatalf("resuming: %v\n%s", err, b)
					}
					if got := withoutMs(t, filepath.Join(out, "report.json")); got != want[from] {
						t.Fatalf("resumed, the report differs from an uninterrupted run's:\n%s\nwant\n%s", got, want[from])
					}
				})
			}
		}
	}
	scope.Check(t) // the resumed runs removed what the killed reapers left
}

// scoped returns what a test of chaoskit over the test child needs: a function that makes a
// chaoskit command of the given arguments, with TMPDIR a temporary directory of the test and
// marked as its scope's; the child's path; the directory; and the scope.
func scoped(t *testing.T) (command func(args ...string) *exec.Cmd, child, tmp string, scope *leftover.Scope) {
	cli, child := built(t)
	tmp = t.TempDir()
	scope = leftover.New(tmp)
	return func(args ...string) *exec.Cmd {
		cmd := exec.Command(cli, args...)
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp, scope.Env())
		return cmd
	}, child, tmp, scope
}

// waitFor waits for cond, failing the test (and killing cmd) if it does not hold within a
// minute: a bound on a wait, not a measurement.
func waitFor(t *testing.T, cmd *exec.Cmd, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("waited a minute for %s", what)
		}
	}
}

// interrupt kills the reapers of chaoskit cmd (which would otherwise clean up after it once it
// is gone), sends it sig, and checks that it exits 128 plus the signal's number, having killed
// every process of the scope and unmounted every mount itself.
func interrupt(t *testing.T, cmd *exec.Cmd, sig syscall.Signal, tmp string, scope *leftover.Scope) {
	t.Helper()
	for _, pid := range reapers(tmp) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	select {
	case <-exited:
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		<-exited
		t.Fatalf("chaoskit went on for a minute after %s", signalled{sig}.name())
	}
	if code, want := cmd.ProcessState.ExitCode(), exitSignal+int(sig); code != want {
		t.Fatalf("exit %d after %s, want %d", code, signalled{sig}.name(), want)
	}
	var left []string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		left = slices.DeleteFunc(scope.Left(), func(l string) bool { return strings.HasPrefix(l, "directory ") }) // the reapers' to remove
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s, chaoskit left:\n%s", signalled{sig}.name(), strings.Join(left, "\n"))
		}
	}
}
