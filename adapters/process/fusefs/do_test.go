package fusefs_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/adapters/process/fusefs"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/internal/needs"
)

// sim runs ops one at a time on a goroutine of its own, as chaoskit's simulation runs a target.
// An op that ends the goroutine (runtime.Goexit) ends the simulation: later Do calls block
// forever, unless returnWhenDead is set, in which case they return without running their op.
type sim struct {
	ops            chan func()
	gid            atomic.Int64 // the goroutine's id
	died           chan struct{}
	returnWhenDead bool
}

func newSim() *sim {
	s := &sim{ops: make(chan func()), died: make(chan struct{})}
	started := make(chan struct{})
	go func() {
		s.gid.Store(goid())
		close(started)
		for op := range s.ops {
			op()
		}
	}()
	<-started
	return s
}

func (s *sim) Do(op func()) {
	done := make(chan struct{})
	wrapped := func() {
		ok := false
		defer func() {
			if !ok { // op ended the goroutine
				close(s.died)
			}
			close(done)
		}()
		op()
		ok = true
	}
	if s.returnWhenDead {
		select {
		case s.ops <- wrapped:
		case <-s.died:
			return
		}
	} else {
		s.ops <- wrapped
	}
	<-done
}

// goid returns the id of the calling goroutine.
func goid() int64 {
	b := make([]byte, 64)
	b = b[:runtime.Stack(b, false)]
	f := strings.Fields(string(b))
	id, _ := strconv.ParseInt(f[1], 10, 64)
	return id
}

