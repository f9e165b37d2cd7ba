package process

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"golang.org/x/sys/unix"
)

// The watcher of a command (one goroutine, locked to an OS thread, so that a trapped clock read
// is answered without the Go scheduler in the way) answers the trap's notifications (seccomp.go)
// and tells the serve loop when the command is quiescent.
//
// With virtual time, a clock read is answered with the simulation's clock, which the serve loop
// sets whenever it has the baton: the wall clock reads it, and the monotonic and boot clocks
// read monoBase plus the virtual time since faults.Epoch. A timed wait is held: its thread
// waits in the notification until
//
//   - its deadline: the serve loop, told of the earliest one at quiescence, waits in the
//     simulation until the clock reaches it (other threads and workers running meanwhile), and
//     the watcher then answers every wait due as the kernel does when one times out;
//   - it can end otherwise: a descriptor it waits on is ready (the watcher polls its own copy,
//     pidfd_getfd), or its futex word has changed (read at every turn, and after the scans: a
//     held waiter is not in the kernel's futex queue, so a FUTEX_WAKE does not find it), and the
//     watcher lets the kernel run it (it returns at once);
//   - a signal: the notification dies, the handler runs, the call restarts and is trapped
//     again;
//   - it has lasted its own length in wall time while a thread of the command was running
//     (busy release, as the kernel would have ended it): code that spins on another thread's
//     progress (Python's 5 ms GIL hand-over, Go's runtime) keeps going. The clock does not move.
//
// Deadlines are rounded up to a whole millisecond of virtual time, so that waits for one instant
// computed in different ways (Go's netpoller truncates to milliseconds, its sysmon does not)
// end together. A Go runtime's short sleeps (raw nanosleep of 10 ms or less: sysmon's polls)
// are let go at quiescence without moving the clock, twice in a row at most for a thread, so
// that an idle runtime settles into its long sleep rather than moving time by its polls.
//
// A thread that reads the clock 20,000 times without a wait, an advance or a request of the
// command in between (while time.monotonic() < end: pass) would spin for ever on a clock that
// stands still: each further read moves the clock 1 ms (the spin guard), which the serve loop
// catches the simulation's clock up to.

// monoBase is what the monotonic and boot clocks of a command read at virtual time 0 (the
// epoch): a machine up for a while.
const monoBase = 1000 * time.Second

// spinReads is the spin guard's threshold: CPython reads the monotonic clock at every lock
// acquisition, ~2,000 times while it starts.
const spinReads = 20000

// shortSleep is the longest raw nanosleep taken for a runtime's poll.
const shortSleep = 10 * time.Millisecond

type waitKind int

const (
	kSleep waitKind = iota
	kPoll
	kSelect
	kEpoll
	kFutex
)

// held is one wait the watcher holds: its thread is blocked in the notification.
type held struct {
	id       uint64
	tid      int
	nr       int
	args     [6]uint64
	kind     waitKind
	deadline int64 // virtual, Unix ns, rounded up to a millisecond
	length   time.Duration
	beat     bool // its timing out is a beat (a wait of the program's, not a runtime's park)
	what     string
	heldAt   time.Time // wall clock
	fds      []int     // this process's copies of the descriptors it waits on
	events   []int16
	word     uint32 // futex: the value it waits to change
}

// quietReport is what the watcher tells the serve loop at quiescence: the earliest deadline of
// the held waits (0: none), what the wait due then is, and the activity count it decided at.
type quietReport struct {
	next   int64
	length time.Duration
	what   string
	beat   bool
	gen    uint64
}

// watchCmd is an order of the serve loop's to the watcher.
type watchCmd int

const (
	cmdWant    watchCmd = iota // report the next quiescence
	cmdRelease                 // time out the waits the clock has reached
	cmdStop
)

// TrapStats counts what a command's trap did (for tests and measurements).
type TrapStats struct {
	Reads, Held, TimedOut, Woken, BusyReleased, SpinSteps, Syncs int
}

