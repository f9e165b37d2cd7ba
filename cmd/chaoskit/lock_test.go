package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A second campaign given the report directory of one under way fails at once, in one line
// naming the directory and the other run's pid, and leaves the first's journal alone; a lock
// file a run that died left behind (no process holds its lock) is taken over; a run removes its
// lock when it ends.
func TestReportDirectoryIsLocked(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "report")
	run := []string{"run", "--target", "reference", "--faults", "kill", "--cases", "3", "--format", "json", "--out", dir}
	if code, _, errOut := chaoskit(t, run...); code != exitOK { // a journal, for --resume
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lock := filepath.Join(dir, lockName)
	f, err := os.OpenFile(lock, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	f.WriteString("4242\n")
	code, _, errOut := chaoskit(t, run...)
	want := "chaoskit: " + dir + " is the report directory of another chaoskit run, pid 4242, under way (it holds " + lock + "): wait for it to end, or give another --out\n"
	if code != exitUsage || errOut != want {
		t.Errorf("a run into a locked directory: exit %d, stderr %q; want exit 2 and %q", code, errOut, want)
	}
	code, _, errOut = chaoskit(t, "run", "--resume", dir)
	if code != exitUsage || !strings.Contains(errOut, "pid 4242") {
		t.Errorf("--resume of a locked directory: exit %d, stderr %q", code, errOut)
	}
	f.Close() // as a run that died: the kernel drops its lock, its file stays
	if code, _, errOut := chaoskit(t, run...); code != exitOK {
		t.Fatalf("a run over a stale lock file: exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(lock); err == nil {
		t.Error("the run left its lock file")
	}

	// Two real processes: the second fails while the first runs, and the first's report is whole.
	cli, _ := built(t)
	first := exec.Command(cli, "run", "--target", "reference", "--faults", "storage", "--format", "json", "--out", dir)
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	pid := strconv.Itoa(first.Process.Pid)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(lock); strings.TrimSpace(string(b)) == pid {
			break
		}
		if time.Now().After(deadline) {
			first.Process.Kill()
			t.Fatal("the first run never took its lock")
		}
	}
	second := exec.Command(cli, run...)
	out, _ := second.CombinedOutput()
	if second.ProcessState.ExitCode() != exitUsage || !strings.Contains(string(out), "pid "+pid+", under way") {
		t.Errorf("the second run: exit %d, %q", second.ProcessState.ExitCode(), out)
	}
	if err := first.Wait(); err != nil {
		t.Fatalf("the first run: %v", err)
	}
	loadDir(t, dir) // whole: its trailer checks out
}