func TestDoRunsEveryCallOnOneGoroutine(t *testing.T) {
	s := newSim()
	var mu sync.Mutex
	calls, elsewhere := 0, []string{}
	trace := func(c fusefs.Call) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if goid() != s.gid.Load() {
			elsewhere = append(elsewhere, c.String())
		}
	}
	disk := faults.NewDisk(faults.DiskOptions{})
	_, dir := mount(t, faults.New(disk, nil), fusefs.Options{Do: s.Do, Trace: trace})

	// Four writers at once, so that the kernel sends requests concurrently.
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 10 {
				name := filepath.Join(dir, fmt.Sprintf("w%d-%d", w, i))
				if err := os.WriteFile(name, []byte(name), 0o644); err != nil {
					t.Error(err)
					return
				}
				if _, err := os.ReadFile(name); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if n := len(readNames(t, dir)); n != 40 {
		t.Errorf("%d files, want 40", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls < 40*4 {
		t.Errorf("only %d calls traced", calls)
	}
	if len(elsewhere) > 0 {
		t.Errorf("%d of %d calls ran off the simulation's goroutine, e.g. %v", len(elsewhere), calls, elsewhere[0])
	}
}

// crashAt returns an injector that ends the simulation's goroutine (as chaoskit's harness does
// at a crash beat) at the first write to path, and a channel closed when it did.
func crashAt(path string) (*recorder, chan struct{}) {
	crashed := make(chan struct{})
	return &recorder{hook: func(op faults.Op, n int) *faults.Fault {
		if op.Kind == faults.OpWrite && op.Path == path {
			close(crashed)
			runtime.Goexit()
		}
		return nil
	}}, crashed
}

// A crash at a beat of a child process: the crashing write fails with EIO, the child's next
// request waits forever in a Do that never returns, the child is SIGKILLed and stays in the
// kernel until Unmount answers its request, and then everything ends.
func TestCrashInDoThatNeverReturns(t *testing.T) {
	sh := needs.Command(t, "sh", "apt-get install sh")
	s := newSim()
	rec, crashed := crashAt("boom")
	disk := faults.NewDisk(faults.DiskOptions{})
	srv, dir := mount(t, faults.New(disk, rec), fusefs.Options{Do: s.Do})

	// The child changes into the mount itself: a working directory on the mount set by the
	// serving process (exec.Cmd.Dir) can deadlock it (see the package documentation).
	cmd := exec.Command(sh, "-c", `cd "$1" && { echo a > f1; echo b > boom; echo c > f2; }`, "sh", dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	must(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-crashed:
	case err := <-exited:
		t.Fatalf("the child exited (%v) before the crash beat", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no crash within 10 s")
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)

	start := time.Now()
	unmount(t, srv)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Unmount took %v", d)
	}
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Fatal("the killed child did not exit after Unmount")
	}
	if got, _ := readDisk(t, disk, "f1"); got != "a\n" {
		t.Errorf("f1 = %q", got)
	}
	if got, ok := readDisk(t, disk, "boom"); !ok || got != "" {
		t.Errorf("boom = %q (exists %v), want created and empty: the crash came at its write", got, ok)
	}
	if _, ok := readDisk(t, disk, "f2"); ok {
		t.Error("f2 exists: something ran after the crash")
	}
}

// A Do that gives up on ops once the simulation is dead: every request after the crash fails
// with EIO, and the child ends on its own.
func TestCrashInDoThatReturns(t *testing.T) {
	sh := needs.Command(t, "sh", "apt-get install sh")
	s := newSim()
	s.returnWhenDead = true
	rec, crashed := crashAt("boom")
	disk := faults.NewDisk(faults.DiskOptions{})
	_, dir := mount(t, faults.New(disk, rec), fusefs.Options{Do: s.Do})

	cmd := exec.Command(sh, "-c", `cd "$1" && { echo a > f1; echo b > boom; echo c > f2; }`, "sh", dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	done := make(chan error, 1)
	must(t, cmd.Start())
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the child did not end within 10 s")
	}
	<-crashed
	if !strings.Contains(stderr.String(), "Input/output error") {
		t.Errorf("the child's errors do not show EIO:\n%s", stderr.String())
	}
	if _, ok := readDisk(t, disk, "f2"); ok {
		t.Error("f2 exists: something ran after the crash")
	}
}

func TestPanicInFsysIsEIO(t *testing.T) {
	rec := &recorder{hook: func(op faults.Op, n int) *faults.Fault {
		if op.Kind == faults.OpMkdir {
			panic("injector bug")
		}
		return nil
	}}
	needs.Err(t, fusefs.Available())
	dir := mountDir(t)
	srv, err := fusefs.Mount(dir, faults.New(faults.NewDisk(faults.DiskOptions{}), rec), fusefs.Options{})
	must(t, err)
	t.Cleanup(func() {
		srv.Unmount() // reports the panic, which the test checks
		if left, _ := fusefs.Mounts(dir); len(left) > 0 {
			t.Errorf("still mounted: %v", left)
		}
	})
	wantErrno(t, "mkdir when fsys panics", os.Mkdir(filepath.Join(dir, "d"), 0o755), syscall.EIO)
	must(t, os.WriteFile(filepath.Join(dir, "f"), []byte("still serving"), 0o644))
	err = srv.Unmount()
	if err == nil || !strings.Contains(err.Error(), "injector bug") {
		t.Errorf("Unmount = %v, want the panic reported", err)
	}
	if again := srv.Unmount(); again != err {
		t.Errorf("second Unmount = %v, want the first one's result", again)
	}
}

func TestUnmountIsIdempotent(t *testing.T) {
	srv, dir := mount(t, faults.New(faults.NewDisk(faults.DiskOptions{}), nil), fusefs.Options{})
	f, err := os.Create(filepath.Join(dir, "held"))
	must(t, err)
	defer f.Close() // held open across Unmount: the mount is busy and comes off by force
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			if err := srv.Unmount(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if left, _ := fusefs.Mounts(dir); len(left) > 0 {
		t.Errorf("still mounted: %v", left)
	}
	want := syscall.ENOTCONN // the connection was aborted
	if !canAbort() {
		want = syscall.EIO // only detached: the server still answers, with EIO
	}
	if _, err := f.WriteString("x"); !errors.Is(err, want) {
		t.Errorf("a write through a descriptor of the unmounted filesystem: %v, want %v", err, want)
	}
}

// TestHelperProcess is not a test: other tests run the test binary with it to mount a
// filesystem in a process of its own. With FUSEFS_HELPER_HOLD set, the process opens a file on
// its mount, unmounts with the file still open, and exits without closing it; otherwise it
// waits to be killed.
func TestHelperProcess(t *testing.T) {
	dir := os.Getenv("FUSEFS_HELPER_MOUNT")
	if dir == "" {
		t.Skip("helper process for TestCleanupRemovesStaleMounts and TestExitWithAFileOpenOnTheMount")
	}
	srv, err := fusefs.Mount(dir, faults.New(faults.NewDisk(faults.DiskOptions{}), nil), fusefs.Options{})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	if os.Getenv("FUSEFS_HELPER_HOLD") != "" {
		f, err := os.Create(filepath.Join(dir, "held"))
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("unmount:", srv.Unmount())
		os.Exit(int(f.Fd()) * 0) // the kernel closes f at exit: a FLUSH to the server that is gone
	}
	fmt.Println("mounted")
	select {}
}

// A process that exits with a file open on a mount it served and unmounted must not hang: at
// exit the kernel flushes the file, and no goroutine of the process is left to answer. Unmount
// aborts the connection, so the flush fails at once.
func TestExitWithAFileOpenOnTheMount(t *testing.T) {
	needs.Err(t, fusefs.Available())
	if !canAbort() {
		needs.Missing(t, "not root and no fusectl at /sys/fs/fuse/connections: Unmount cannot abort a busy connection, so a process must close its files on its mount before exiting")
	}
	dir := mountDir(t)
	t.Cleanup(func() { fusefs.Cleanup(filepath.Dir(dir)) })
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "FUSEFS_HELPER_MOUNT="+dir, "FUSEFS_HELPER_HOLD=1")
	var out bytes.Buffer
	cmd.Stdout = &out
	must(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil || !strings.Contains(out.String(), "unmount: <nil>") {
			t.Errorf("helper: %v\n%s", err, out.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the process hangs at exit with a file open on the mount it served:\n%s", out.String())
	}
}

func TestCleanupRemovesStaleMounts(t *testing.T) {
	needs.Err(t, fusefs.Available())
	prefix := t.TempDir()
	dir := filepath.Join(prefix, "stale")
	must(t, os.Mkdir(dir, 0o755))
	t.Cleanup(func() { fusefs.Cleanup(prefix) })

	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "FUSEFS_HELPER_MOUNT="+dir)
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "mounted\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the helper said %q", line)
	}
	cmd.Process.Kill()
	cmd.Wait()

	if _, err := os.Stat(dir); !errorsIsErrno(err, syscall.ENOTCONN) {
		t.Errorf("stat of the killed server's mount point: %v, want ENOTCONN", err)
	}
	mps, err := fusefs.Mounts(prefix)
	must(t, err)
	if len(mps) != 1 || mps[0] != resolved(t, dir) {
		t.Fatalf("Mounts(%s) = %v, want [%s]", prefix, mps, dir)
	}
	done, err := fusefs.Cleanup(prefix)
	must(t, err)
	if len(done) != 1 {
		t.Errorf("Cleanup detached %v", done)
	}
	if mps, _ := fusefs.Mounts(prefix); len(mps) > 0 {
		t.Errorf("after Cleanup, still mounted: %v", mps)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("stat of the cleaned mount point: %v", err)
	}
	if _, err := fusefs.Cleanup("relative/path"); err == nil {
		t.Error("Cleanup accepted a relative prefix")
	}
}

func errorsIsErrno(err error, errno syscall.Errno) bool {
	pe, ok := err.(*os.PathError)
	return ok && pe.Err == errno
}

func resolved(t *testing.T, p string) string {
	r, err := filepath.EvalSymlinks(filepath.Dir(p))
	must(t, err)
	return filepath.Join(r, filepath.Base(p))
}

func TestAvailable(t *testing.T) {
	err := fusefs.Available()
	if err == nil {
		return
	}
	if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, "apt-get install fuse3") {
		t.Errorf("Available() = %q, want one line naming the install command", msg)
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(err)
	}
}

// A child process must not inherit the server's /dev/fuse descriptor: it would keep the
// connection alive, and itself stuck on it, if the server died.
func TestChildrenDoNotInheritTheConnection(t *testing.T) {
	sh := needs.Command(t, "sh", "apt-get install sh")
	_, dir := mount(t, faults.New(faults.NewDisk(faults.DiskOptions{}), nil), fusefs.Options{})
	out, err := exec.Command(sh, "-c", `ls "$1" >/dev/null && for f in /proc/$$/fd/*; do readlink "$f"; done; exit 0`, "sh", dir).CombinedOutput()
	must(t, err)
	if strings.Contains(string(out), "/dev/fuse") {
		t.Errorf("a child inherited /dev/fuse:\n%s", out)
	}
}
