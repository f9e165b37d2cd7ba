package faults

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// FSModel names a filesystem persistence model: which states a power loss may leave of the
// operations a program issued. ALICE (Pillai et al., "All File Systems Are Not Created Equal",
// OSDI 2014, §3; its default model is alicedefaultfs.py in github.com/madthanu/alice) calls this
// an abstract persistence model: each system call is split into the updates that reach the disk,
// with a rule for which of them are atomic and which must reach the disk before which others; a
// crash state is any set of updates closed under those rules. chaoskit has two.
//
// # posix (the default)
//
// What POSIX and fsync(2) promise and nothing more, the model ALICE and CrashMonkey look for bugs
// under: a file's data survives once the file is fsynced, a directory entry (a create, a rename,
// an unlink) once its directory is fsynced, and nothing orders two updates that were not. A plain
// power loss keeps exactly what was fsynced; power:subset keeps any subset of the rest (see
// Disk.Crash). A program that passes here passes on every filesystem that keeps fsync's promise.
//
// # ext4-ordered
//
// What ext4 mounted with its defaults (data=ordered, delalloc, auto_da_alloc, commit=5) can
// leave, from the kernel's documentation (Documentation/admin-guide/ext4.rst: the data=ordered,
// commit=nrsec, delalloc and auto_da_alloc options, and "Data Mode") and its source (Linux 6.18,
// fs/ext4/namei.c ext4_rename, fs/ext4/inode.c ext4_truncate, fs/ext4/file.c ext4_release_file):
//
//   - Metadata is journaled, and jbd2 commits transactions whole and in order, so the metadata
//     that survives is that of a prefix of the metadata operations in the order they were issued
//     (creates, mkdirs, unlinks, renames, truncations): a later rename never survives an earlier
//     create that it did not.
//   - An fsync of a file or a directory commits the transaction that holds its last change (a
//     metadata operation on it, or a write to it: a write updates the inode in the running
//     transaction, and the fsync allocates its delayed blocks there), and so every metadata
//     operation issued before that change: a file created and fsynced keeps its directory entry
//     without an fsync of the directory, and a rename survives the fsync of any file written
//     after it (fs/ext4/fsync.c).
//   - The running transaction is committed at most commit=5 seconds after it began, so a metadata
//     operation issued 5 seconds or more before the power loss (in the Disk's time, which is
//     chaoskit's virtual time) has survived.
//   - Data is not journaled. A write within blocks the file already has on the disk (an overwrite
//     below the size it had at its last fsync) goes to the disk in place, whenever writeback takes
//     it: kept or lost on its own, ordered with nothing.
//   - A write past those blocks is delayed-allocated: its blocks, and the size that exposes them,
//     are written only at writeback, and in data=ordered the data reaches the disk before the
//     transaction that records the size. So such writes to a file survive as a prefix of them, in
//     order, never one without an earlier one and never as zeros or garbage; and one survives only
//     with every metadata operation issued before it (its transaction comes after theirs). Whether
//     writeback has run is never assumed: vm.dirty_expire_centisecs (30 s) is a threshold, not a
//     promise, and the model keeps such a write only when something forces it.
//   - auto_da_alloc: a rename onto an existing file, and the close of a file that was truncated
//     to zero, allocate the file's delayed blocks at once, so that its data so far reaches the
//     disk before the next commit: if the rename (or any metadata operation issued after the
//     close) survives, that data survives too. A rename onto a new name does not: that is ext4's
//     zero-length-file window, which the model keeps.
//
// A plain power loss keeps the least of these: the metadata that fsyncs and the 5-second commit
// forced, and the data that fsyncs and auto_da_alloc forced. power:subset draws one of the other
// states: a later point of the journal, and the writes the rules let survive with it. torn tears
// only an overwrite in place: a delayed write either lands with its size or not at all.
//
// Where ext4's behaviour depends on timing the model assumes the least, so that it never keeps
// more than ext4 would: transactions are as long as they may be (only fsyncs and the commit
// interval end them), writeback never runs on its own (it usually does within 35 seconds), and
// where the kernel sends the close of a file late (FUSE sends its release after close(2)
// returns), auto_da_alloc is seen late.
type FSModel string

// The filesystem persistence models.
const (
	// POSIX keeps what fsync promises and nothing more: the default, for finding bugs.
	POSIX FSModel = "posix"
	// Ext4Ordered keeps what ext4 with data=ordered and its default options keeps.
	Ext4Ordered FSModel = "ext4-ordered"
)

// ext4Commit is ext4's commit interval (mount option commit=, default 5 seconds): the oldest a
// running transaction gets before jbd2 commits it.
const ext4Commit = 5 * time.Second

