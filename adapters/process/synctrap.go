package process

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sync(2) and syncfs(2) make every file durable, and a harness may rely on them (Python's
// os.sync(), sync(1) without names) instead of fsyncing each file. The kernel does not tell a
// FUSE server about them: it sends FUSE_SYNCFS to virtiofs only (fs/fuse/virtio_fs.c is the one
// place that sets fc->sync_fs, Linux 6.18), and go-fuse has no handler for the opcode
// (fuse/opcode.go, v2.12.1), so on a FUSE disk such a harness's checkpoint would stay
// un-fsynced and a power cut would take it away: a false failure. So a command on a FUSE disk is
// started under a seccomp filter that hands each sync(2) and syncfs(2) of any of its processes
// to chaoskit (a user notification: the call waits until chaoskit answers), and chaoskit fsyncs
// every file and directory of the disk, each fsync a beat as a program's own would be, before
// the call goes on.

// syncTrap is the seccomp listener of one command's sync(2) and syncfs(2) calls.
type syncTrap struct {
	fd   int
	once sync.Once
	done chan struct{}
}

// The kernel's structures of a user notification (linux/seccomp.h).
type seccompData struct {
	Nr   int32
	Arch uint32
	IP   uint64
	Args [6]uint64
}

type seccompNotif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Data  seccompData
}

type seccompNotifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// auditArch is this architecture's AUDIT_ARCH value, which a seccomp filter checks before it
// trusts a system call's number; 0 where chaoskit does not know it (no trap is installed).
var auditArch = map[string]uint32{"amd64": unix.AUDIT_ARCH_X86_64, "arm64": unix.AUDIT_ARCH_AARCH64}[runtime.GOARCH]

// syncFilter is the BPF program: a sync or syncfs of this architecture gets action (sent to
// the listener, or SIGSYS), everything else runs.
func syncFilter(action uint32) []unix.SockFilter {
	const (
		ld    = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq   = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		ret   = unix.BPF_RET | unix.BPF_K
		allow = unix.SECCOMP_RET_ALLOW
	)
	return []unix.SockFilter{
		{Code: ld, K: 4},                        // 0: the architecture
		{Code: jeq, K: auditArch, Jt: 0, Jf: 3}, // 1: another one: allow
		{Code: ld, K: 0},                        // 2: the call's number
		{Code: jeq, K: unix.SYS_SYNC, Jt: 2},    // 3: sync: notify
		{Code: jeq, K: unix.SYS_SYNCFS, Jt: 1},  // 4: syncfs: notify
		{Code: ret, K: allow},                   // 5
		{Code: ret, K: action},                  // 6
	}
}

// noSyncTrap makes sync calls fatal as on a machine without user notifications (the tests of
// that way set it).
var noSyncTrap atomic.Bool

// startTrapped starts cmd with its sync(2) and syncfs(2) calls sent to a new listener: cmd.Start
// runs on an OS thread of its own that first installs the filter, which the command inherits
// (and every process it starts); the thread then goes, taking the filter with it. Where seccomp
// has no user notifications (Linux before 5.0, a sandbox that forbids them), such a call kills
// the process with SIGSYS instead, which its failure explains (errSyncUnseen): a loud refusal,
// never a checkpoint silently left un-fsynced. If no filter can be installed at all, it returns
// that error and does not start cmd.
func startTrapped(cmd *exec.Cmd) (*syncTrap, error) {
	if auditArch == 0 {
		return nil, fmt.Errorf("no seccomp filter for %s", runtime.GOARCH)
	}
	type started struct {
		fd       int
		err      error
		startErr error
	}
	ch := make(chan started, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread, filter and all, ends with this goroutine
		fd, err := -1, errors.New("user notifications turned off")
		if !noSyncTrap.Load() {
			fd, err = installSyncFilter(unix.SECCOMP_RET_USER_NOTIF)
		}
		if err != nil {
			if _, terr := installSyncFilter(unix.SECCOMP_RET_TRAP); terr == nil {
				ch <- started{fd: -1, startErr: cmd.Start()}
				return
			}
			ch <- started{fd: -1, err: err}
			return
		}
		ch <- started{fd: fd, startErr: cmd.Start()}
	}()
	s := <-ch
	if s.err != nil {
		return nil, s.err
	}
	if s.startErr != nil {
		if s.fd >= 0 {
			syscall.Close(s.fd)
		}
		return nil, &startError{s.startErr}
	}
	if s.fd < 0 {
		return nil, nil // started, its sync calls fatal
	}
	return &syncTrap{fd: s.fd, done: make(chan struct{})}, nil
}

