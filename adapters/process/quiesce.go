package process

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Quiescence: every thread of the command is blocked, so that it can do nothing until chaoskit
// answers it or a timer of its own expires. The serve loop admits requests, hands replies over
// and moves the clock only then (admit.go, proc.go). A scan reads, for every thread of the
// command (its cgroup's cgroup.threads, or without cgroups the processes descending from it,
// by /proc's children lists), its state, wchan and CPU time (schedstat); the command is quiescent when two
// scans in a row find every thread blocked, and the same threads with the same CPU time and
// wchan in both, so that none ran in between. Blocked means asleep (S) and off the run queue
// (wchan is not "0": a thread is S from set_current_state on, while it still runs its way to
// schedule(), and may back out), stopped (T), or dead (Z, X); running or runnable (R), in
// uninterruptible sleep (D: disk I/O, a lock) or stopped by a tracer (t) is not. On a FUSE
// disk a thread waiting for a FUSE reply is blocked only while chaoskit holds its request, and
// one in uninterruptible sleep is blocked while a request is held, unless it waits for a device
// (fuseheld.go). The
// rest of the rules (nothing owed, no notification pending, no exit in flight, no held wait
// that can end otherwise) are the watcher's (watch.go). /tmp/vtime's REPORT.md (section 2.6)
// tells which race each rule closes.

// threadState is what a scan reads of one thread.
type threadState struct {
	state   byte
	runtime string // schedstat's first field: ns run on a CPU
	wchan   string // where it sleeps in the kernel; "0" while it is still on a run queue
}

// scanner reads the command's threads, keeping their /proc files open (opening one costs ~100
// µs on a busy machine, reading an open one ~4 µs).
type scanner struct {
	cgroup string // the command's cgroup, or ""
	root   int    // without a cgroup: the pid the command's processes descend from
	list   *os.File
	tasks  map[int]*taskFiles
	fuse   *fuseHeld // on a FUSE disk: the requests chaoskit holds (fuseheld.go)
	buf    []byte
}

type taskFiles struct{ stat, sched, wchan *os.File }

// threads lists the command's threads.
func (s *scanner) threads() []int {
	var tids []int
	if s.cgroup != "" {
		if s.list == nil {
			s.list, _ = os.Open(filepath.Join(s.cgroup, "cgroup.threads"))
		}
		if s.list != nil {
			n, err := s.list.ReadAt(s.buf, 0)
			if err == nil || err == io.EOF {
				for _, f := range strings.Fields(string(s.buf[:n])) {
					if t, err := strconv.Atoi(f); err == nil {
						tids = append(tids, t)
					}
				}
				return tids
			}
		}
	}
	if s.root <= 0 {
		return nil
	}
	for queue := []int{s.root}; len(queue) > 0; {
		p := queue[0]
		queue = queue[1:]
		ts, _ := os.ReadDir("/proc/" + strconv.Itoa(p) + "/task")
		for _, e := range ts {
			t, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			tids = append(tids, t)
			// each thread's children (CONFIG_PROC_CHILDREN): the processes it forked
			b, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/task/" + e.Name() + "/children")
			for _, f := range strings.Fields(string(b)) {
				if c, err := strconv.Atoi(f); err == nil {
					queue = append(queue, c)
				}
			}
		}
	}
	return tids
}

// read reads one thread's state; false if it is gone.
func (s *scanner) read(tid int) (threadState, bool) {
	tf := s.tasks[tid]
	if tf == nil {
		dir := "/proc/" + strconv.Itoa(tid)
		st, err := os.Open(dir + "/stat")
		if err != nil {
			return threadState{}, false
		}
		tf = &taskFiles{stat: st}
		tf.sched, _ = os.Open(dir + "/schedstat")
		tf.wchan, _ = os.Open(dir + "/wchan")
		s.tasks[tid] = tf
	}
	n, _ := tf.stat.ReadAt(s.buf, 0)
	if n == 0 { // gone: forget it (its tid may come back as a new thread)
		tf.close()
		delete(s.tasks, tid)
		return threadState{}, false
	}
	i := bytes.LastIndexByte(s.buf[:n], ')')
	if i < 0 || i+2 >= n {
		return threadState{}, false
	}
	st := threadState{state: s.buf[i+2]}
	if tf.wchan != nil {
		if m, _ := tf.wchan.ReadAt(s.buf, 0); m > 0 {
			st.wchan = string(s.buf[:m])
		}
	}
	if tf.sched != nil {
		if m, _ := tf.sched.ReadAt(s.buf, 0); m > 0 {
			if j := bytes.IndexByte(s.buf[:m], ' '); j > 0 {
				st.runtime = string(s.buf[:j])
			}
		}
	}
	return st, true
}

func (tf *taskFiles) close() {
	for _, f := range []*os.File{tf.stat, tf.sched, tf.wchan} {
		if f != nil {
			f.Close()
		}
	}
}

// scan reads every thread; blocked is false as soon as one is not blocked, and running says
// whether that one was on a CPU or its run queue.
func (s *scanner) scan() (m map[int]threadState, blocked, running bool) {
	if s.tasks == nil {
		s.tasks, s.buf = map[int]*taskFiles{}, make([]byte, 64<<10)
	}
	m = map[int]threadState{}
	for _, tid := range s.threads() {
		st, ok := s.read(tid)
		if !ok {
			continue
		}
		if s.fuse != nil && (st.state == 'S' || st.state == 'D') {
			switch {
			case fuseWait(st.wchan):
				if !s.fuse.holds(tid) {
					return m, false, false // its request is owed: in the kernel's queue or the helper
				}
				m[tid] = st
				continue
			case st.state == 'D' && s.fuse.any() && !ioWait(st.wchan):
				m[tid] = st // waits for a lock that a thread whose request is held has
				continue
			}
		}
		switch st.state {
		case 'S':
			if wchanless() {
				break
			}
			if st.wchan == "0" || st.wchan == "" {
				return m, false, true
			}
		case 'T', 'Z', 'X', 'I':
		case 'R':
			return m, false, true
		default: // D, t: in transition, or owed an answer (a FUSE request)
			return m, false, false
		}
		m[tid] = st
	}
	return m, true, false
}

// quiet reports whether the command's threads are quiescent: two scans, settle apart where
// wchan cannot be read, find every thread blocked and none having run in between. running says
// whether a thread was seen on a CPU (for the release of waits a running command overlaps).
func (s *scanner) quiet() (ok, running bool) {
	a, ok, running := s.scan()
	if !ok {
		return false, running
	}
	if wchanless() {
		time.Sleep(200 * time.Microsecond)
	}
	b, ok, running := s.scan()
	if !ok || len(a) != len(b) {
		return false, running
	}
	for tid, st := range a {
		if b[tid] != st {
			return false, false
		}
	}
	return true, false
}

// close closes the files the scanner keeps open.
func (s *scanner) close() {
	if s.list != nil {
		s.list.Close()
	}
	for _, tf := range s.tasks {
		tf.close()
	}
	s.tasks = nil
}

// wchanless reports whether this machine's /proc/TID/wchan says nothing (a kernel without
// kallsyms prints "0" for every thread): then a thread seen asleep may still be on its way off
// the CPU, and the two scans are set 200 µs apart instead, which the measurements found hides
// that race too.
var wchanless = sync.OnceValue(func() bool {
	ents, _ := os.ReadDir("/proc/self/task")
	for _, e := range ents {
		b, _ := os.ReadFile("/proc/self/task/" + e.Name() + "/wchan")
		if w := string(b); w != "" && w != "0" {
			return false
		}
	}
	return true
})
