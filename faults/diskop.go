package faults

import (
	"fmt"
	"io/fs"
	"maps"
	"time"
)

// opKind names a mutation of a Disk. Every mutation goes through apply, which logs it (when the
// disk is logging) and performs it, so that replaying the log performs the same mutations.
type opKind uint8

const (
	opCreate opKind = iota
	opMkdir
	opRemove
	opRename
	opWrite
	opTruncate
	opSync
	opDrop
	opChmod
	opChtimes
	opPower  // a power loss: everything reverts to its durable state
	opSet    // a file's content set outright, durably (a torn write's outcome)
	opFlip   // a bit flipped in a file's data and durable bytes (corruption)
	opSubset // a power loss keeping a subset of the pending operations: data[i] keeps the i-th
	opClose  // ext4-ordered: the last close of a file truncated to zero (auto_da_alloc)
)

// diskOp is one logged mutation. Paths are cleaned; ino numbers the inode a data operation acts
// on (inode numbers are handed out in creation order, so a replay reproduces them).
type diskOp struct {
	kind     opKind
	ino      int
	path, to string
	off      int64 // write offset; truncate size; metadata operations an ext4-ordered power loss keeps
	data     []byte
	mode     fs.FileMode
	at       time.Time
}

// apply logs op and performs it. The caller holds d.mu and has validated op.
func (d *Disk) apply(op diskOp) *inode {
	d.record(op)
	return d.exec(op)
}

// record logs op if the disk is logging.
func (d *Disk) record(op diskOp) {
	if d.logged {
		if op.data != nil {
			op.data = append([]byte(nil), op.data...)
		}
		d.log = append(d.log, op)
	}
}

// exec performs op.
func (d *Disk) exec(op diskOp) *inode {
	d.mutated = true
	switch op.kind {
	case opCreate, opMkdir:
		dir, base, _ := d.parent(op.path)
		isDir := op.kind == opMkdir
		mode := op.mode
		if isDir {
			mode |= fs.ModeDir
		}
		n := d.newInode(isDir, mode, op.at)
		dir.kids[base] = n
		dir.dirDrty, dir.mtime = true, op.at
		j := d.meta(op.at)
		dir.lastM, n.lastM = j+1, j+1
		if d.pending {
			dir.dpend = append(dir.dpend, pendEntry{name: base, n: n, j: j, at: op.at})
		}
		return n
	case opRemove:
		dir, base, _ := d.parent(op.path)
		delete(dir.kids, base)
		dir.dirDrty, dir.mtime = true, op.at
		j := d.meta(op.at)
		dir.lastM = j + 1
		if d.pending {
			dir.dpend = append(dir.dpend, pendEntry{name: base, j: j, at: op.at})
		}
	case opRename:
		from, fbase, _ := d.parent(op.path)
		to, tbase, _ := d.parent(op.to)
		n := from.kids[fbase]
		replaced := to.kids[tbase]
		delete(from.kids, fbase)
		to.kids[tbase] = n
		from.dirDrty, to.dirDrty = true, true
		from.mtime, to.mtime = op.at, op.at
		j := d.meta(op.at)
		from.lastM, to.lastM, n.lastM = j+1, j+1, j+1
		if replaced != nil && !n.dir && d.ext4() {
			n.bindDelayed(j) // auto_da_alloc: replace-via-rename
		}
		switch {
		case !d.pending:
		case from == to:
			to.dpend = append(to.dpend, pendEntry{name: tbase, from: fbase, n: n, rename: true, j: j, at: op.at})
		default:
			from.dpend = append(from.dpend, pendEntry{name: fbase, j: j, at: op.at})
			to.dpend = append(to.dpend, pendEntry{name: tbase, n: n, j: j, at: op.at})
		}
	case opWrite:
		d.writeAt(d.inodes[op.ino], op.off, op.data, op.at)
	case opTruncate:
		d.resize(d.inodes[op.ino], op.off, op.at)
	case opSync:
		n := d.inodes[op.ino]
		d.force(n.syncedTxn()) // the transaction of its last change, and all before it
		n.durMtime = n.mtime
		if n.dir {
			n.durKids = maps.Clone(n.kids)
			n.dirDrty = false
			n.dpend = n.dpend[:0]
		} else {
			n.durable = n.data[:len(n.data):len(n.data)]
			n.shared, n.dirty, n.last = true, false, nil
			n.alloc = int64(len(n.data))
			n.clearPend()
		}
	case opDrop:
		n := d.inodes[op.ino]
		if !n.dir {
			n.data = n.durable
			n.shared, n.dirty, n.last = true, false, nil
			n.alloc = min(n.alloc, int64(len(n.data)))
			n.clearPend()
		}
	case opClose:
		n := d.inodes[op.ino]
		n.bindDelayed(d.jseq) // auto_da_alloc: its data reaches the disk before the next commit
		n.daClose = false
	case opChmod:
		n := d.inodes[op.ino]
		n.mode = n.mode&^fs.ModePerm | op.mode
	case opChtimes:
		d.inodes[op.ino].mtime = op.at
	case opPower:
		if d.ext4() {
			d.ext4Apply(int(op.off), nil, op.at)
		} else {
			d.revert()
		}
	case opSubset:
		if d.ext4() {
			d.ext4Apply(int(op.off), op.data, op.at)
		} else {
			d.keepSubset(op.data)
		}
	case opSet:
		n := d.inodes[op.ino]
		n.data = append([]byte(nil), op.data...)
		n.durable = n.data[:len(n.data):len(n.data)]
		n.shared, n.dirty, n.last = true, false, nil
		n.alloc = int64(len(n.data))
		n.clearPend()
	case opFlip:
		d.flips++
		n := d.inodes[op.ino]
		n.unshare(op.off) // op.off < len(durable): data gets its own bytes
		n.data[op.off] ^= op.data[0]
		n.durable = append([]byte(nil), n.durable...)
		n.durable[op.off] ^= op.data[0]
	}
	return nil
}