// errSyncUnseen explains a command that died of SIGSYS under the filter that makes its sync
// calls fatal.
var errSyncUnseen = errors.New("killed by SIGSYS: it called sync(2) or syncfs(2), which a FUSE server is never told of " +
	"and which chaoskit cannot trap on this machine (seccomp user notifications need Linux 5.0): fsync the files and directories instead")

// startError is a command that failed to start under the trap: the command's fault, not the trap's.
type startError struct{ err error }

func (e *startError) Error() string { return e.err.Error() }
func (e *startError) Unwrap() error { return e.err }

// installSyncFilter installs the filter with action on the calling thread and returns its
// listener (a close-on-exec descriptor) for SECCOMP_RET_USER_NOTIF. Without CAP_SYS_ADMIN, it
// first sets no_new_privs on the thread, as seccomp requires: the command then cannot gain
// privileges through a set-user-ID program.
func installSyncFilter(action uint32) (int, error) {
	prog := syncFilter(action)
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	var flags uintptr
	if action == unix.SECCOMP_RET_USER_NOTIF {
		flags = unix.SECCOMP_FILTER_FLAG_NEW_LISTENER
	}
	install := func() (int, error) {
		fd, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fprog)))
		if errno != 0 {
			return -1, errno
		}
		return int(fd), nil
	}
	fd, err := install()
	if errors.Is(err, syscall.EACCES) {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return -1, fmt.Errorf("seccomp: no_new_privs: %w", err)
		}
		fd, err = install()
	}
	if err != nil {
		return -1, fmt.Errorf("seccomp user notification: %w", err)
	}
	return fd, nil
}

// serve answers the command's sync calls until every process of the command has gone (the
// listener hangs up) or stop is called. For each, handle runs first: it is told the call and,
// for syncfs, the file its descriptor names, and returns the errno the call fails with (0: the
// call goes on as the kernel runs it).
func (t *syncTrap) serve(handle func(nr int, path string) syscall.Errno) {
	defer syscall.Close(t.fd)
	for {
		select {
		case <-t.done:
			return
		default:
		}
		fds := []unix.PollFd{{Fd: int32(t.fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, 100)
		if err != nil && !errors.Is(err, syscall.EINTR) {
			return
		}
		if n == 0 {
			continue
		}
		if fds[0].Revents&(unix.POLLHUP|unix.POLLNVAL|unix.POLLERR) != 0 && fds[0].Revents&unix.POLLIN == 0 {
			return // no process left under the filter
		}
		var req seccompNotif
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(t.fd), unix.SECCOMP_IOCTL_NOTIF_RECV, uintptr(unsafe.Pointer(&req))); errno != 0 {
			if errno == syscall.ENOENT || errno == syscall.EINTR {
				continue // the caller was killed before we took its call
			}
			return
		}
		var path string
		if req.Data.Nr == unix.SYS_SYNCFS {
			path, _ = os.Readlink("/proc/" + strconv.Itoa(int(req.Pid)) + "/fd/" + strconv.FormatUint(req.Data.Args[0]&0xffffffff, 10))
		}
		resp := seccompNotifResp{ID: req.ID, Flags: unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE}
		if errno := handle(int(req.Data.Nr), path); errno != 0 {
			resp.Flags, resp.Error = 0, -int32(errno)
		}
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(t.fd), unix.SECCOMP_IOCTL_NOTIF_SEND, uintptr(unsafe.Pointer(&resp)))
		if errno == syscall.EINVAL && resp.Flags != 0 { // no CONTINUE before Linux 5.5: answer for the kernel, as it would
			resp.Flags = 0
			unix.Syscall(unix.SYS_IOCTL, uintptr(t.fd), unix.SECCOMP_IOCTL_NOTIF_SEND, uintptr(unsafe.Pointer(&resp)))
		}
	}
}

// stop makes serve return (within its poll's timeout) and close the listener.
func (t *syncTrap) stop() { t.once.Do(func() { close(t.done) }) }
