package faults

import (
	"sync"
	"time"
)

// space is the room left on a disk once it is full: the one place a full disk is kept. A Disk
// owns one, which every FS over it shares, so a full disk stays full for every process and
// every worker, across restarts and crashes. An FS over another filesystem owns one of its own.
type space struct {
	mu     sync.Mutex
	now    func() time.Time // the disk's clock, virtual time
	full   bool
	budget int64     // bytes that still fit while full
	until  time.Time // when space returns; zero: never
}

// Block is the unit in which a disk allocates room to a file (a filesystem's block, a page of
// the page cache): a full disk fits whole blocks only.
const Block = 4096

func newSpace(now func() time.Time) *space { return &space{now: now} }

// fill fills the disk, bytes still fitting on it, until dur has passed (0: for good). A disk
// that is full already stays as full as it is, until the later of the two ends.
func (s *space) fill(bytes int64, dur time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var until time.Time
	if dur > 0 {
		until = s.now().Add(dur)
	}
	if !s.isFull() {
		s.full, s.budget, s.until = true, bytes, until
		return
	}
	if until.IsZero() || !s.until.IsZero() && until.After(s.until) {
		s.until = until
	}
}

// isFull reports whether the disk is full now, freeing it if its time is up. The caller holds
// s.mu.
func (s *space) isFull() bool {
	if s.full && !s.until.IsZero() && !s.now().Before(s.until) {
		s.full, s.budget, s.until = false, 0, time.Time{}
	}
	return s.full
}

// admit returns how many of the n bytes of a write at off, to a file of size bytes, fit on the
// disk, and takes the room they need. Room is allocated in whole blocks, as a filesystem
// does: the rest of the file's last block is its own already, and a write that needs more
// takes blocks from the budget (bytes still free, counted in whole blocks), landing up to the
// end of the last block it got, a short write that ends on a block boundary, as on Linux.
// Bytes overwritten in place need no room. Room given back (a file truncated or removed) is not
// counted: on a full disk, space returns when its time is up.
func (s *space) admit(off, size int64, n int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.isFull() {
		return n
	}
	const b = Block
	owned := (size + b - 1) / b * b // the file's blocks end here
	end := off + int64(n)
	if end <= owned {
		return n
	}
	need := (end - owned + b - 1) / b // blocks the write needs beyond those
	if free := s.budget / b; need <= free {
		s.budget -= need * b
		return n
	}
	land := min(max(0, owned+s.budget/b*b-off), int64(n))
	s.budget -= s.budget / b * b
	return int(land)
}

// state reports whether the disk is full now and, if so, when space returns (zero: never).
func (s *space) state() (full bool, until time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.isFull(), s.until
}

// spaceHolder is a filesystem that keeps the room left on its disk: a Disk, or an FS.
type spaceHolder interface{ diskSpace() *space }
