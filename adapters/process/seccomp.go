package process

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The trap is one seccomp filter a command is started under, whose calls of interest wait in a
// user notification (SECCOMP_RET_USER_NOTIF) until chaoskit, holding the listener, answers:
//
//   - sync(2) and syncfs(2), on a FUSE disk: the kernel does not tell a FUSE server about them
//     (it sends FUSE_SYNCFS to virtiofs only: fs/fuse/virtio_fs.c is the one place that sets
//     fc->sync_fs, Linux 6.18, and go-fuse has no handler for the opcode), so a harness that
//     relies on them (Python's os.sync(), sync(1) without names) would keep its checkpoint
//     un-fsynced; chaoskit fsyncs every file and directory of the disk instead, each fsync a
//     beat, before the call goes on;
//   - with virtual time (watch.go), every clock read of the wall, monotonic and boot clocks
//     (clock_gettime, gettimeofday, time), answered with the simulation's clock, and every wait
//     with a finite, non-zero timeout (nanosleep, clock_nanosleep, poll, ppoll, select,
//     pselect6, epoll_wait, epoll_pwait, epoll_pwait2, futex WAIT and WAIT_BITSET), held until
//     the clock reaches its deadline or it can end otherwise. Clock reads do not enter the kernel
//     while a program has the vDSO: the tracer (tracer.go) takes it away at every exec.
//
// Everything else runs untouched: waits without a timeout or with a zero one, CPU-time clocks,
// the rest of the system calls.

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

// auditArch is this architecture's AUDIT_ARCH value, which the filter checks before it trusts a
// system call's number; 0 where chaoskit does not know it (no trap is installed).
var auditArch = map[string]uint32{"amd64": unix.AUDIT_ARCH_X86_64, "arm64": unix.AUDIT_ARCH_AARCH64}[runtime.GOARCH]

// virtualClocks are the clocks whose reads are virtual: REALTIME 0, MONOTONIC 1,
// MONOTONIC_RAW 4, REALTIME_COARSE 5, MONOTONIC_COARSE 6, BOOTTIME 7, REALTIME_ALARM 8,
// BOOTTIME_ALARM 9, TAI 11. The CPU-time clocks stay real.
var virtualClocks = []uint32{0, 1, 4, 5, 6, 7, 8, 9, 11}

// sysNr are the system calls of interest, by name, on this architecture (arm64 has no
// poll, select, epoll_wait, time or sync's old forms of some: -1).
var sysNr = func() map[string]int {
	m := map[string]int{"sync": unix.SYS_SYNC, "syncfs": unix.SYS_SYNCFS, "clock_gettime": unix.SYS_CLOCK_GETTIME,
		"gettimeofday": unix.SYS_GETTIMEOFDAY, "nanosleep": unix.SYS_NANOSLEEP, "clock_nanosleep": unix.SYS_CLOCK_NANOSLEEP,
		"ppoll": unix.SYS_PPOLL, "pselect6": unix.SYS_PSELECT6, "epoll_pwait": unix.SYS_EPOLL_PWAIT,
		"epoll_pwait2": unix.SYS_EPOLL_PWAIT2, "futex": unix.SYS_FUTEX}
	for k, v := range archOnlyNr {
		m[k] = v
	}
	return m
}()

// bpf is a tiny BPF assembler with labels (jumps go forward only, as BPF requires).
type bpf struct {
	prog   []unix.SockFilter
	labels map[string]int
	fixes  []bpfFix
}

type bpfFix struct {
	at     int
	jt, jf string
}

const (
	bpfLd   = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
	bpfJeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
	bpfJset = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
	bpfAnd  = unix.BPF_ALU | unix.BPF_AND | unix.BPF_K
	bpfRet  = unix.BPF_RET | unix.BPF_K
)

func (a *bpf) label(l string) { a.labels[l] = len(a.prog) }
func (a *bpf) ld(off uint32)  { a.prog = append(a.prog, unix.SockFilter{Code: bpfLd, K: off}) }
func (a *bpf) and(k uint32)   { a.prog = append(a.prog, unix.SockFilter{Code: bpfAnd, K: k}) }
func (a *bpf) ret(k uint32)   { a.prog = append(a.prog, unix.SockFilter{Code: bpfRet, K: k}) }

