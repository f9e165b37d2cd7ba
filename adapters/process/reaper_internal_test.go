package process

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// A zombie counts as gone: chaoskit SIGKILLed while a thread of its waits on its own FUSE mount
// stays a zombie until the mount's connection is aborted, and its reaper must not wait for it.
func TestGoneSeesZombies(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	pid := cmd.Process.Pid
	if gone(pid) {
		t.Fatal("a running process counts as gone")
	}
	syscall.Kill(pid, syscall.SIGKILL) // not waited for: a zombie until cmd.Wait
	for deadline := time.Now().Add(10 * time.Second); !gone(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a zombie does not count as gone")
		}
	}
}