func (d *Disk) create(p string, perm fs.FileMode) *inode {
	return d.apply(diskOp{kind: opCreate, path: p, mode: perm, at: d.now()})
}

func (d *Disk) mkdir(p string, perm fs.FileMode) *inode {
	return d.apply(diskOp{kind: opMkdir, path: p, mode: perm, at: d.now()})
}

func (d *Disk) remove(p string) { d.apply(diskOp{kind: opRemove, path: p, at: d.now()}) }
func (d *Disk) rename(from, to string) {
	d.apply(diskOp{kind: opRename, path: from, to: to, at: d.now()})
}
func (d *Disk) truncate(n *inode, size int64) {
	d.apply(diskOp{kind: opTruncate, ino: n.ino, off: size, at: d.now()})
}

// unshare gives n.data its own backing array before bytes below len(n.durable) change.
func (n *inode) unshare(lowest int64) {
	if n.shared && lowest < int64(len(n.durable)) {
		n.data = append(make([]byte, 0, cap(n.data)), n.data...)
		n.shared = false
	}
}

// grow makes n.data size bytes long, zero-filling new bytes.
func (n *inode) grow(size int64) {
	old := int64(len(n.data))
	if size <= old {
		return
	}
	n.unshare(old)
	if size <= int64(cap(n.data)) {
		n.data = n.data[:size]
		clear(n.data[old:])
		return
	}
	grown := make([]byte, size, max(size, 2*int64(cap(n.data))))
	copy(grown, n.data)
	n.data = grown
}

// clearPend forgets n's pending writes, keeping their buffers for the next ones.
func (n *inode) clearPend() {
	n.pend, n.pbuf = n.pend[:0], n.pbuf[:0]
}

// writeAt writes p at off in n's page cache and remembers the write for a torn crash and for a
// power loss that keeps a subset.
func (d *Disk) writeAt(n *inode, off int64, p []byte, at time.Time) {
	d.seq++
	if d.pending {
		// Under ext4-ordered the part of the write over blocks the file has on the disk goes there
		// in place; the rest is delayed (see FSModel). Under posix a write is kept or lost whole.
		o, from, end := off, len(n.pbuf), off+int64(len(p))
		n.pbuf = append(n.pbuf, p...)
		w := pendData{j: d.jseq, seq: d.seq, at: at}
		if !d.ext4() {
			w.off, w.from, w.to = o, from, from+len(p)
			n.pend = append(n.pend, w)
			o = end
		} else if split := min(max(n.alloc, o), end); split > o {
			w.off, w.from, w.to = o, from, from+int(split-o)
			n.pend = append(n.pend, w)
			o, from = split, w.to
		}
		if o < end {
			w.off, w.from, w.to, w.delayed = o, from, from+int(end-o), true
			n.pend = append(n.pend, w)
		}
	}
	oldLen := int64(len(n.data))
	end := off + int64(len(p))
	lw := &lastWrite{seq: d.seq, off: off, n: len(p), oldLen: oldLen}
	if off < oldLen {
		lw.old = append([]byte(nil), n.data[off:min(end, oldLen)]...)
	}
	n.unshare(min(off, oldLen))
	n.grow(end)
	copy(n.data[off:], p)
	n.dirty, n.last, n.mtime = true, lw, at
}

