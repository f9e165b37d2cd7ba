package faults

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"maps"
	"slices"
	"time"
)

// Digest returns a digest of everything about the disk that a process can observe or a later
// crash can act on: the names in every directory, live and durable; every file's bytes, live and
// durable, its mode and modification time; the writes and directory changes not yet fsynced, with
// what a torn write or a subset of them would keep; the journal's order under ext4-ordered;
// flipped bits; whether the disk is full. Two disks with the same digest behave the same from
// here on, whatever operations brought each of them there: a disk after a power cut at one beat
// and one after a power cut at a later beat that only read have the same digest.
//
// Numbers that only count (inode numbers, the sequence of writes, the journal's operations) enter
// it relative to each other, as the disk only ever compares them: in the order of the inodes, as
// writes ago, as operations since the last commit; the journal's order only under ext4-ordered,
// the one model that reads it. An inode no name leads to, live or durable, enters it only as the
// one a torn crash would pick and not tear (under ext4-ordered, whole while it holds such a write).
func (d *Disk) Digest() [32]byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	dg := digester{h: sha256.New()}
	keep := d.reach(true)
	// An inode no name leads to can matter only as one a torn crash picks (tornCandidate, the
	// newest dirty write), which then tears nothing: all that counts of such inodes is where their
	// writes fall among the others' (below, order). Under ext4-ordered they enter whole.
	if d.ext4() {
		for _, n := range d.inodes {
			if n.last != nil && n.dirty {
				keep[n.ino] = true
			}
		}
	}
	rank := make([]int, len(d.inodes))
	r := 0
	for i, k := range keep {
		if k {
			rank[i], r = r, r+1
		} else {
			rank[i] = -1
		}
	}
	id := func(n *inode) int {
		if n == nil {
			return -2
		}
		return rank[n.ino]
	}
	dg.bytes([]byte(d.model))
	dg.ints(int(d.sector), d.flips, b2i(d.pending), b2i(d.mutated), rank[d.root.ino])
	ext4 := d.ext4()
	if ext4 { // the journal's order: posix never looks at it
		dg.ints(d.jseq-d.forced, len(d.jtimes))
		for _, t := range d.jtimes {
			dg.time(t)
		}
	}
	dg.ints(b2i(d.space.full), int(d.space.budget))
	dg.time(d.space.until)
	// The inodes with a dirty write, newest write first, a run of nameless ones as one.
	var dirty []*inode
	for _, n := range d.inodes {
		if n.last != nil && n.dirty {
			dirty = append(dirty, n)
		}
	}
	slices.SortFunc(dirty, func(a, b *inode) int { return cmp.Compare(b.last.seq, a.last.seq) })
	prev := 0
	for _, n := range dirty {
		if r := id(n); r >= 0 || prev >= 0 {
			dg.ints(r)
			prev = r
		}
	}
	rel := func(j int) int {
		if !ext4 {
			return 0
		}
		return j - d.forced
	}
	for _, n := range d.inodes {
		if !keep[n.ino] {
			continue
		}
		dg.ints(id(n), b2i(n.dir), int(n.mode), rel(n.lastM))
		dg.time(n.mtime)
		if n.dir {
			for _, m := range [](map[string]*inode){n.kids, n.durKids} {
				dg.ints(len(m))
				for _, k := range slices.Sorted(maps.Keys(m)) {
					dg.bytes([]byte(k))
					dg.ints(id(m[k]))
				}
			}
			dg.ints(b2i(n.dirDrty), len(n.dpend))
			for _, e := range n.dpend {
				dg.bytes([]byte(e.name))
				dg.bytes([]byte(e.from))
				dg.ints(id(e.n), b2i(e.rename), rel(e.j))
			}
			continue
		}
		dg.bytes(n.data)
		dg.ints(b2i(n.dirty))
		if n.dirty {
			dg.bytes(n.durable)
		}
		if ext4 {
			dg.ints(int(n.alloc), b2i(n.daClose))
		}
		dg.ints(b2i(n.last != nil))
		if w := n.last; w != nil {
			dg.ints(int(d.seq-w.seq), int(w.off), w.n, int(w.oldLen))
			dg.bytes(w.old)
		}
		dg.ints(len(n.pend))
		for _, p := range n.pend {
			dg.ints(int(p.off), b2i(p.trunc), rel(p.j), int(d.seq-p.seq), b2i(p.delayed), b2i(p.bound), rel(p.bind))
			if !p.trunc {
				dg.bytes(n.pbuf[p.from:p.to])
			}
		}
	}
	var out [32]byte
	dg.h.Sum(out[:0])
	return out
}

// digester feeds values into a hash, each of a fixed width or prefixed by its length, so that
// two different sequences of values never hash the same bytes.
type digester struct {
	h   hash.Hash
	buf [8]byte
}

func (g *digester) ints(vs ...int) {
	for _, v := range vs {
		binary.LittleEndian.PutUint64(g.buf[:], uint64(v))
		g.h.Write(g.buf[:])
	}
}

func (g *digester) bytes(b []byte) {
	g.ints(len(b))
	g.h.Write(b)
}

func (g *digester) time(t time.Time) {
	if t.IsZero() {
		g.ints(0, 0)
		return
	}
	g.ints(1, int(t.UnixNano()))
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