// jmp: if A op k goto jt else goto jf ("" = the next instruction).
func (a *bpf) jmp(code uint16, k uint32, jt, jf string) {
	a.fixes = append(a.fixes, bpfFix{at: len(a.prog), jt: jt, jf: jf})
	a.prog = append(a.prog, unix.SockFilter{Code: code, K: k})
}

func (a *bpf) link() []unix.SockFilter {
	for _, f := range a.fixes {
		for i, l := range []string{f.jt, f.jf} {
			if l == "" {
				continue
			}
			off := a.labels[l] - f.at - 1
			if i == 0 {
				a.prog[f.at].Jt = uint8(off)
			} else {
				a.prog[f.at].Jf = uint8(off)
			}
		}
	}
	return a.prog
}

// argLo and argHi are the offsets of the low and high words of a call's argument i in struct
// seccomp_data (little-endian).
func argLo(i int) uint32 { return uint32(16 + 8*i) }
func argHi(i int) uint32 { return uint32(16 + 8*i + 4) }

// trapFilter returns the filter: sync and syncfs get action; with clocks, so do the clock reads
// and timed waits (see above). Everything else is allowed.
func trapFilter(action uint32, clocks bool) []unix.SockFilter {
	a := &bpf{labels: map[string]int{}}
	a.ld(4) // the architecture
	a.jmp(bpfJeq, auditArch, "", "allow")
	a.ld(0) // the call's number
	jump := func(name, to string) {
		if nr, ok := sysNr[name]; ok && nr >= 0 {
			a.jmp(bpfJeq, uint32(nr), to, "")
		}
	}
	jump("sync", "notify")
	jump("syncfs", "notify")
	if clocks {
		jump("clock_gettime", "clock")
		jump("gettimeofday", "notify")
		jump("time", "notify")
		jump("nanosleep", "notify")
		jump("clock_nanosleep", "notify")
		jump("poll", "ms2")
		jump("epoll_wait", "ms3")
		jump("epoll_pwait", "ms3")
		jump("ppoll", "ptr2")
		jump("select", "ptr4")
		jump("pselect6", "ptr4")
		jump("epoll_pwait2", "ptr3")
		jump("futex", "futex")
	}
	a.ret(unix.SECCOMP_RET_ALLOW)
	if clocks {
		a.label("clock") // clock_gettime(clockid, tp)
		a.ld(argLo(0))
		for _, c := range virtualClocks {
			a.jmp(bpfJeq, c, "notify", "")
		}
		a.ret(unix.SECCOMP_RET_ALLOW)
		for _, i := range []int{2, 3} { // an int timeout in ms: notify when > 0
			a.label(fmt.Sprintf("ms%d", i))
			a.ld(argLo(i))
			a.jmp(bpfJeq, 0, "allow", "")
			a.jmp(bpfJset, 0x80000000, "allow", "notify")
		}
		a.label("futex") // futex(uaddr, op, val, timeout): WAIT (0) or WAIT_BITSET (9) with a timeout
		a.ld(argLo(1))
		a.and(0x7f) // FUTEX_CMD_MASK, without the private and clock flags
		a.jmp(bpfJeq, 0, "ptr3", "")
		a.jmp(bpfJeq, 9, "ptr3", "allow")
		for _, i := range []int{2, 3, 4} { // a timeout pointer: notify when not NULL
			a.label(fmt.Sprintf("ptr%d", i))
			a.ld(argLo(i))
			a.jmp(bpfJeq, 0, "", "notify")
			a.ld(argHi(i))
			a.jmp(bpfJeq, 0, "allow", "notify")
		}
	}
	a.label("allow")
	a.ret(unix.SECCOMP_RET_ALLOW)
	a.label("notify")
	a.ret(action)
	return a.link()
}

// installFilter installs the trap's filter with action on the calling thread (which must be
// locked to its goroutine) and returns its listener, a close-on-exec descriptor, for
// SECCOMP_RET_USER_NOTIF. Without CAP_SYS_ADMIN it first sets no_new_privs on the thread, as
// seccomp requires: the command then cannot gain privileges through a set-user-ID program.
func installFilter(action uint32, clocks bool) (int, error) {
	if auditArch == 0 {
		return -1, fmt.Errorf("no seccomp filter for %s", runtime.GOARCH)
	}
	prog := trapFilter(action, clocks)
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

func ioctlPtr(fd int, req uint, p unsafe.Pointer) syscall.Errno {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(p))
	return e
}

