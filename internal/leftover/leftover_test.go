package leftover_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/internal/leftover"
)

// start runs a shell that starts `sleep 60` in a session of its own and prints its pid; it
// returns the sleep's pid and a function that kills both.
func start(t *testing.T, env []string) (int, func()) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", "setsid sleep 60 & echo $!; exec sleep 60")
	cmd.Env = env
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("the shell printed %q", line)
	}
	stop := func() { syscall.Kill(pid, syscall.SIGKILL); cmd.Process.Kill(); cmd.Wait() }
	t.Cleanup(stop)
	return pid, stop
}

// A process started with the scope's mark, and its child that left the session, are the
// scope's; the same commands started without the mark are not. Once they are gone, and the
// directory too, Check passes.
func TestScopeSeesOnlyItsOwnProcesses(t *testing.T) {
	tmp := t.TempDir()
	s := leftover.New(tmp)
	mine, stop := start(t, append(os.Environ(), s.Env()))
	start(t, os.Environ())
	dir := filepath.Join(tmp, "chaoskit-123")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var left []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		left = s.Left() // setsid execs sleep a moment after the shell prints its pid
		if len(left) == 3 && strings.Contains(strings.Join(left, "\n"), "process "+strconv.Itoa(mine)+": sleep 60") || time.Now().After(deadline) {
			break
		}
	}
	want := []string{"process " + strconv.Itoa(mine) + ": sleep 60", "directory " + dir}
	for _, w := range want {
		if !strings.Contains(strings.Join(left, "\n"), w) {
			t.Errorf("Left does not list %q: %q", w, left)
		}
	}
	if len(left) != 3 { // the two sleeps of the marked shell, and the directory
		t.Fatalf("want 3 things left, got %q", left)
	}
	if other := leftover.New(""); len(other.Left()) != 0 {
		t.Fatalf("another scope owns %q", other.Left())
	}
	stop()
	os.Remove(dir)
	s.Check(t)
}