// FSModels lists the models, the default first.
func FSModels() []FSModel { return []FSModel{POSIX, Ext4Ordered} }

// ParseFSModel parses a model's name; the empty string is POSIX.
func ParseFSModel(s string) (FSModel, error) {
	switch FSModel(s) {
	case "", POSIX:
		return POSIX, nil
	case Ext4Ordered:
		return Ext4Ordered, nil
	}
	names := make([]string, 0, 2)
	for _, m := range FSModels() {
		names = append(names, string(m))
	}
	return "", fmt.Errorf("unknown filesystem model %q (want %s)", s, strings.Join(names, " or "))
}

// String returns the model's name; the zero value is "posix".
func (m FSModel) String() string {
	if m == "" {
		return string(POSIX)
	}
	return string(m)
}

// ---- the journal's bookkeeping, kept for every disk and used by ext4-ordered ----

// ext4 reports whether d applies crashes under Ext4Ordered.
func (d *Disk) ext4() bool { return d.model == Ext4Ordered }

// meta numbers a metadata operation issued at at: its index in the journal's order.
func (d *Disk) meta(at time.Time) int {
	j := d.jseq
	d.jseq++
	if d.ext4() {
		d.jtimes = append(d.jtimes, at)
	}
	return j
}

// force marks the metadata operations below upTo committed.
func (d *Disk) force(upTo int) {
	if upTo <= d.forced {
		return
	}
	d.jtimes = d.jtimes[min(upTo-d.forced, len(d.jtimes)):]
	d.forced = upTo
}

// cutMin returns how many metadata operations a power loss now keeps at least: those fsyncs
// forced, and those the commit interval has committed.
func (d *Disk) cutMin() int {
	cut := d.forced
	limit := d.now().Add(-ext4Commit)
	for i, at := range d.jtimes {
		if at.After(limit) {
			break
		}
		cut = d.forced + i + 1
	}
	return cut
}

// syncedTxn returns how many metadata operations an fsync of n commits under ext4-ordered:
// those up to the transaction of n's last change, which is its last metadata operation or, if
// later, its last write not yet fsynced (ext4 updates a written inode's times, and allocates its
// delayed blocks at the fsync, in the running transaction).
func (n *inode) syncedTxn() int {
	upTo := n.lastM
	for _, p := range n.pend {
		if !p.trunc {
			upTo = max(upTo, p.j)
		}
	}
	return upTo
}

// bindDelayed makes the data n's pending writes hold survive whenever the metadata operation j
// does (auto_da_alloc).
func (n *inode) bindDelayed(j int) {
	for i := range n.pend {
		if p := &n.pend[i]; !p.trunc && !p.bound {
			p.bound, p.bind = true, j
		}
	}
}

// forcedAt reports whether a write p survives every power loss that keeps cut metadata
// operations.
func (p pendData) forcedAt(cut int) bool { return p.bound && p.bind < cut }

// ext4Write names a pending write: the i-th of file n's pend.
type ext4Write struct {
	n *inode
	i int
}

// ext4Writes lists the pending writes of every file, by inode number and then in issue order:
// the order a subset power loss's keep marks follow.
func (d *Disk) ext4Writes() []ext4Write {
	var ws []ext4Write
	for _, n := range d.inodes {
		for i, p := range n.pend {
			if !p.trunc {
				ws = append(ws, ext4Write{n, i})
			}
		}
	}
	return ws
}

// ext4Power cuts the power under ext4-ordered keeping the least it can (power, torn).
func (d *Disk) ext4Power(f Fault, rng *rand.Rand) string {
	cut := d.cutMin()
	var torn *tornWrite
	if f.Kind == Torn {
		torn = d.ext4TornCandidate(cut)
	}
	msg := fmt.Sprintf("power lost (ext4-ordered): %s, %s", d.journalSays(cut), d.ext4Kept(cut, nil))
	d.apply(diskOp{kind: opPower, off: int64(cut), at: d.now()})
	switch {
	case torn != nil:
		return msg + "; " + d.ext4Tear(torn, f.Mode, rng)
	case f.Kind == Torn:
		return msg + "; no overwrite in place to tear"
	}
	return msg
}

// journalSays describes what a power loss keeping cut metadata operations keeps of the journal.
func (d *Disk) journalSays(cut int) string {
	return fmt.Sprintf("%d of %d metadata operations since the last commit kept", cut-d.forced, d.jseq-d.forced)
}

