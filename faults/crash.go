package faults

import (
	"fmt"
	"maps"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strings"
)

// Crash applies the disk-side effect of a crash fault (Kill, Power, Torn or Corrupt) and
// returns one line saying what it did. rng chooses the garbage of a torn write and the bit a
// corruption flips; pass a seeded source for reproducible crashes. Crash panics on a kind that
// is not a crash.
//
//   - Kill keeps everything: the page cache outlives the process.
//   - Power keeps only what was fsynced: each file reverts to its bytes at its last fsync, each
//     directory to its entries at its last directory fsync, and each to its modification time
//     then (an inode's times are metadata, written with it: a write that is lost changes no
//     time). In mode "subset" it keeps a subset of what was not fsynced, drawn from rng (see
//     below), and each file and directory the time of the last of its operations kept.
//   - Torn is Power, except that the file holding the last un-fsynced write keeps its other
//     un-fsynced writes and gets that last one torn at a sector boundary: only the prefix up to
//     the boundary lands (mode "prefix"), or the rest of it reads back as garbage (mode
//     "garbage"). A write within one sector either lands whole or, as garbage, not at all.
//   - Corrupt keeps everything, like Kill, then flips one bit of one byte that had reached the
//     disk, in a file chosen by rng.
//
// This is the POSIX model; on a disk whose DiskOptions.Model is Ext4Ordered, power, power:subset
// and torn keep what that model allows instead (see FSModel).
//
// After a power loss or a torn write, everything left is durable. After a kill or a corruption
// the page cache stays as it was, dirty bytes and all: a later power loss can still take them.
//
// A power loss in mode "subset" models a disk and a kernel that write dirty pages and directory
// entries back in their own order, as ALICE and pebble's CrashClone do: of the operations
// issued since each file's last fsync (writes, truncations) and since each directory's last
// directory fsync (entries added, removed, renamed within it), each is kept or lost, with even
// odds drawn from rng, and each file and directory becomes its durable state with the kept
// operations applied in the order they were issued. So a later write can land while an earlier
// one to the same file does not (the gap reads as zeros), which is also a reordering. A rename
// within one directory is kept or lost whole; a rename across two is an entry removed from one
// and one added to the other, each kept or lost on its own, as each directory's fsync makes its
// own side durable. A draw that keeps none of the operations, or all of them (when there are
// several), has one of them, drawn too, changed, so that the outcome is neither a plain power
// loss nor a kill. rng may be nil only for kill and plain power losses.
func (d *Disk) Crash(f Fault, rng *rand.Rand) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch f.Kind {
	case Kill, ModelDiverge:
		return "process killed: the page cache survives"
	case Corrupt:
		return d.corrupt(rng)
	case Power, Torn:
		switch {
		case f.Kind == Power && f.Mode == "subset" && d.ext4():
			return d.ext4Subset(rng)
		case f.Kind == Power && f.Mode == "subset":
			d.mustKeepPending("Crash(power@K:subset)")
			return d.subsetLoss(rng)
		case d.ext4():
			return d.ext4Power(f, rng)
		}
		return d.powerLoss(f, rng)
	}
	panic(fmt.Sprintf("faults: Disk.Crash with %q, which is not a crash", f.Kind))
}

// tornCandidate returns the inode holding the last un-fsynced write, or nil.
func (d *Disk) tornCandidate() *inode {
	var c *inode
	for _, n := range d.inodes {
		if n.last != nil && n.dirty && (c == nil || n.last.seq > c.last.seq) {
			c = n
		}
	}
	return c
}

// tearPoint returns where a sector-aligned tear of w falls: the last sector boundary strictly
// inside the write, or its start if it lies within one sector.
func (d *Disk) tearPoint(w *lastWrite) int64 {
	end := w.off + int64(w.n)
	tp := (end - 1) / d.sector * d.sector
	return max(tp, w.off)
}

