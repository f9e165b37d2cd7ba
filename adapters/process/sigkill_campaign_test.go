//go:build campaigns

package process_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/adapters/process/fusefs"
	"github.com/chaoskit/chaoskit/internal/leftover"
	"github.com/chaoskit/chaoskit/internal/needs"
)

// chaoskit SIGKILLed at any moment of a FUSE campaign leaves nothing behind: 50 times, a
// campaign of the Burr example on a FUSE disk is killed at a random moment (the golden runs, a
// mount being made or torn down, a case in flight, the state command), and each time chaoskit
// itself is reaped at once (not a zombie stuck on a mount), its helpers exit, and no mount,
// command, cgroup or directory of it is left once its reaper is done.
func TestSIGKILLedChaoskitLeavesNothing(t *testing.T) {
	needs.Err(t, fusefs.Available())
	sh := newShell(t)
	rng := rand.New(rand.NewPCG(19, 4))
	args := []string{"run", "--disk", "fuse", "--faults", "kill,power,torn", "--mode", "random", "--cases", "100000"}
	for _, f := range burr.flags(t, false) {
		args = append(args, f)
	}
	mounted := 0 // kills with a state directory mounted: in the middle of a process
	for i := range 50 {
		cmd := exec.Command(chaoskitCLI(t), append(args, "--out", filepath.Join(sh.tmp, fmt.Sprint("report", i)))...)
		cmd.Dir, cmd.Env = sh.work, sh.env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pid := cmd.Process.Pid
		into := time.Duration(rng.IntN(4000)) * time.Millisecond // from its first moment to well into the cases
		time.Sleep(into)
		helpers := childrenOf(pid)
		if m, _ := fusefs.Mounts(sh.tmp); len(m) > 0 {
			mounted++
		}
		cmd.Process.Signal(syscall.SIGKILL)
		waited := make(chan error, 1)
		go func() { waited <- cmd.Wait() }()
		select {
		case <-waited:
		case <-time.After(30 * time.Second):
			t.Fatalf("kill %d: chaoskit SIGKILLed is not reaped after 30s: a zombie (%s)", i, status(pid))
		}
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			left := sigkillLeftovers(sh, pid, helpers)
			if len(left) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("kill %d, %s into the campaign: left behind:\n%s\nits output:\n%s", i, into, strings.Join(left, "\n"), out.String())
			}
		}
	}
	if mounted < 10 {
		t.Fatalf("only %d of 50 kills came with a disk mounted: the test barely killed chaoskit in a case", mounted)
	}
	t.Logf("%d of 50 kills came with a disk mounted", mounted)
}

// childrenOf returns the pids of the processes whose parent is pid.
func childrenOf(pid int) []int {
	var kids []int
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, s := range stats {
		b, err := os.ReadFile(s)
		if err != nil {
			continue
		}
		if i := bytes.LastIndexByte(b, ')'); i >= 0 {
			if f := strings.Fields(string(b[i+1:])); len(f) > 1 && f[1] == strconv.Itoa(pid) {
				if kid, err := strconv.Atoi(filepath.Base(filepath.Dir(s))); err == nil {
					kids = append(kids, kid)
				}
			}
		}
	}
	return kids
}

// status returns the state line of /proc/PID/status.
func status(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "State:") {
			return line
		}
	}
	return "gone"
}

// sigkillLeftovers lists what the chaoskit process pid, SIGKILLed, left: its helpers still
// running, mounts and directories under the shell's TMPDIR, processes in the shell's work
// directory or carrying a socket under its TMPDIR, and its cgroups.
func sigkillLeftovers(sh *shell, pid int, helpers []int) []string {
	var left []string
	for _, h := range helpers {
		if st := status(h); st != "gone" && !strings.Contains(st, "zombie") {
			left = append(left, fmt.Sprintf("helper %d: %s", h, st))
		}
	}
	left = append(left, leftover.New(sh.tmp).Left()...) // mounts and directories under TMPDIR
	envs, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, e := range envs {
		if b, err := os.ReadFile(e); err == nil && bytes.Contains(b, []byte("CHAOSKIT_SOCKET="+sh.tmp+"/")) {
			left = append(left, "command "+filepath.Base(filepath.Dir(e))+": "+status(atoi(filepath.Base(filepath.Dir(e)))))
		}
	}
	cgroups, _ := filepath.Glob(fmt.Sprintf("/sys/fs/cgroup/unified/chaoskit-%d-*", pid))
	more, _ := filepath.Glob(fmt.Sprintf("/sys/fs/cgroup/chaoskit-%d-*", pid))
	for _, c := range append(cgroups, more...) {
		left = append(left, "cgroup "+c)
	}
	return left
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