// ext4Kept says how many of the pending writes a power loss keeping cut metadata operations and
// the writes keep marks (nil: none but the forced) keeps.
func (d *Disk) ext4Kept(cut int, keep []byte) string {
	ws := d.ext4Writes()
	kept := 0
	for i, w := range ws {
		if w.n.pend[w.i].forcedAt(cut) || keep != nil && keep[i] == 1 {
			kept++
		}
	}
	return fmt.Sprintf("%d of %d writes not fsynced kept", kept, len(ws))
}

// ext4Subset cuts the power under ext4-ordered keeping a state drawn from rng among those the
// model allows: the journal cut at a point from the least a power loss keeps to everything issued,
// each overwrite in place kept or not, and of each file's delayed writes that the cut allows, a
// prefix. A draw that would keep only what a plain power loss keeps is moved off it when the
// model allows anything else.
func (d *Disk) ext4Subset(rng *rand.Rand) string {
	if rng == nil {
		rng = rand.New(rand.NewPCG(0, 0))
	}
	lo, hi := d.cutMin(), d.jseq
	cut := lo + rng.IntN(hi-lo+1)
	ws := d.ext4Writes()
	keep := d.drawWrites(ws, cut, rng)
	if cut == lo && !slices.Contains(keep, 1) {
		if hi > lo {
			cut = lo + 1 + rng.IntN(hi-lo)
			keep = d.drawWrites(ws, cut, rng)
		} else if free := d.freeWrites(ws, cut); len(free) > 0 {
			keep[free[rng.IntN(len(free))]] = 1
		}
	}
	msg := fmt.Sprintf("power lost (ext4-ordered), keeping a state it allows: %s, %s", d.journalSays(cut), d.ext4Kept(cut, keep))
	d.apply(diskOp{kind: opSubset, off: int64(cut), data: keep, at: d.now()})
	return msg
}

// drawWrites draws which of the pending writes ws a power loss keeping cut metadata operations
// keeps beyond the forced ones: each overwrite in place with even odds, and of each file's
// delayed writes, a prefix of those the cut allows, of a length drawn evenly.
func (d *Disk) drawWrites(ws []ext4Write, cut int, rng *rand.Rand) []byte {
	keep := make([]byte, len(ws))
	for start := 0; start < len(ws); {
		end, allowed := start, []int(nil)
		for ; end < len(ws) && ws[end].n == ws[start].n; end++ {
			switch p := ws[end].n.pend[ws[end].i]; {
			case p.forcedAt(cut):
			case !p.delayed:
				keep[end] = byte(rng.UintN(2))
			case p.j <= cut: // the writes' j only grow: those the cut allows come first
				allowed = append(allowed, end)
			}
		}
		for _, i := range allowed[:rng.IntN(len(allowed)+1)] {
			keep[i] = 1
		}
		start = end
	}
	return keep
}

// freeWrites lists the writes of ws a power loss keeping cut metadata operations may keep or
// lose: overwrites in place, and the first delayed write of each file if the cut allows it.
func (d *Disk) freeWrites(ws []ext4Write, cut int) []int {
	var free []int
	first := map[*inode]bool{}
	for i, w := range ws {
		p := w.n.pend[w.i]
		switch {
		case p.forcedAt(cut):
		case !p.delayed:
			free = append(free, i)
		case !first[w.n]:
			first[w.n] = true
			if p.j <= cut {
				free = append(free, i)
			}
		}
	}
	return free
}

// ext4Apply makes the disk what a power loss at time at keeping cut metadata operations and the
// writes keep marks (keep nil: the forced ones only) leaves: every directory its entries after
// the kept metadata operations, every file its durable bytes with the kept truncations and writes
// applied in issue order; all of it durable, nothing pending.
//
// Modification times are inode metadata, journaled: a directory's is that of its last entry
// change kept; a file's that of its last truncation kept or write whose update of the inode was
// committed: one issued before a kept metadata operation, or 5 seconds or more before the power
// loss (the commit interval), or a delayed write whose data was kept (the size that exposes it
// is in a later transaction). An overwrite in place that reached the disk did so by writeback,
// which commits nothing. Else each has its time at its last fsync.
func (d *Disk) ext4Apply(cut int, keep []byte, at time.Time) {
	ws := d.ext4Writes()
	if keep != nil && len(keep) != len(ws) {
		panic(fmt.Sprintf("faults: an ext4-ordered power loss over %d pending writes replayed over %d", len(keep), len(ws)))
	}
	kept := map[ext4Write]bool{}
	for i, w := range ws {
		if w.n.pend[w.i].forcedAt(cut) || keep != nil && keep[i] == 1 {
			kept[w] = true
		}
	}
	for _, n := range d.inodes {
		if n.dir {
			kids := d.kidsAt(n, cut)
			n.kids, n.durKids, n.dirDrty = kids, maps.Clone(kids), false
			for _, e := range n.dpend {
				if e.j < cut {
					n.durMtime = e.at
				}
			}
			n.mtime = n.durMtime
			continue
		}
		keeps := func(i int) bool {
			p := n.pend[i] // a truncation is kept with the metadata before the cut
			return p.trunc && p.j < cut || !p.trunc && kept[ext4Write{n, i}]
		}
		n.settle(keeps, func(i int) bool {
			p := n.pend[i]
			return p.j < cut || !p.trunc && (p.delayed && kept[ext4Write{n, i}] || !p.at.After(at.Add(-ext4Commit)))
		})
		n.alloc, n.daClose = int64(len(n.data)), false
	}
	d.forgetPending()
	d.force(d.jseq)
}