// Tearable reports whether a crash of the given mode would leave the disk differently from a
// plain power loss right now. For a torn write ("prefix" or "garbage"): some un-fsynced write is
// there to tear, its file survives the power loss under a durable name, and (for "prefix") a
// sector boundary falls inside it. For a power loss keeping a subset ("subset"): some operation
// not yet fsynced is there to keep, on a file or directory that a power loss could leave
// reachable.
func (d *Disk) Tearable(mode string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ext4() {
		return d.ext4Tearable(mode)
	}
	if mode == "subset" {
		d.mustKeepPending(`Tearable("subset")`)
		return d.hasPendingOps()
	}
	c := d.tornCandidate()
	if c == nil || c.last.n == 0 || d.durablePath(c) == "" {
		return false
	}
	return mode == "garbage" || d.tearPoint(c.last) > c.last.off
}

func (d *Disk) powerLoss(f Fault, rng *rand.Rand) string {
	var c *inode
	var live []byte
	var w *lastWrite
	if f.Kind == Torn {
		if c = d.tornCandidate(); c != nil {
			live, w = c.data, c.last
		}
	}
	d.record(diskOp{kind: opPower})
	files, dirs, seen := d.revert()
	msg := fmt.Sprintf("power lost: %d file(s) back to their last fsync, %d directory(ies) back to their last directory fsync", files, dirs)
	if c == nil || !seen[c] {
		if f.Kind == Torn {
			msg += "; no surviving un-fsynced write to tear"
		}
		return msg
	}
	return msg + "; " + d.tear(c, live, w, f.Mode, rng)
}

// revert puts every reachable directory back to its durable entries and every reachable file
// back to its durable bytes. It returns how many of them changed and the set it reached.
func (d *Disk) revert() (files, dirs int, seen map[*inode]bool) {
	seen = map[*inode]bool{}
	var walk func(n *inode)
	walk = func(n *inode) {
		if seen[n] {
			return
		}
		seen[n] = true
		if n.dir {
			if n.dirDrty {
				dirs++
			}
			n.kids = maps.Clone(n.durKids)
			n.dirDrty, n.mtime = false, n.durMtime
			for _, k := range slices.Sorted(maps.Keys(n.kids)) {
				walk(n.kids[k])
			}
			return
		}
		if n.dirty {
			files++
		}
		n.data, n.mtime = n.durable, n.durMtime
		n.shared, n.dirty, n.last = true, false, nil
	}
	walk(d.root)
	d.forgetPending()
	return files, dirs, seen
}

// forgetPending forgets every operation not yet fsynced: after a power loss nothing is pending,
// on the files that survived it and on those that did not.
func (d *Disk) forgetPending() {
	for _, n := range d.inodes {
		n.clearPend()
		n.dpend = n.dpend[:0]
	}
}

// opRef names one pending operation: the i-th of inode n's pend (a file) or dpend (a
// directory).
type opRef struct {
	n *inode
	i int
}

// mustKeepPending panics, naming what was asked, if d does not keep its pending operations.
func (d *Disk) mustKeepPending(what string) {
	if !d.pending {
		panic("faults: Disk." + what + " on a disk made without DiskOptions.Pending")
	}
}

// reachable marks, by inode number, the inodes a power loss could leave reachable: those that
// the durable entries and the pending additions lead to.
func (d *Disk) reachable() []bool { return d.reach(false) }

// reach marks, by inode number, the inodes that the durable entries and the pending additions
// lead to, and with live the live entries too.
func (d *Disk) reach(live bool) []bool {
	seen := make([]bool, len(d.inodes))
	var visit func(n *inode)
	visit = func(n *inode) {
		if seen[n.ino] {
			return
		}
		seen[n.ino] = true
		if !n.dir {
			return
		}
		for _, k := range n.durKids {
			visit(k)
		}
		if live {
			for _, k := range n.kids {
				visit(k)
			}
		}
		for _, e := range n.dpend {
			if e.n != nil {
				visit(e.n)
			}
		}
	}
	visit(d.root)
	return seen
}

// pending returns how many operations inode n has not yet fsynced.
func (n *inode) pending() int {
	if n.dir {
		return len(n.dpend)
	}
	return len(n.pend)
}

// pendingOps lists the operations not yet fsynced that a power loss could keep, in a stable
// order: by inode number, then in the order they were issued. It leaves out those of inodes
// that no power loss could leave reachable.
func (d *Disk) pendingOps() []opRef {
	seen := d.reachable()
	var refs []opRef
	for _, n := range d.inodes {
		if seen[n.ino] {
			for i := range n.pending() {
				refs = append(refs, opRef{n, i})
			}
		}
	}
	return refs
}

