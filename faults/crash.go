package faults

import (
	"fmt"
	"maps"
	"math/bits"
	"math/rand/v2"
	"slices"
)

// Crash applies the disk-side effect of a crash fault (Kill, Power, Torn or Corrupt) and
// returns one line saying what it did. rng chooses the garbage of a torn write and the bit a
// corruption flips; pass a seeded source for reproducible crashes. Crash panics on a kind that
// is not a crash.
//
//   - Kill keeps everything: the page cache outlives the process.
//   - Power keeps only what was fsynced: each file reverts to its bytes at its last fsync, each
//     directory to its entries at its last directory fsync.
//   - Torn is Power, except that the file holding the last un-fsynced write keeps its other
//     un-fsynced writes and gets that last one torn at a sector boundary: only the prefix up to
//     the boundary lands (mode "prefix"), or the rest of it reads back as garbage (mode
//     "garbage"). A write within one sector either lands whole or, as garbage, not at all.
//   - Corrupt keeps everything, like Kill, then flips one bit of one byte that had reached the
//     disk, in a file chosen by rng.
//
// After a power loss or a torn write, everything left is durable. After a kill or a corruption
// the page cache stays as it was, dirty bytes and all: a later power loss can still take them.
func (d *Disk) Crash(f Fault, rng *rand.Rand) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch f.Kind {
	case Kill:
		return "process killed: the page cache survives"
	case Corrupt:
		return d.corrupt(rng)
	case Power, Torn:
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

// Tearable reports whether a torn crash of the given mode would leave the disk differently from
// a plain power loss right now: some un-fsynced write is there to tear, its file survives the
// power loss under a durable name, and (for "prefix") a sector boundary falls inside it.
func (d *Disk) Tearable(mode string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
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
			n.dirDrty = false
			for _, k := range slices.Sorted(maps.Keys(n.kids)) {
				walk(n.kids[k])
			}
			return
		}
		if n.dirty {
			files++
		}
		n.data = n.durable
		n.shared, n.dirty, n.last = true, false, nil
	}
	walk(d.root)
	return files, dirs, seen
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