// watcher watches one command.
type watcher struct {
	sc       scanner
	listener int  // the trap's listener, or -1
	virtual  bool // clocks and waits are trapped
	helper   int  // the tracer's filtered thread: its trapped calls go on untouched
	shared   sharedState
	owed     func() (int, uint64)
	// inFlight reports whether bytes are on their way over loopback to or from a front door
	// (inflight.go).
	inFlight func() bool
	onSync   func(nr int, path string) syscall.Errno

	now      atomic.Int64  // the virtual clock, Unix ns: set by the serve loop, moved by the spin guard
	requests atomic.Uint64 // one more at every admission: the spin guard's and the short sleeps' reset
	syncs    atomic.Int64  // sync calls being answered: owed

	cmds     chan watchCmd
	wake     int // an eventfd that wakes the loop for cmds
	quiet    chan quietReport
	activity chan struct{} // something happened that the serve loop may want to look at again

	held      map[uint64]*held
	goTids    map[int]bool    // goRuntime's answers, by thread
	goExes    map[string]bool // and by program
	wanted    bool
	reads     int
	lastReq   uint64
	free      map[int]int
	busySince time.Time
	gen       uint64
	stats     TrapStats
	statsOut  chan TrapStats
	done      chan struct{}
}

// newWatcher returns the watcher of a command with the trap's listener (-1: none), started.
func newWatcher(sc scanner, listener int, virtual bool, helper int, shared sharedState, owed func() (int, uint64), inFlight func() bool, onSync func(int, string) syscall.Errno, now time.Time) (*watcher, error) {
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("process: eventfd: %w", err)
	}
	w := &watcher{sc: sc, listener: listener, virtual: virtual, helper: helper, shared: shared, owed: owed, inFlight: inFlight, onSync: onSync,
		cmds: make(chan watchCmd, 16), wake: wake, quiet: make(chan quietReport, 1), activity: make(chan struct{}, 1),
		held: map[uint64]*held{}, free: map[int]int{}, goTids: map[int]bool{}, goExes: map[string]bool{}, statsOut: make(chan TrapStats, 1), done: make(chan struct{})}
	w.now.Store(now.UnixNano())
	go w.run()
	return w, nil
}

// order sends the watcher an order.
func (w *watcher) order(c watchCmd) {
	select {
	case w.cmds <- c:
	case <-w.done:
		return
	}
	var one [8]byte
	binary.LittleEndian.PutUint64(one[:], 1)
	unix.Write(w.wake, one[:])
}

// stop stops the watcher and returns its counts, once its loop has ended.
func (w *watcher) stop() TrapStats {
	w.order(cmdStop)
	<-w.done
	select {
	case s := <-w.statsOut:
		return s
	default:
		return TrapStats{}
	}
}