// hasPendingOps reports whether pendingOps would list anything.
func (d *Disk) hasPendingOps() bool {
	if !slices.ContainsFunc(d.inodes, func(n *inode) bool { return n.pending() > 0 }) {
		return false // the common case, checked without walking the tree
	}
	seen := d.reachable()
	return slices.ContainsFunc(d.inodes, func(n *inode) bool { return seen[n.ino] && n.pending() > 0 })
}

// subsetLoss cuts the power keeping a subset of the pending operations, drawn from rng.
func (d *Disk) subsetLoss(rng *rand.Rand) string {
	if rng == nil {
		rng = rand.New(rand.NewPCG(0, 0))
	}
	refs := d.pendingOps()
	keep := make([]byte, len(refs))
	kept := 0
	for i := range keep {
		keep[i] = byte(rng.UintN(2))
		kept += int(keep[i])
	}
	if len(refs) > 0 && (kept == 0 || kept == len(refs) && len(refs) > 1) {
		j := rng.IntN(len(refs))
		keep[j] ^= 1
		kept += 2*int(keep[j]) - 1
	}
	msg := d.describeSubset(refs, keep, kept)
	d.apply(diskOp{kind: opSubset, data: keep})
	return msg
}

// describeSubset says which pending operations a subset loss keeps and which it loses, a few of
// each.
func (d *Disk) describeSubset(refs []opRef, keep []byte, kept int) string {
	if len(refs) == 0 {
		return "power lost: nothing was pending to keep a subset of, so only what was fsynced survives"
	}
	paths := map[*inode]string{}
	d.walk(d.root, "", false, func(p string, n *inode) {
		if _, ok := paths[n]; !ok {
			paths[n] = p
		}
	})
	d.walk(d.root, "", true, func(p string, n *inode) {
		if _, ok := paths[n]; !ok {
			paths[n] = p
		}
	})
	join := func(dir, name string) string {
		if dir == "" {
			return name
		}
		return dir + "/" + name
	}
	say := func(r opRef) string {
		p, ok := paths[r.n]
		if !ok {
			p = "(an unlinked file)"
		}
		if r.n.dir {
			e := r.n.dpend[r.i]
			switch {
			case e.rename:
				return fmt.Sprintf("rename %s -> %s", join(p, e.from), join(p, e.name))
			case e.n != nil:
				return fmt.Sprintf("entry %s added", join(p, e.name))
			}
			return fmt.Sprintf("entry %s removed", join(p, e.name))
		}
		w := r.n.pend[r.i]
		if w.trunc {
			return fmt.Sprintf("truncate %s to %dB", p, w.off)
		}
		return fmt.Sprintf("write %s +%dB @%d", p, w.to-w.from, w.off)
	}
	var ks, ls []string
	for i, r := range refs {
		if keep[i] == 1 {
			ks = append(ks, say(r))
		} else {
			ls = append(ls, say(r))
		}
	}
	few := func(list []string) string {
		const most = 6
		if len(list) == 0 {
			return "nothing"
		}
		if len(list) > most {
			return strings.Join(list[:most], ", ") + fmt.Sprintf(" and %d more", len(list)-most)
		}
		return strings.Join(list, ", ")
	}
	return fmt.Sprintf("power lost, keeping %d of %d operations not fsynced: kept %s; lost %s", kept, len(refs), few(ks), few(ls))
}

// keepSubset makes the disk what a power loss keeping the pending operations that keep marks
// leaves (keep[i] for the i-th of pendingOps): every file and directory its durable state with
// the kept operations applied in order, and durable. It panics if keep does not match the
// pending operations, which would be a replay gone wrong.
func (d *Disk) keepSubset(keep []byte) {
	refs := d.pendingOps()
	if len(refs) != len(keep) {
		panic(fmt.Sprintf("faults: a subset power loss over %d pending operations replayed over %d", len(keep), len(refs)))
	}
	kept := map[opRef]bool{}
	for i, r := range refs {
		if keep[i] == 1 {
			kept[r] = true
		}
	}
	for _, n := range d.inodes {
		if n.dir {
			kids, mtime := maps.Clone(n.durKids), n.durMtime
			for i, e := range n.dpend {
				if kept[opRef{n, i}] {
					e.applyTo(kids)
					mtime = e.at
				}
			}
			n.kids, n.durKids, n.dirDrty = kids, maps.Clone(kids), false
			n.mtime, n.durMtime = mtime, mtime
			continue
		}
		keep := func(i int) bool { return kept[opRef{n, i}] }
		n.settle(keep, keep)
	}
	d.forgetPending()
}

