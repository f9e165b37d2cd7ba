package process

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/chaoskit/chaoskit/adapters/process/fusefs"
	"github.com/spf13/afero"
)

// chaoskit's helpers are copies of the running program, started with helperArg as their first
// argument, then the helper's name and arguments, which Init recognises: the reaper (reaper.go),
// the FUSE helper, which serves the state directories of processes on a FUSE disk, and the
// tracer (tracer.go), the parent of a command run with virtual time.
const helperArg = "__chaoskit-helper"

// initialized is set by Init: only then may this program start copies of itself as helpers.
var initialized atomic.Bool

// Init must be the first thing main does in a program that runs process targets, and the first
// thing TestMain does in a test binary that runs them (chaoskit's own main calls it): chaoskit
// runs its helpers, the reaper that cleans up after it however it dies and the server of every
// FUSE disk, as copies of the running program, started with a first argument that Init
// recognises. In such a copy Init runs the helper and exits; otherwise it returns at once. A
// Target refuses to run in a program that did not call it.
//
//	func TestMain(m *testing.M) {
//		process.Init()
//		os.Exit(m.Run())
//	}
func Init() {
	initialized.Store(true)
	if len(os.Args) < 3 || os.Args[1] != helperArg {
		return
	}
	if os.Args[2] == "tracer" && len(os.Args) > 3 {
		os.Exit(runTracer(os.Args[3:]))
	}
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP) // for chaoskit to act on
	switch os.Args[2] {
	case "reaper":
		if len(os.Args) == 4 {
			reap(os.Args[3])
			os.Exit(0)
		}
	case "fuse":
		os.Exit(serveFUSE())
	}
	fmt.Fprintf(os.Stderr, "chaoskit: unknown helper %q\n", os.Args[2:])
	os.Exit(2)
}

// errNoInit is why a Target cannot run in a program that did not call Init.
var errNoInit = errors.New("process: this program did not call process.Init() first thing in main (or in TestMain): " +
	"chaoskit runs its reaper and FUSE servers as copies of the program, which Init runs")

// startHelper starts this program as the helper name, with its arguments, in a process group
// of its own (a ^C to chaoskit's group is for chaoskit to act on), passing it extra files from
// descriptor 3 on.
func startHelper(name string, args []string, extra ...*os.File) (*exec.Cmd, error) {
	if !initialized.Load() {
		return nil, errNoInit
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, append([]string{helperArg, name}, args...)...)
	cmd.ExtraFiles = extra
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting chaoskit's %s helper: %w", name, err)
	}
	helpers.mu.Lock()
	helpers.pids = append(helpers.pids, cmd.Process.Pid)
	helpers.mu.Unlock()
	go cmd.Wait()
	return cmd, nil
}

// helpers are the pids of the helpers this process started.
var helpers struct {
	mu   sync.Mutex
	pids []int
}

// HelperCPU returns the CPU time that the helpers chaoskit started (the reaper, the FUSE
// helper) have used so far, those still running: what a benchmark adds to the CPU time of
// chaoskit and of the commands it waited for, to count all that a campaign costs.
func HelperCPU() time.Duration {
	helpers.mu.Lock()
	defer helpers.mu.Unlock()
	var total time.Duration
	for _, pid := range helpers.pids {
		stats, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
		for _, st := range stats {
			b, err := os.ReadFile(st)
			if err != nil {
				continue
			}
			if f := strings.Fields(string(b)); len(f) > 0 {
				ns, _ := strconv.ParseInt(f[0], 10, 64)
				total += time.Duration(ns)
			}
		}
	}
	return total
}

// serveFUSE is the FUSE helper's main: it serves the mounts chaoskit asks for on descriptor 3,
// until chaoskit has gone and every mount is down.
func serveFUSE() int {
	conn, err := net.FileConn(os.NewFile(3, "chaoskit"))
	if err == nil {
		err = fusefs.ServeHelper(conn.(*net.UnixConn))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaoskit: fuse helper:", err)
		return 1
	}
	return 0
}

// fuseHelper is the FUSE helper of this process, started the first time a FUSE disk is
// mounted, and again if it died.
var fuseHelper struct {
	mu sync.Mutex
	h  *fusefs.Helper
}

// mountFUSE mounts fsys at dir through the FUSE helper, starting one if none is running.
func mountFUSE(dir string, fsys afero.Fs, opts fusefs.Options) (*fusefs.Server, error) {
	for try := 0; ; try++ {
		h, err := runningFUSEHelper()
		if err != nil {
			return nil, err
		}
		srv, err := h.Mount(dir, fsys, opts)
		if errors.Is(err, fusefs.ErrHelperGone) && try == 0 {
			fuseHelper.mu.Lock()
			if fuseHelper.h == h {
				fuseHelper.h = nil // it died: start another
			}
			fuseHelper.mu.Unlock()
			continue
		}
		return srv, err
	}
}

// runningFUSEHelper returns the FUSE helper, starting it if there is none.
func runningFUSEHelper() (*fusefs.Helper, error) {
	fuseHelper.mu.Lock()
	defer fuseHelper.mu.Unlock()
	if fuseHelper.h != nil {
		return fuseHelper.h, nil
	}
	ctl, theirs, err := fusefs.HelperPair()
	if err != nil {
		return nil, err
	}
	cmd, err := startHelper("fuse", nil, theirs)
	theirs.Close()
	if err != nil {
		ctl.Close()
		return nil, err
	}
	// The reaper kills it too; its mounts then fail at once, and the reaper detaches them.
	register("fuse-helper-"+strconv.Itoa(cmd.Process.Pid), (&descendants{}).record(cmd.Process.Pid))
	fuseHelper.h = fusefs.NewHelper(ctl)
	return fuseHelper.h, nil
}