func (w *watcher) run() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer close(w.done)
	defer func() {
		for _, h := range w.held {
			h.close()
		}
		if w.listener >= 0 {
			unix.Close(w.listener)
		}
		unix.Close(w.wake)
		w.sc.close()
		w.statsOut <- w.stats
	}()
	// The scans (and, with waits held, the looks at their futex words) come interval apart:
	// 20 µs after something changed, doubling while nothing does up to maxInterval. Calls
	// answered at once wake the loop but do not move the next scan.
	interval := minInterval
	due := time.Now().Add(interval)
	for {
		pfds := []unix.PollFd{{Fd: int32(w.wake), Events: unix.POLLIN}}
		if w.listener >= 0 {
			pfds = append(pfds, unix.PollFd{Fd: int32(w.listener), Events: unix.POLLIN})
		}
		base := len(pfds)
		var owners []*held
		for _, h := range w.sorted() {
			for i, fd := range h.fds {
				pfds = append(pfds, unix.PollFd{Fd: int32(fd), Events: h.events[i]})
				owners = append(owners, h)
			}
		}
		var tsp *unix.Timespec
		switch {
		case w.wanted || len(w.held) > 0:
			ts := unix.NsecToTimespec(int64(max(time.Until(due), 0)))
			tsp = &ts
		case w.listener >= 0:
			ts := unix.NsecToTimespec(int64(50 * time.Millisecond))
			tsp = &ts
		}
		if _, err := unix.Ppoll(pfds, tsp, nil); err != nil && !errors.Is(err, syscall.EINTR) {
			return
		}
		active := false
		if pfds[0].Revents&unix.POLLIN != 0 {
			var b [8]byte
			unix.Read(w.wake, b[:])
			for more := true; more; {
				select {
				case c := <-w.cmds:
					switch c {
					case cmdStop:
						return
					case cmdWant: // scan at once
						w.wanted = true
						interval, due = minInterval, time.Now()
					case cmdRelease:
						w.releaseDue()
						active = true
					}
				default:
					more = false
				}
			}
		}
		if w.listener >= 0 {
			if r := pfds[1].Revents; r&unix.POLLIN != 0 {
				if w.drain() {
					active = true
				}
			} else if r&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 && len(w.held) == 0 {
				unix.Close(w.listener) // every process of the command has gone
				w.listener = -1
			}
		}
		for i, p := range pfds[base:] {
			if h := owners[i]; p.Revents != 0 && w.held[h.id] == h {
				w.proceed(h)
				active = true
			}
		}
		if w.futexesMoved(true) {
			active = true
		}
		if active {
			w.gen++
			select {
			case w.activity <- struct{}{}:
			default:
			}
			interval = minInterval
			due = time.Now().Add(interval)
			continue
		}
		if time.Now().Before(due) {
			continue // woken by a call answered at once: the scan is not due yet
		}
		backOff := func() {
			interval = min(2*interval, maxInterval)
			due = time.Now().Add(interval)
		}
		if !w.wanted {
			backOff()
			continue
		}
		if w.quiescent() {
			if w.freeShortSleeps() {
				interval = minInterval
				due = time.Now().Add(interval)
				continue
			}
			w.wanted = false
			w.quiet <- w.report()
			interval = minInterval
			due = time.Now().Add(interval)
			continue
		}
		w.busyRelease()
		backOff()
	}
}

// The watcher's intervals between scans (see run).
const (
	minInterval = 20 * time.Microsecond
	maxInterval = 2 * time.Millisecond
)

// sorted returns the held waits in the order they were trapped.
func (w *watcher) sorted() []*held {
	hs := make([]*held, 0, len(w.held))
	for _, h := range w.held {
		hs = append(hs, h)
	}
	slices.SortFunc(hs, func(a, b *held) int { return int(a.id - b.id) })
	return hs
}

// drain takes every pending notification and answers or holds it. It reports whether one of
// them changed what the command waits for (see handle).
func (w *watcher) drain() (changed bool) {
	for {
		var n seccompNotif
		if err := recvNotif(w.listener, &n); err != nil {
			return changed // ENOENT: its thread went away before it was taken
		}
		if w.handle(&n) {
			changed = true
		}
		p := []unix.PollFd{{Fd: int32(w.listener), Events: unix.POLLIN}}
		if k, _ := unix.Poll(p, 0); k == 0 || p[0].Revents&unix.POLLIN == 0 {
			return changed
		}
	}
}

// base is what clock clk reads at the epoch, in Unix ns (the wall clock) or ns (the others).
func base(clk int32) int64 {
	switch clk {
	case unix.CLOCK_REALTIME, unix.CLOCK_REALTIME_COARSE, unix.CLOCK_TAI, unix.CLOCK_REALTIME_ALARM:
		return faults.Epoch.UnixNano()
	}
	return int64(monoBase)
}

// reading is what clock clk reads now.
func (w *watcher) reading(clk int32) int64 {
	return base(clk) + w.now.Load() - faults.Epoch.UnixNano()
}