// settle makes file n's content, all of it durable, its durable bytes with the pending writes
// that keep keeps (by their index in n.pend) applied in issue order: what a power loss leaves.
// The durable bytes are copied before the first write lands on them, never changed in place.
// Its modification time is that of the last pending operation whose update of the inode
// survives (meta), or else the one it had at its last fsync.
func (n *inode) settle(keep, meta func(i int) bool) {
	data, mtime := n.durable, n.durMtime
	changed := false
	for i, w := range n.pend {
		if meta(i) {
			mtime = w.at
		}
		if !keep(i) {
			continue
		}
		if !changed {
			data, changed = append([]byte(nil), data...), true
		}
		data = w.applyTo(data, n.pbuf)
	}
	n.mtime, n.durMtime = mtime, mtime
	n.data = data
	n.durable = data[:len(data):len(data)]
	n.shared, n.dirty, n.last = true, false, nil
}

// tear rebuilds n's content from the live bytes it had before the power loss, with w torn.
func (d *Disk) tear(n *inode, live []byte, w *lastWrite, mode string, rng *rand.Rand) string {
	end := w.off + int64(w.n)
	tp := d.tearPoint(w)
	data := append([]byte(nil), live...)
	path := d.durablePath(n)
	if mode == "garbage" {
		for i := tp; i < end; i++ {
			data[i] = byte(rng.UintN(256))
		}
	} else {
		for i := tp; i < min(end, w.oldLen); i++ {
			data[i] = w.old[i-w.off]
		}
		data = data[:max(w.oldLen, tp)]
	}
	d.apply(diskOp{kind: opSet, ino: n.ino, data: data})
	if mode == "garbage" {
		return fmt.Sprintf("torn write to %s: bytes %d..%d landed, %d..%d are garbage", path, w.off, tp, tp, end)
	}
	return fmt.Sprintf("torn write to %s: bytes %d..%d landed, %d..%d lost", path, w.off, tp, tp, end)
}

// corrupt flips one bit of a durable byte of a file that a restarted process would read.
func (d *Disk) corrupt(rng *rand.Rand) string {
	type cand struct {
		path string
		n    *inode
		size int
	}
	var cands []cand
	d.walk(d.root, "", false, func(p string, n *inode) {
		if size := min(len(n.durable), len(n.data)); !n.dir && size > 0 {
			cands = append(cands, cand{p, n, size})
		}
	})
	if len(cands) == 0 {
		return "process killed; nothing durable to corrupt"
	}
	c := cands[rng.IntN(len(cands))]
	off := rng.IntN(c.size)
	bit := byte(1) << rng.UintN(8)
	d.apply(diskOp{kind: opFlip, ino: c.n.ino, off: int64(off), data: []byte{bit}})
	return fmt.Sprintf("process killed; bit %d of byte %d of %s flipped", bits.TrailingZeros8(bit), off, c.path)
}

// walk visits every inode reachable from n, depth first in name order, through the live
// entries or (durable) the durable ones.
func (d *Disk) walk(n *inode, p string, durable bool, visit func(p string, n *inode)) {
	visit(p, n)
	if !n.dir {
		return
	}
	kids := n.kids
	if durable {
		kids = n.durKids
	}
	for _, k := range slices.Sorted(maps.Keys(kids)) {
		kp := k
		if p != "" {
			kp = p + "/" + k
		}
		d.walk(kids[k], kp, durable, visit)
	}
}

// durablePath returns a path under which n survives a power loss, or "".
func (d *Disk) durablePath(n *inode) string {
	found := ""
	d.walk(d.root, "", true, func(p string, m *inode) {
		if m == n && found == "" {
			found = p
		}
	})
	return found
}
