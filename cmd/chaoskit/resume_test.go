package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A campaign SIGKILLed halfway (once 300 of its 600 cases are journaled), by the kernel and for real, resumes to the report an
// uninterrupted run writes.
func TestResumeAfterSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds chaoskit and runs a campaign three times")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "chaoskit")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	campaign := []string{"run", "--target", "reference,reference/act-then-save,reference/no-fsync", "--faults", "storage",
		"--mode", "random", "--cases", "200", "--workers", "1", "--format", "json"}
	chaoskit := func(args ...string) *exec.Cmd {
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = new(bytes.Buffer), new(bytes.Buffer)
		return cmd
	}
	exitCode := func(cmd *exec.Cmd) int {
		err := cmd.Run()
		if _, ok := err.(*exec.ExitError); err != nil && !ok {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode()
	}

	whole := filepath.Join(dir, "whole")
	start := time.Now()
	if code := exitCode(chaoskit(append(campaign, "--out", whole)...)); code != exitFail {
		t.Fatalf("uninterrupted run: exit %d", code)
	}
	took := time.Since(start)

	killed := filepath.Join(dir, "killed")
	cmd := chaoskit(append(campaign, "--out", killed)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	journal := filepath.Join(killed, "cases.jsonl")
	lines := 0
	for deadline := time.Now().Add(time.Minute); lines < 300; time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the campaign journaled nothing in a minute")
		}
		b, _ := os.ReadFile(journal)
		lines = bytes.Count(b, []byte("\n"))
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the campaign was not killed but ended: %v (it took %v uninterrupted)", err, took)
	}
	if _, err := os.Stat(filepath.Join(killed, "report.json")); err == nil {
		t.Fatal("the killed campaign wrote its report")
	}
	b, _ := os.ReadFile(journal)
	done := bytes.Count(b, []byte("\n")) - 1
	if done >= 600 {
		t.Fatalf("the campaign had journaled all its %d cases", done)
	}

	resume := chaoskit("run", "--resume", killed)
	if code := exitCode(resume); code != exitFail {
		t.Fatalf("resume: exit %d\n%s", code, resume.Stderr)
	}
	if !strings.Contains(resume.Stderr.(*bytes.Buffer).String(), "cases failed") {
		t.Errorf("resume: stderr %q", resume.Stderr)
	}
	sameReport(t, filepath.Join(whole, "report.json"), filepath.Join(killed, "report.json"))
	t.Logf("killed after %d of 600 cases; the uninterrupted campaign took %v", done, took.Round(time.Millisecond))
}