// recvNotif takes one pending notification from the listener.
func recvNotif(fd int, n *seccompNotif) error {
	*n = seccompNotif{}
	if e := ioctlPtr(fd, unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(n)); e != 0 {
		return e
	}
	return nil
}

// answer makes the trapped call return val (errno 0) or fail with errno.
func answer(fd int, id uint64, val int64, errno syscall.Errno) {
	send(fd, &seccompNotifResp{ID: id, Val: val, Error: -int32(errno)})
}

// proceed lets the kernel run the trapped call as the command made it (Linux 5.5); before
// 5.5 it answers 0, as a sync does.
func proceed(fd int, id uint64) {
	if send(fd, &seccompNotifResp{ID: id, Flags: unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE}) == syscall.EINVAL {
		send(fd, &seccompNotifResp{ID: id})
	}
}

// send answers a notification. SECCOMP_IOCTL_NOTIF_SEND takes the filter's lock with
// mutex_lock_interruptible: a signal to the answering thread (Go's preemption signal) makes it
// fail with EINTR, and an answer not retried leaves the caller blocked for good. So it retries.
func send(fd int, r *seccompNotifResp) syscall.Errno {
	for {
		e := ioctlPtr(fd, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(r))
		if e != syscall.EINTR {
			return e
		}
	}
}

// idValid reports whether the notification id is still pending (its thread has not been
// interrupted by a signal, or killed).
func idValid(fd int, id uint64) bool {
	return ioctlPtr(fd, unix.SECCOMP_IOCTL_NOTIF_ID_VALID, unsafe.Pointer(&id)) == 0
}

// readMem reads len(b) bytes of the address space of task tid at addr.
func readMem(tid int, addr uint64, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	n, err := unix.ProcessVMReadv(tid, []unix.Iovec{{Base: &b[0], Len: uint64(len(b))}}, []unix.RemoteIovec{{Base: uintptr(addr), Len: len(b)}}, 0)
	if err == nil && n != len(b) {
		err = syscall.EFAULT
	}
	return err
}

// writeMem writes b into the address space of task tid at addr.
func writeMem(tid int, addr uint64, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	n, err := unix.ProcessVMWritev(tid, []unix.Iovec{{Base: &b[0], Len: uint64(len(b))}}, []unix.RemoteIovec{{Base: uintptr(addr), Len: len(b)}}, 0)
	if err == nil && n != len(b) {
		err = syscall.EFAULT
	}
	return err
}

// readTimespec reads a struct timespec (or, usec, a struct timeval) at addr, in nanoseconds.
func readTimespec(tid int, addr uint64, usec bool) (int64, error) {
	var b [16]byte
	if err := readMem(tid, addr, b[:]); err != nil {
		return 0, err
	}
	sec, frac := int64(binary.LittleEndian.Uint64(b[:8])), int64(binary.LittleEndian.Uint64(b[8:]))
	if usec {
		frac *= 1000
	}
	return sec*1e9 + frac, nil
}

// timespecBytes encodes ns as a struct timespec (or, usec, a struct timeval).
func timespecBytes(ns int64, usec bool) []byte {
	b := make([]byte, 16)
	sec, frac := ns/1e9, ns%1e9
	if frac < 0 {
		sec, frac = sec-1, frac+1e9
	}
	if usec {
		frac /= 1000
	}
	binary.LittleEndian.PutUint64(b[:8], uint64(sec))
	binary.LittleEndian.PutUint64(b[8:], uint64(frac))
	return b
}

// dupFd returns a copy, in this process, of descriptor fd of the thread tid (pidfd_getfd,
// Linux 5.6): the same open file description, so that readiness seen on it is the command's.
func dupFd(tid, fd int) (int, error) {
	pfd, err := unix.PidfdOpen(tid, unix.O_EXCL) // PIDFD_THREAD, Linux 6.9
	if err != nil {
		tgid, terr := tgidOf(tid)
		if terr != nil {
			return -1, err
		}
		if pfd, err = unix.PidfdOpen(tgid, 0); err != nil {
			return -1, err
		}
	}
	defer unix.Close(pfd)
	return unix.PidfdGetfd(pfd, fd, 0)
}

// tgidOf returns the process the thread tid belongs to.
func tgidOf(tid int) (int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Tgid:"); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, errors.New("no Tgid in /proc/" + strconv.Itoa(tid) + "/status")
}
