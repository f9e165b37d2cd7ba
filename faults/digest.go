package faults

import (
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"maps"
	"slices"
	"time"
)

// Digest returns a digest of everything about the disk that a process can observe until the next
// crash: the names in every directory reachable from the root, and of each, whether it is a
// directory, its mode and modification time and, for a file, its bytes; how many bits corruption
// flipped (a verdict reads it); whether the disk is full, how much still fits and until when.
// Two disks with the same digest answer every operation of every process the same way from here
// on, until one of them crashes: a disk after a power cut at one beat and one after a power cut at
// a later beat that only wrote what the cut loses have the same digest.
//
// What is durable and what is pending is left out: it shows only through a later crash (a power
// cut reverts to it, a torn write tears the last pending write). So two disks of one digest may
// differ after their next crash: Digest fits runs that will not crash again, as a recovery from a
// schedule's only fault does.
func (d *Disk) Digest() [32]byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	dg := digester{h: sha256.New()}
	var visit func(n *inode)
	visit = func(n *inode) {
		dg.ints(b2i(n.dir), int(n.mode))
		dg.time(n.mtime)
		if !n.dir {
			dg.bytes(n.data)
			return
		}
		dg.ints(len(n.kids))
		for _, k := range slices.Sorted(maps.Keys(n.kids)) {
			dg.bytes([]byte(k))
			visit(n.kids[k])
		}
	}
	visit(d.root)
	dg.ints(d.flips)
	d.space.mu.Lock()
	full := d.space.isFull()
	dg.ints(b2i(full), int(d.space.budget))
	dg.time(d.space.until)
	d.space.mu.Unlock()
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
