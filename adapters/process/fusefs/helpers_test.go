package fusefs_test

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chaoskit/chaoskit/adapters/process/fusefs"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/internal/needs"
	"github.com/spf13/afero"
)

// mountDir returns a fresh empty directory to mount on, under testRoot (see TestMain), and
// removes it when the test ends (after the unmount, which is registered later and so runs first).
func mountDir(t testing.TB) string {
	t.Helper()
	parent, err := os.MkdirTemp(testRoot, strings.NewReplacer("/", "-").Replace(t.Name())+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(parent) })
	dir := filepath.Join(parent, "mnt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// mount serves fsys at a fresh directory and unmounts it when the test ends, whatever happens;
// a mount still there after Unmount is detached and fails the test.
func mount(t testing.TB, fsys afero.Fs, opts fusefs.Options) (*fusefs.Server, string) {
	t.Helper()
	needs.Err(t, fusefs.Available())
	dir := mountDir(t)
	srv, err := fusefs.Mount(dir, fsys, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unmount(t, srv) })
	return srv, dir
}

// unmount unmounts srv and checks that nothing is left mounted at its directory.
func unmount(t testing.TB, srv *fusefs.Server) {
	t.Helper()
	if err := srv.Unmount(); err != nil {
		t.Errorf("Unmount: %v", err)
	}
	if left, _ := fusefs.Mounts(srv.Dir()); len(left) > 0 {
		exec.Command("umount", "-l", srv.Dir()).Run()
		t.Errorf("still mounted after Unmount: %v", left)
	}
}

// recorder is an Injector that records every operation and lets a hook fault it.
type recorder struct {
	mu   sync.Mutex
	ops  []faults.Op
	hook func(op faults.Op, n int) *faults.Fault // n counts operations from 0
}

func (r *recorder) Inject(op faults.Op) *faults.Fault {
	r.mu.Lock()
	n := len(r.ops)
	r.ops = append(r.ops, op)
	hook := r.hook
	r.mu.Unlock()
	if hook != nil {
		return hook(op, n)
	}
	return nil
}

func (r *recorder) Ops() []faults.Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]faults.Op(nil), r.ops...)
}

// saw reports whether an operation of kind k on path p was recorded.
func (r *recorder) saw(k faults.OpKind, p string) bool {
	for _, op := range r.Ops() {
		if op.Kind == k && op.Path == p {
			return true
		}
	}
	return false
}

func rng() *rand.Rand { return rand.New(rand.NewPCG(1, 2)) }

// readDisk reads a file straight from the disk, or returns ok=false if it does not exist.
func readDisk(t testing.TB, disk *faults.Disk, name string) (string, bool) {
	t.Helper()
	b, err := afero.ReadFile(disk, name)
	if os.IsNotExist(err) {
		return "", false
	}
	if err != nil {
		t.Fatalf("read %s from the disk: %v", name, err)
	}
	return string(b), true
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// syncDir fsyncs a directory as a program does: open it and fsync the descriptor.
func syncDir(t testing.TB, dir string) {
	t.Helper()
	d, err := os.Open(dir)
	must(t, err)
	defer d.Close()
	must(t, d.Sync())
}

// tracer is both an Injector and an Options.Trace: it records, while on, every call the server
// makes on fsys and the beats (injector operations) each call made, in order.
type tracer struct {
	mu     sync.Mutex
	on     bool
	events []traceEvent
}

type traceEvent struct {
	call *fusefs.Call
	beat *faults.Op
}

func (tr *tracer) Inject(op faults.Op) *faults.Fault {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.on {
		tr.events = append(tr.events, traceEvent{beat: &op})
	}
	return nil
}

func (tr *tracer) Trace(c fusefs.Call) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.on {
		tr.events = append(tr.events, traceEvent{call: &c})
	}
}

// record turns recording on, runs f, turns it off and returns what was recorded.
func (tr *tracer) record(f func()) []traceEvent {
	tr.mu.Lock()
	tr.on, tr.events = true, nil
	tr.mu.Unlock()
	f()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.on = false
	return tr.events
}

// canAbort reports whether this process can abort a FUSE connection, which Unmount needs to
// tear down a busy mount at once: root can (umount -f), others only through fusectl.
func canAbort() bool {
	if os.Geteuid() == 0 {
		return true
	}
	b, _ := os.ReadFile("/proc/self/mountinfo")
	return strings.Contains(string(b), " - fusectl ")
}
