package process

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The tracer is a helper (a copy of chaoskit that Init runs) between chaoskit and a command
// run with virtual time. It exists for one reason: the vDSO. A dynamically linked program reads
// its clocks through glibc, and glibc (like Go's runtime and musl) calls the vDSO, which reads
// the time in user space and never enters the kernel, so no seccomp filter sees it. All of them
// fall back to the system call when the kernel's auxiliary vector has no AT_SYSINFO_EHDR entry.
// So the tracer runs the command under ptrace, event-only (PTRACE_O_TRACEFORK, VFORK, CLONE,
// EXEC, EXIT: never PTRACE_SYSCALL), and at each exec, before the new program's first
// instruction, it turns that entry of the program's auxiliary vector into AT_IGNORE: the
// program then reads every clock through a system call, which the trap hands to chaoskit.
//
// The tracer installs the trap's filter on its one locked thread just before it forks the
// command, so that the command and all it starts inherit it, and sends the listener to chaoskit
// (SCM_RIGHTS) with that thread's id (its own trapped calls go on untouched). It is the
// command's parent, so PTRACE_TRACEME is all ptrace needs (Yama's scope 0 or 1), and chaoskit's
// own wait for the command never steals a ptrace stop. The command runs in its cgroup, the
// tracer outside it; the tracer exits with the command's status (or dies of its signal), and
// PTRACE_O_EXITKILL kills whatever the command left if the tracer goes.

const (
	atNull        = 0
	atIgnore      = 1
	atSysinfoEhdr = 33
)

// tracerMsg is the first byte of the tracer's message to chaoskit.
const (
	tracerListening = 'L' // the listener, then the filtered thread's id
	tracerNoTrap    = 'U' // virtual time is unavailable here: the filter or ptrace was refused
	tracerFailed    = 'E' // the command could not be started
)

// runTracer is the tracer's main: descriptor 3 is the socket to chaoskit, 4 the cgroup to start
// the command in (or /dev/null), 5 the shared page; argv is the command. It returns the status
// to exit with.
func runTracer(argv []string) int {
	runtime.LockOSThread()          // never unlocked: the filter lives on this thread, and the tracer is this thread
	sigs := make(chan os.Signal, 8) // caught, not ignored: an ignored signal stays ignored in the command
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		for range sigs {
		}
	}()
	const sock = 3
	say := func(kind byte, msg string, fds ...int) {
		var oob []byte
		if len(fds) > 0 {
			oob = unix.UnixRights(fds...)
		}
		unix.Sendmsg(sock, append([]byte{kind}, msg...), oob, nil, 0)
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		say(tracerFailed, err.Error())
		return 127
	}
	lfd, err := installFilter(unix.SECCOMP_RET_USER_NOTIF, true)
	if err != nil {
		say(tracerNoTrap, err.Error())
		return 126
	}
	sys := &syscall.SysProcAttr{Ptrace: true}
	if st, err := os.Stat("/proc/self/fd/4"); err == nil && st.IsDir() {
		sys.UseCgroupFD, sys.CgroupFD = true, 4
	}
	attr := &syscall.ProcAttr{Env: os.Environ(), Files: []uintptr{0, 1, 2}, Sys: sys}
	pid, err := syscall.ForkExec(path, argv, attr)
	if err != nil && sys.UseCgroupFD && startedOutsideCgroups(err) && !errors.Is(err, syscall.EPERM) {
		sys.UseCgroupFD = false // the cgroup would not take it: chaoskit finds the command by its marker
		pid, err = syscall.ForkExec(path, argv, attr)
	}
	switch {
	case errors.Is(err, syscall.EPERM):
		say(tracerNoTrap, "ptrace: "+err.Error())
		return 126
	case err != nil:
		say(tracerFailed, err.Error())
		return 127
	}
	say(tracerListening, fmt.Sprintf("%d %t %d", unix.Gettid(), sys.UseCgroupFD, pid), lfd)
	unix.Close(lfd)
	unix.Close(sock)
	unix.Close(4)
	shared := mapShared(5)
	unix.Close(5)
	return trace(pid, shared)
}