// handle answers or holds one notification. It reports whether the command now waits for
// something else: a wait held, a sync owed, the clock moved by the spin guard. A call answered
// at once (a clock read, a poll that does not wait) does not: its thread just goes on running,
// which the scans see, and a Python process reads the clock ~1,500 times as it starts.
func (w *watcher) handle(n *seccompNotif) (changed bool) {
	tid, a, nr := int(n.Pid), n.Data.Args, int(n.Data.Nr)
	if tid == w.helper {
		proceed(w.listener, n.ID)
		return false
	}
	switch nr {
	case unix.SYS_SYNC, unix.SYS_SYNCFS:
		w.sync(n)
		return true
	case unix.SYS_CLOCK_GETTIME, unix.SYS_GETTIMEOFDAY, sysNr["time"]:
		return w.read(n)
	}
	now := w.now.Load()
	h := &held{id: n.ID, tid: tid, nr: nr, args: a, heldAt: time.Now(), beat: true}
	var d time.Duration
	ok := true
	rel := func(addr uint64, usec bool) time.Duration {
		ns, err := readTimespec(tid, addr, usec)
		ok = err == nil
		return time.Duration(ns)
	}
	switch nr {
	case unix.SYS_NANOSLEEP:
		h.kind, h.what = kSleep, "nanosleep"
		d = rel(a[0], false)
		h.beat = d > shortSleep
	case unix.SYS_CLOCK_NANOSLEEP:
		h.kind, h.what = kSleep, "clock_nanosleep"
		clk := int32(a[0])
		if !slices.Contains(virtualClocks, uint32(clk)) {
			proceed(w.listener, n.ID)
			return false
		}
		d = rel(a[2], false)
		if a[1]&unix.TIMER_ABSTIME != 0 {
			d = time.Duration(int64(d) - w.reading(clk))
		}
	case sysNr["poll"]:
		h.kind, h.what = kPoll, "poll"
		d = time.Duration(int32(a[2])) * time.Millisecond
	case unix.SYS_PPOLL:
		h.kind, h.what = kPoll, "ppoll"
		d = rel(a[2], false)
	case sysNr["select"]:
		h.kind, h.what = kSelect, "select"
		d = rel(a[4], true)
	case unix.SYS_PSELECT6:
		h.kind, h.what = kSelect, "pselect6"
		d = rel(a[4], false)
	case sysNr["epoll_wait"], unix.SYS_EPOLL_PWAIT:
		h.kind, h.what = kEpoll, "epoll_wait"
		if nr == unix.SYS_EPOLL_PWAIT {
			h.what = "epoll_pwait"
		}
		d = time.Duration(int32(a[3])) * time.Millisecond
	case unix.SYS_EPOLL_PWAIT2:
		h.kind, h.what = kEpoll, "epoll_pwait2"
		d = rel(a[3], false)
	case unix.SYS_FUTEX:
		h.kind, h.what, h.word = kFutex, "futex", uint32(a[2])
		d = rel(a[3], false)
		if a[1]&0x7f == 9 { // FUTEX_WAIT_BITSET: an absolute deadline
			clk := int32(unix.CLOCK_MONOTONIC)
			if a[1]&256 != 0 { // FUTEX_CLOCK_REALTIME
				clk = unix.CLOCK_REALTIME
			}
			d = time.Duration(int64(d) - w.reading(clk))
		} else {
			h.beat = false // a relative park: Go's runtime (its sysmon's long sleep), musl
		}
	default:
		proceed(w.listener, n.ID)
		return false
	}
	if h.beat && w.goRuntime(tid) {
		h.beat = false
	}
	if !ok { // a bad pointer: the kernel says EFAULT
		proceed(w.listener, n.ID)
		return false
	}
	w.reads = 0
	if d <= 0 && h.kind != kSleep && h.kind != kFutex {
		proceed(w.listener, n.ID) // no wait at all: a poll the kernel answers at once
		return false
	}
	d = max(d, 0)
	h.deadline = roundMs(now + int64(d))
	h.length = time.Duration(h.deadline - now)
	if err := w.watchFds(h); err != nil { // a descriptor gone: the kernel says so
		proceed(w.listener, n.ID)
		return false
	}
	if h.kind == kFutex {
		var b [4]byte
		if readMem(tid, a[0], b[:]) != nil || binary.LittleEndian.Uint32(b[:]) != h.word {
			h.close()
			proceed(w.listener, n.ID) // EAGAIN at once
			return false
		}
	}
	w.stats.Held++
	w.held[h.id] = h
	if d == 0 {
		w.timeout(h)
	}
	return true
}

