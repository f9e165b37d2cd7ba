package process

import (
	"bytes"
	"cmp"
	"slices"
	"strings"
	"sync"

	"github.com/chaoskit/chaoskit/adapters/process/fusefs"
)

// FUSE requests made at once. The threads of a command (libuv's pool, a runtime's workers,
// SQLite and its WAL index) make filesystem calls at once, and on a FUSE disk each reaches the
// serve loop as a request, in an order the OS decides afresh in every run: two threads that
// write two files reached the disk in either order, and a timer could fire while a request
// sat in the kernel's queue, not yet read by the FUSE helper. So a request of the command's
// threads that changes the disk is not run as it arrives: it is held, like a request on the protocol's socket
// (admit.go), until the command is quiescent, and the requests held then are run one at a
// time, each at a quiescence, in their canonical order (fuseBefore), as replies are handed
// over. Running them one a quiescence apart matters: the thread a reply wakes goes on (libuv
// posts its completion to the loop), and two woken at once would race to be first.
//
// The quiescence check (quiesce.go) reads where every thread sleeps: a thread waiting for a
// FUSE reply (its wchan is request_wait_answer) is blocked only if chaoskit holds its request;
// otherwise its request is still in the kernel's queue or the helper, owed. A request that
// changes nothing (a read, a stat, a listing) runs as it arrives, as does one the kernel makes
// on its own (pid 0: a closed file's release, the writeback of a shared map's pages): what a
// read sees is decided all the same, since a held change runs only once no thread runs, and a
// thread that faults a page of SQLite's -shm in waits in uninterruptible sleep for its
// readahead, which held would never let the command be quiescent.
//
// Not decided: two creates, removes or renames in one directory at once take the directory's
// lock in the kernel before any FUSE request is made, in the order the scheduler gives, and the
// requests follow that order. Deciding it would need the calls trapped at their entry.
//
// A thread in uninterruptible sleep is blocked as well while a request is held, unless it waits
// for a device (ioWait): two threads that create files in one directory, the second waits for
// the directory's lock, which the first holds while its request is held. Whoever holds such a
// lock is a thread of the command, which the check sees (nothing else uses the mount): held,
// running, or owed.

// fuseHeld is the requests the command's threads made on its FUSE disk and chaoskit holds.
type fuseHeld struct {
	mu   sync.Mutex
	tids map[int]int // how many requests each thread has held
	ops  []fsop      // the serve loop's
}

// hold holds o until a quiescence: the serve loop's.
func (f *fuseHeld) hold(o fsop) {
	f.mu.Lock()
	if f.tids == nil {
		f.tids = map[int]int{}
	}
	f.tids[int(o.req.Pid)]++
	f.mu.Unlock()
	f.ops = append(f.ops, o)
}

// next returns the held request that comes first in canonical order, no longer held, or false
// if there is none: the serve loop's, at quiescence.
func (f *fuseHeld) next() (fsop, bool) {
	if len(f.ops) == 0 {
		return fsop{}, false
	}
	i := 0
	for j := range f.ops {
		if fuseBefore(f.ops[j].req, f.ops[i].req) {
			i = j
		}
	}
	o := f.ops[i]
	f.ops = slices.Delete(f.ops, i, i+1)
	f.mu.Lock()
	if f.tids[int(o.req.Pid)]--; f.tids[int(o.req.Pid)] <= 0 {
		delete(f.tids, int(o.req.Pid))
	}
	f.mu.Unlock()
	return o, true
}

// holds reports whether a request of thread tid is held; any, whether one of any thread is.
func (f *fuseHeld) holds(tid int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tids[tid] > 0
}

func (f *fuseHeld) any() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.tids) > 0
}

// fuseBefore orders requests made at once: by operation, path, new path, offset,
// length and bytes. Two equal requests are the same request made twice, and which runs first
// is decided by arrival, as for Key.
func fuseBefore(a, b fusefs.Request) bool {
	return cmp.Or(cmp.Compare(a.Op, b.Op), cmp.Compare(a.Path, b.Path), cmp.Compare(a.To, b.To),
		cmp.Compare(a.Off, b.Off), cmp.Compare(a.Len, b.Len),
		bytes.Compare(a.Data, b.Data)) < 0
}

// fuseWait reports whether a thread sleeping at wchan waits for a FUSE reply.
func fuseWait(wchan string) bool {
	return wchan == "request_wait_answer" || wchan == "__fuse_simple_request" || wchan == "fuse_simple_request"
}

// ioWait reports whether a thread in uninterruptible sleep at wchan waits for a device's I/O
// (a page read from a real disk), which ends at a moment of the device's choosing, rather than
// for a lock. The lock's own slow paths never show as wchan (they are scheduler functions, as
// they are left out of /proc/TID/stack too): its caller does, path_openat, lock_rename...
func ioWait(wchan string) bool {
	for _, w := range []string{"io_schedule", "folio_wait", "wait_on_page", "bit_wait_io", "blk_", "wait_on_buffer", "jbd2", "nfs", "wait_for_completion"} {
		if strings.Contains(wchan, w) {
			return true
		}
	}
	return false
}