// trace runs the ptrace event loop until the command (pid) exits, and returns its status (or
// dies of the signal that killed it).
func trace(pid int, shared sharedState) int {
	const opts = unix.PTRACE_O_TRACEEXEC | unix.PTRACE_O_TRACEFORK | unix.PTRACE_O_TRACEVFORK |
		unix.PTRACE_O_TRACECLONE | unix.PTRACE_O_EXITKILL | unix.PTRACE_O_TRACEEXIT
	exiting := map[int]bool{} // tasks past their PTRACE_EVENT_EXIT stop, not yet reaped
	known := map[int]bool{pid: true}
	newborn := map[int]bool{}
	first := true
	for {
		var ws syscall.WaitStatus
		wpid, err := syscall.Wait4(-1, &ws, syscall.WALL, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 125
		}
		switch {
		case ws.Exited() || ws.Signaled():
			delete(known, wpid)
			if exiting[wpid] {
				delete(exiting, wpid)
				shared.ex.Add(-1)
			}
			shared.g.Add(1)
			if wpid == pid {
				if ws.Signaled() {
					sig := ws.Signal()
					signal.Reset(sig)
					syscall.Kill(os.Getpid(), sig)
					return 128 + int(sig)
				}
				return ws.ExitStatus()
			}
		case ws.Stopped():
			sig, cause := ws.StopSignal(), ws.TrapCause()
			switch {
			case wpid == pid && first: // the stop after the command's own exec
				first = false
				syscall.PtraceSetOptions(wpid, opts)
				stripVDSO(wpid)
				syscall.PtraceCont(wpid, 0)
			case sig == syscall.SIGTRAP && cause == unix.PTRACE_EVENT_EXIT:
				if !exiting[wpid] {
					exiting[wpid] = true
					shared.ex.Add(1)
				}
				shared.g.Add(1)
				syscall.PtraceCont(wpid, 0)
			case sig == syscall.SIGTRAP && cause == unix.PTRACE_EVENT_EXEC:
				if exiting[wpid] { // a thread leader that "died" in another thread's exec comes back
					delete(exiting, wpid)
					shared.ex.Add(-1)
				}
				shared.g.Add(1)
				stripVDSO(wpid)
				syscall.PtraceCont(wpid, 0)
			case sig == syscall.SIGTRAP && (cause == unix.PTRACE_EVENT_FORK || cause == unix.PTRACE_EVENT_VFORK || cause == unix.PTRACE_EVENT_CLONE):
				if msg, err := syscall.PtraceGetEventMsg(wpid); err == nil && !known[int(msg)] {
					newborn[int(msg)] = true
				}
				syscall.PtraceCont(wpid, 0)
			case sig == syscall.SIGSTOP && (newborn[wpid] || !known[wpid]): // a new task's first stop
				delete(newborn, wpid)
				known[wpid] = true
				syscall.PtraceCont(wpid, 0)
			default: // a signal on its way to the task: deliver it
				syscall.PtraceCont(wpid, int(sig))
			}
		}
	}
}

// stripVDSO turns the AT_SYSINFO_EHDR entry of the auxiliary vector of pid, stopped right after
// an exec, into AT_IGNORE. The vector follows argc, argv, NULL, envp, NULL on the stack.
func stripVDSO(pid int) {
	sp, err := stackPointer(pid)
	if err != nil {
		return
	}
	mem, err := os.OpenFile("/proc/"+strconv.Itoa(pid)+"/mem", os.O_RDWR, 0)
	if err != nil {
		return
	}
	defer mem.Close()
	var b [8]byte
	word := func(at uint64) uint64 {
		if _, err := mem.ReadAt(b[:], int64(at)); err != nil {
			return 0
		}
		return binary.LittleEndian.Uint64(b[:])
	}
	p := sp + 8*(word(sp)+2) // past argc, argv[], NULL
	for n := 0; word(p) != 0 && n < 1<<16; n++ {
		p += 8
	}
	p += 8 // past envp's NULL
	for range 64 {
		switch word(p) {
		case atNull:
			return
		case atSysinfoEhdr:
			binary.LittleEndian.PutUint64(b[:], atIgnore)
			mem.WriteAt(b[:], int64(p))
			return
		}
		p += 16
	}
}