// resize truncates or extends n's page cache to size bytes.
func (d *Disk) resize(n *inode, size int64, at time.Time) {
	j := d.meta(at)
	n.lastM = j + 1
	n.alloc = min(n.alloc, size)
	if size == 0 && len(n.data) > 0 && d.ext4() {
		n.daClose = true // ext4_truncate: replace-via-truncate
	}
	if d.pending {
		n.pend = append(n.pend, pendData{off: size, trunc: true, j: j, at: at})
	}
	if size < int64(len(n.data)) {
		n.data = n.data[:size]
	} else {
		n.grow(size)
	}
	n.dirty, n.last, n.mtime = true, nil, at
}

// Flips returns how many bits corruption has flipped on the disk.
func (d *Disk) Flips() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.flips
}

// StartLog makes the disk log every mutation, for Replay. It panics if the disk has already
// been changed: a log that misses its beginning could not be replayed.
func (d *Disk) StartLog() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.mutated && !d.logged {
		panic("faults: Disk.StartLog after the disk was changed; call it on a new disk")
	}
	d.logged = true
}

// LogLen returns how many mutations the disk has logged so far.
func (d *Disk) LogLen() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.log)
}

// TearableAt reports, for each of the log lengths at (in nondecreasing order) and each of
// modes, what Tearable(mode) would report on Replay(n, DiskOptions{}) at the time of the n-th
// mutation: out[i][j] for at[i] and modes[j]. It replays the log once, where asking each Replay would replay it once per length
// and mode. It panics if d was not logging, or at decreases or runs past the log.
func (d *Disk) TearableAt(at []int, modes []string) [][]bool {
	last := 0
	if len(at) > 0 {
		last = at[len(at)-1]
	}
	// Under ext4-ordered Tearable looks at the time (the commit interval): at each length it is the
	// time of the last mutation, which is no later than the crash would come.
	at0 := Epoch
	r := d.Replay(0, DiskOptions{Pending: true, Now: func() time.Time { return at0 }})
	d.mu.Lock()
	if last > len(d.log) {
		d.mu.Unlock()
		panic(fmt.Sprintf("faults: Disk.TearableAt(%d) of a log of %d mutations", last, len(d.log)))
	}
	ops := d.log[:last:last]
	d.mu.Unlock()
	out := make([][]bool, len(at))
	done := 0
	for i, n := range at {
		if n < done {
			panic(fmt.Sprintf("faults: Disk.TearableAt: log length %d after %d", n, done))
		}
		for ; done < n; done++ {
			r.exec(ops[done])
			if !ops[done].at.IsZero() {
				at0 = ops[done].at
			}
		}
		out[i] = make([]bool, len(modes))
		for j, m := range modes {
			out[i][j] = r.Tearable(m)
		}
	}
	return out
}

// Replay returns a new disk on which the first n logged mutations of d have been performed, in
// the state d was in right after them (page cache and durable state alike). Zero fields of opts
// are taken from d (Pending if either has it, Model from d unless given). It panics if d was not logging or n is out of range.
func (d *Disk) Replay(n int, opts DiskOptions) *Disk {
	d.mu.Lock()
	if !d.logged {
		d.mu.Unlock()
		panic("faults: Disk.Replay on a disk that never called StartLog")
	}
	if n < 0 || n > len(d.log) {
		d.mu.Unlock()
		panic(fmt.Sprintf("faults: Disk.Replay(%d) of a log of %d mutations", n, len(d.log)))
	}
	ops := d.log[:n:n]
	d.mu.Unlock()
	if opts.Now == nil {
		opts.Now = d.now
	}
	if opts.Sector == 0 {
		opts.Sector = int(d.sector)
	}
	if opts.Model == "" {
		opts.Model = d.model
	}
	opts.Pending = opts.Pending || d.pending
	r := NewDisk(opts)
	for _, op := range ops {
		r.exec(op)
	}
	return r
}