// goRuntime reports whether thread tid is of a Go program: its runtime's timers (the
// scavenger's, the netpoller's short polls) come and go with the heap and the scheduler, so its
// waits move the clock without being beats.
func (w *watcher) goRuntime(tid int) bool {
	if is, ok := w.goTids[tid]; ok {
		return is
	}
	is := false
	if exe, err := os.Readlink("/proc/" + strconv.Itoa(tid) + "/exe"); err == nil {
		var known bool
		if is, known = w.goExes[exe]; !known {
			if f, err := elf.Open(exe); err == nil {
				is = f.Section(".go.buildinfo") != nil
				f.Close()
			}
			w.goExes[exe] = is
		}
	}
	w.goTids[tid] = is
	return is
}

// roundMs rounds a virtual instant up to a whole millisecond since the epoch.
func roundMs(ns int64) int64 {
	e := faults.Epoch.UnixNano()
	const ms = int64(time.Millisecond)
	return e + (ns-e+ms-1)/ms*ms
}

// sync answers a sync(2) or syncfs(2) once the serve loop has made the disk durable, from a
// goroutine of its own (the loop goes on answering clock reads); it is owed meanwhile.
func (w *watcher) sync(n *seccompNotif) {
	w.stats.Syncs++
	var path string
	if n.Data.Nr == unix.SYS_SYNCFS {
		path, _ = os.Readlink("/proc/" + strconv.Itoa(int(n.Pid)) + "/fd/" + strconv.FormatUint(n.Data.Args[0]&0xffffffff, 10))
	}
	if w.onSync == nil {
		proceed(w.listener, n.ID)
		return
	}
	w.syncs.Add(1)
	fd, id, nr := w.listener, n.ID, int(n.Data.Nr)
	go func() {
		defer w.syncs.Add(-1)
		if errno := w.onSync(nr, path); errno != 0 {
			answer(fd, id, 0, errno)
			return
		}
		proceed(fd, id)
	}()
}

// read answers a clock read with the virtual time. It reports whether the spin guard moved
// the clock.
func (w *watcher) read(n *seccompNotif) (moved bool) {
	tid, a := int(n.Pid), n.Data.Args
	w.stats.Reads++
	if r := w.requests.Load(); r != w.lastReq {
		w.lastReq, w.reads = r, 0
	}
	w.reads++
	if w.reads > spinReads {
		w.stats.SpinSteps++
		w.now.Add(int64(time.Millisecond))
		w.releaseDue()
		moved = true
	}
	var err error
	var val int64
	switch int(n.Data.Nr) {
	case unix.SYS_CLOCK_GETTIME:
		err = writeMem(tid, a[1], timespecBytes(w.reading(int32(a[0])), false))
	case unix.SYS_GETTIMEOFDAY:
		if a[0] != 0 {
			err = writeMem(tid, a[0], timespecBytes(w.reading(unix.CLOCK_REALTIME), true))
		}
		if a[1] != 0 && err == nil {
			err = writeMem(tid, a[1], make([]byte, 8))
		}
	default: // time(2)
		val = w.reading(unix.CLOCK_REALTIME) / 1e9
		if a[0] != 0 {
			var b [8]byte
			binary.LittleEndian.PutUint64(b[:], uint64(val))
			err = writeMem(tid, a[0], b[:])
		}
	}
	if err != nil {
		answer(w.listener, n.ID, 0, syscall.EFAULT)
		return moved
	}
	answer(w.listener, n.ID, val, 0)
	return moved
}