// mapShared maps the shared page open on fd; a fresh, unshared state if it cannot.
func mapShared(fd int) sharedState {
	b, err := unix.Mmap(fd, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return sharedState{new(atomic.Int64), new(atomic.Int64)}
	}
	return sharedState{(*atomic.Int64)(unsafe.Pointer(&b[0])), (*atomic.Int64)(unsafe.Pointer(&b[8]))}
}

// tracerStart is a command started under the tracer.
type tracerStart struct {
	listener int
	helper   int  // the tracer's filtered thread
	inCgroup bool // the command runs in the cgroup it was given
	pid      int  // the command's
	shared   sharedState
}

// errNoVirtualTime wraps why virtual time is unavailable on this machine.
var errNoVirtualTime = errors.New("virtual time unavailable")

// startTraced starts cmd (already set up: its Args the command's, its Env, Dir, output and
// SysProcAttr) through the tracer, the command in the cgroup cg (nil: none). It returns
// errNoVirtualTime (wrapped) if this machine refuses the trap or ptrace, and a *startError if
// the command cannot be started.
func startTraced(cmd *exec.Cmd, cg *os.File) (*tracerStart, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNoVirtualTime, err)
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("process: socketpair: %w", err)
	}
	ours, theirs := os.NewFile(uintptr(pair[0]), "tracer"), os.NewFile(uintptr(pair[1]), "tracer")
	defer ours.Close()
	if cg == nil {
		if cg, err = os.Open(os.DevNull); err != nil {
			theirs.Close()
			return nil, err
		}
		defer cg.Close()
	}
	mfd, err := unix.MemfdCreate("chaoskit-tracer", unix.MFD_CLOEXEC)
	if err != nil {
		theirs.Close()
		return nil, fmt.Errorf("%w: memfd: %v", errNoVirtualTime, err)
	}
	unix.Ftruncate(mfd, 4096)
	mf := os.NewFile(uintptr(mfd), "chaoskit-tracer-shared")
	defer mf.Close()
	argv := cmd.Args
	cmd.Path = self
	cmd.Args = append([]string{self, helperArg, "tracer"}, argv...)
	cmd.ExtraFiles = []*os.File{theirs, cg, mf}
	err = cmd.Start()
	theirs.Close()
	if err != nil {
		return nil, &startError{err}
	}
	buf, oob := make([]byte, 4096), make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(pair[0], buf, oob, 0)
	if err != nil || n == 0 {
		cmd.Wait()
		return nil, fmt.Errorf("%w: the tracer said nothing (%v)", errNoVirtualTime, err)
	}
	msg := string(buf[1:n])
	switch buf[0] {
	case tracerNoTrap:
		cmd.Wait()
		return nil, fmt.Errorf("%w: %s", errNoVirtualTime, msg)
	case tracerFailed:
		cmd.Wait()
		return nil, &startError{errors.New(msg)}
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	var fds []int
	if err == nil && len(msgs) == 1 {
		fds, err = unix.ParseUnixRights(&msgs[0])
	}
	if err != nil || len(fds) != 1 {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("%w: no listener from the tracer", errNoVirtualTime)
	}
	unix.CloseOnExec(fds[0])
	f := strings.Fields(msg)
	t := &tracerStart{listener: fds[0], shared: mapShared(mfd)}
	if len(f) == 3 {
		t.helper, _ = strconv.Atoi(f[0])
		t.inCgroup = f[1] == "true"
		t.pid, _ = strconv.Atoi(f[2])
	}
	return t, nil
}

// startError is a command that failed to start under the trap: the command's fault, not the trap's.
type startError struct{ err error }

func (e *startError) Error() string { return e.err.Error() }
func (e *startError) Unwrap() error { return e.err }