// kidsAt returns directory n's entries after its pending entry changes below cut.
func (d *Disk) kidsAt(n *inode, cut int) map[string]*inode {
	kids := maps.Clone(n.durKids)
	for _, e := range n.dpend {
		if e.j < cut {
			e.applyTo(kids)
		}
	}
	return kids
}

// reachableAt reports whether n would be reachable after a power loss keeping cut metadata
// operations.
func (d *Disk) reachableAt(n *inode, cut int) bool {
	seen := map[*inode]bool{}
	var visit func(m *inode) bool
	visit = func(m *inode) bool {
		if m == n {
			return true
		}
		if seen[m] || !m.dir {
			return false
		}
		seen[m] = true
		kids := d.kidsAt(m, cut)
		for _, k := range slices.Sorted(maps.Keys(kids)) {
			if visit(kids[k]) {
				return true
			}
		}
		return false
	}
	return visit(d.root)
}

// tornWrite is an overwrite in place that a torn power loss lands partially.
type tornWrite struct {
	n     *inode
	off   int64
	bytes []byte
}

// ext4TornCandidate returns the last write issued if a torn power loss keeping cut metadata
// operations can tear it, else nil: an overwrite in place, not forced, with no truncation of its
// file after it, on a file the power loss leaves reachable.
func (d *Disk) ext4TornCandidate(cut int) *tornWrite {
	var last *inode
	li := -1
	for _, n := range d.inodes {
		for i, p := range n.pend {
			if !p.trunc && (last == nil || p.seq > last.pend[li].seq) {
				last, li = n, i
			}
		}
	}
	if last == nil {
		return nil
	}
	p := last.pend[li]
	if p.delayed || p.forcedAt(cut) || p.to == p.from || !d.reachableAt(last, cut) {
		return nil
	}
	for _, q := range last.pend[li+1:] {
		if q.trunc {
			return nil
		}
	}
	return &tornWrite{n: last, off: p.off, bytes: append([]byte(nil), last.pbuf[p.from:p.to]...)}
}

// ext4Tear lands w, on the disk the power loss left, up to its last sector boundary (mode
// "prefix") or with garbage after it (mode "garbage").
func (d *Disk) ext4Tear(w *tornWrite, mode string, rng *rand.Rand) string {
	end := w.off + int64(len(w.bytes))
	tp := d.tearPoint(&lastWrite{off: w.off, n: len(w.bytes)})
	data := append([]byte(nil), w.n.data...)
	copy(data[w.off:tp], w.bytes[:tp-w.off])
	if mode == "garbage" {
		for i := tp; i < end; i++ {
			data[i] = byte(rng.UintN(256))
		}
	}
	d.apply(diskOp{kind: opSet, ino: w.n.ino, data: data})
	path := d.durablePath(w.n)
	if mode == "garbage" {
		return fmt.Sprintf("torn overwrite of %s: bytes %d..%d landed, %d..%d are garbage", path, w.off, tp, tp, end)
	}
	return fmt.Sprintf("torn overwrite of %s: bytes %d..%d landed, %d..%d kept their old content", path, w.off, tp, tp, end)
}

// ext4Tearable reports what Tearable(mode) does under ext4-ordered.
func (d *Disk) ext4Tearable(mode string) bool {
	cut := d.cutMin()
	if mode == "subset" {
		if d.jseq > cut {
			return true
		}
		seen := d.reachable()
		ws := d.ext4Writes()
		for _, i := range d.freeWrites(ws, cut) {
			if seen[ws[i].n.ino] {
				return true
			}
		}
		return false
	}
	w := d.ext4TornCandidate(cut)
	if w == nil {
		return false
	}
	return mode == "garbage" || d.tearPoint(&lastWrite{off: w.off, n: len(w.bytes)}) > w.off
}
