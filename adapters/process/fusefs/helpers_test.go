package fusefs_test

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
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
	mount := fusefs.Mount
	if viaHelper {
		mount = testHelper(t).Mount
	}
	srv, err := mount(dir, fsys, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unmount(t, srv) })
	return srv, dir
}

// viaHelper makes mount serve every mount through a helper: TestThroughAHelper sets it for a
// run of the other tests.
var viaHelper = os.Getenv("FUSEFS_VIA_HELPER") != ""

var helper struct {
	once sync.Once
	h    *fusefs.Helper
	err  error
}

// testHelper returns a helper process, a copy of this test binary running ServeHelper (see
// TestMain), started the first time. It goes when this process does.
func testHelper(t testing.TB) *fusefs.Helper {
	helper.once.Do(func() {
		ctl, theirs, err := fusefs.HelperPair()
		if err != nil {
			helper.err = err
			return
		}
		defer theirs.Close()
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "FUSEFS_SERVE_HELPER=1")
		cmd.ExtraFiles = []*os.File{theirs}
		cmd.Stderr = os.Stderr
		if helper.err = cmd.Start(); helper.err != nil {
			return
		}
		go cmd.Wait()
		helper.h = fusefs.NewHelper(ctl)
	})
	if helper.err != nil {
		t.Fatal(helper.err)
	}
	return helper.h
}

// serveHelper is the main of the helper process testHelper starts.
func serveHelper() {
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM)
	conn, err := net.FileConn(os.NewFile(3, "ctl"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(1)
	}
	if err := fusefs.ServeHelper(conn.(*net.UnixConn)); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(1)
	}
	os.Exit(0)
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

// A mount served by a helper behaves as one served in-process: the tests of what a program sees
// on a mount, of Do's contract, of durability, SQLite and git pass again with every mount
// served through a helper connection (ServeHelper and Helper.Mount).
func TestThroughAHelper(t *testing.T) {
	needs.Err(t, fusefs.Available())
	if viaHelper {
		t.Skip("this run is the one through a helper")
	}
	run := "^(TestPOSIX|TestInjectedErrors|TestDoRunsEveryCallOnOneGoroutine|TestCrashInDoThatNeverReturns|TestCrashInDoThatReturns|" +
		"TestPanicInFsysIsEIO|TestUnmountIsIdempotent|TestFsyncReachesTheDisk|TestKillKeepsEverything|TestRemountReadsWhatTheDiskKept|" +
		"TestReadsComeFromTheDisk|TestSQLite|TestSQLiteLocks|TestGit|TestServeOnlyMakesNoRequestOfItsOwn)$"
	cmd := exec.Command(os.Args[0], "-test.run", run, "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "FUSEFS_VIA_HELPER=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("through a helper: %v\n%s", err, out)
	}
	if passed := strings.Count(string(out), "--- PASS: Test"); passed < 15 {
		t.Fatalf("through a helper, %d tests passed, want the 15 asked for:\n%s", passed, out)
	}
}
