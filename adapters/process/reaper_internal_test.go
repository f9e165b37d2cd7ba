package process

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/adapters/process/fusefs"
	"github.com/chaoskit/chaoskit/internal/needs"
	"github.com/spf13/afero"
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

// A process's directory is never removed over a FUSE mount still in it (an unmount that failed):
// os.RemoveAll would delete the mounted disk's files through the mount. The reaper, which
// detaches mounts first, removes it later.
func TestRemoveUnmountedLeavesAMountedDirectory(t *testing.T) {
	needs.Err(t, fusefs.Available())
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	disk := afero.NewMemMapFs()
	afero.WriteFile(disk, "keep", []byte("mine"), 0o644)
	srv, err := fusefs.Mount(state, disk, fusefs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Unmount()
	if err := removeUnmounted(dir); err == nil || !strings.Contains(err.Error(), "still mounted") {
		t.Fatalf("removeUnmounted over a mount: %v", err)
	}
	if b, err := afero.ReadFile(disk, "keep"); err != nil || string(b) != "mine" {
		t.Fatalf("the mounted disk lost its file: %q, %v", b, err)
	}
	if err := srv.Unmount(); err != nil {
		t.Fatal(err)
	}
	if err := removeUnmounted(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("%s is still there: %v", dir, err)
	}
}