// watchFds makes copies of the descriptors h waits on, whose readiness ends it early.
func (w *watcher) watchFds(h *held) error {
	add := func(fd int, ev int16) error {
		c, err := dupFd(h.tid, fd)
		if err != nil {
			h.close()
			return err
		}
		h.fds, h.events = append(h.fds, c), append(h.events, ev)
		return nil
	}
	switch h.kind {
	case kEpoll:
		return add(int(int32(h.args[0])), unix.POLLIN)
	case kPoll:
		nfds := int(h.args[1])
		if nfds > 4096 {
			return syscall.EINVAL
		}
		b := make([]byte, 8*nfds)
		if err := readMem(h.tid, h.args[0], b); err != nil {
			return err
		}
		for i := range nfds {
			fd := int32(binary.LittleEndian.Uint32(b[8*i:]))
			if fd < 0 {
				continue
			}
			if err := add(int(fd), int16(binary.LittleEndian.Uint16(b[8*i+4:]))); err != nil {
				return err
			}
		}
	case kSelect:
		nfds := int(h.args[0])
		if nfds > 65536 {
			return syscall.EINVAL
		}
		for set, ev := range []int16{unix.POLLIN, unix.POLLOUT, unix.POLLPRI} {
			addr := h.args[1+set]
			if addr == 0 {
				continue
			}
			b := make([]byte, (nfds+63)/64*8)
			if err := readMem(h.tid, addr, b); err != nil {
				return err
			}
			for fd := range nfds {
				if b[fd/8]&(1<<(fd%8)) != 0 {
					if err := add(fd, ev); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

func (h *held) close() {
	for _, fd := range h.fds {
		unix.Close(fd)
	}
	h.fds, h.events = nil, nil
}

// futexesMoved lets the kernel run every held futex wait whose word has changed, and reports
// whether there was one; with act false it only looks.
func (w *watcher) futexesMoved(act bool) bool {
	moved := false
	for _, h := range w.sorted() {
		if h.kind != kFutex {
			continue
		}
		var b [4]byte
		if err := readMem(h.tid, h.args[0], b[:]); err != nil || binary.LittleEndian.Uint32(b[:]) != h.word {
			moved = true
			if act {
				w.proceed(h)
			}
		}
	}
	return moved
}

// proceed lets the kernel run h as made: what it waits for has happened, so it returns at once.
func (w *watcher) proceed(h *held) {
	delete(w.held, h.id)
	h.close()
	w.stats.Woken++
	proceed(w.listener, h.id)
}

// timeout answers h as timed out, as the kernel would have at its deadline.
func (w *watcher) timeout(h *held) {
	delete(w.held, h.id)
	h.close()
	w.stats.TimedOut++
	a := h.args
	switch h.kind {
	case kFutex:
		answer(w.listener, h.id, 0, syscall.ETIMEDOUT)
		return
	case kPoll: // every revents 0
		nfds := int(a[1])
		b := make([]byte, 8*nfds)
		if readMem(h.tid, a[0], b) == nil {
			for i := range nfds {
				b[8*i+6], b[8*i+7] = 0, 0
			}
			writeMem(h.tid, a[0], b)
		}
	case kSelect: // every set empty, and select's timeval 0
		nfds := int(a[0])
		for set := range 3 {
			if a[1+set] != 0 {
				writeMem(h.tid, a[1+set], make([]byte, (nfds+63)/64*8))
			}
		}
		if h.nr == sysNr["select"] {
			writeMem(h.tid, a[4], make([]byte, 16))
		}
	}
	answer(w.listener, h.id, 0, 0)
}

// releaseDue times out every held wait whose deadline the clock has reached.
func (w *watcher) releaseDue() {
	now := w.now.Load()
	for _, h := range w.sorted() {
		if h.deadline <= now {
			w.timeout(h)
		}
	}
	clear(w.free)
	w.reads = 0
}

// freeShortSleeps lets a runtime's short sleeps go without moving the clock (see above), and
// reports whether it let one go.
func (w *watcher) freeShortSleeps() bool {
	if r := w.requests.Load(); r != w.lastReq {
		w.lastReq, w.reads = r, 0
		clear(w.free)
	}
	freed := false
	for _, h := range w.sorted() {
		if h.kind == kSleep && h.nr == unix.SYS_NANOSLEEP && h.length <= shortSleep && w.free[h.tid] < 2 {
			w.free[h.tid]++
			w.timeout(h)
			freed = true
		}
	}
	return freed
}

// report returns the quiescence report: the held wait due first (a program's wait before a
// runtime's park, then the longest, then by name, so that the same waits give the same
// report whatever order their threads made them in).
func (w *watcher) report() quietReport {
	_, gen := w.owed()
	q := quietReport{gen: gen}
	var first *held
	for _, h := range w.held {
		switch {
		case first == nil, h.deadline < first.deadline:
			first = h
		case h.deadline > first.deadline:
		case h.beat != first.beat:
			if h.beat {
				first = h
			}
		case h.length != first.length:
			if h.length > first.length {
				first = h
			}
		case h.what < first.what:
			first = h
		}
	}
	if first != nil {
		q.next, q.length, q.what, q.beat = first.deadline, first.length, first.what, first.beat
	}
	return q
}

// quiescent reports whether the command is quiescent (quiesce.go).
func (w *watcher) quiescent() bool {
	owed, act := w.owed()
	if owed > 0 || w.syncs.Load() > 0 {
		w.busySince = time.Time{}
		return false
	}
	for _, h := range w.sorted() { // a wait whose thread was interrupted (a signal) or killed
		if !idValid(w.listener, h.id) {
			delete(w.held, h.id)
			h.close()
		}
	}
	gen := w.shared.gen()
	if w.shared.exiting() > 0 {
		return false
	}
	ok, running := w.sc.quiet()
	switch {
	case running && w.busySince.IsZero():
		w.busySince = time.Now()
	case !running:
		w.busySince = time.Time{}
	}
	if !ok || w.shared.exiting() > 0 || w.shared.gen() != gen {
		return false
	}
	if w.listener >= 0 {
		p := []unix.PollFd{{Fd: int32(w.listener), Events: unix.POLLIN}}
		if n, _ := unix.Poll(p, 0); n > 0 && p[0].Revents&unix.POLLIN != 0 {
			return false
		}
	}
	if w.futexesMoved(false) {
		return false
	}
	for _, h := range w.held {
		if len(h.fds) > 0 {
			pf := make([]unix.PollFd, len(h.fds))
			for i, fd := range h.fds {
				pf[i] = unix.PollFd{Fd: int32(fd), Events: h.events[i]}
			}
			if n, _ := unix.Poll(pf, 0); n > 0 {
				return false
			}
		}
	}
	if w.inFlight() { // last: it may read /proc/net/tcp
		return false
	}
	owed2, act2 := w.owed()
	return owed2 == 0 && act2 == act && w.syncs.Load() == 0
}

// busyRelease times out a wait that has lasted its own length in wall time while a thread of
// the command ran.
func (w *watcher) busyRelease() {
	if w.busySince.IsZero() {
		return
	}
	for _, h := range w.sorted() {
		since := h.heldAt
		if w.busySince.After(since) {
			since = w.busySince
		}
		if time.Since(since) >= h.length {
			w.stats.BusyReleased++
			w.timeout(h)
		}
	}
}

// sharedState is a page the tracer and chaoskit both map: the tracer's account of exits in
// flight. A task that exits leaves the command's cgroup (cgroup_exit) before its parent is told
// (exit_notify): under ptrace the tracer is told first, and the parent only when the tracer
// reaps it, and in that window no thread of the command runs or is listed, yet its parent is
// about to be woken. The tracer counts the tasks between their PTRACE_EVENT_EXIT stop and their
// reaping, and a command is not quiescent while any is.
type sharedState struct {
	ex, g *atomic.Int64 // nil without a tracer
}

func (s sharedState) exiting() int64 {
	if s.ex == nil {
		return 0
	}
	return s.ex.Load()
}

func (s sharedState) gen() int64 {
	if s.g == nil {
		return 0
	}
	return s.g.Load()
}
