package world

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"hash"
	"maps"
	"slices"
)

// Digest returns a digest of the world's contents: what a process can observe of it from here
// on, or the oracle reads of it. That is the effects applied, in order, and the refused reuses of
// keys; how many calls each tool applied (the next reply's number); the keys remembered, with
// their replies, times, effects and where they were made; the references; the fencing tokens
// seen; the leases and the last token handed out; the messages on every topic; the changes still
// due, in order; and the distinct purposes of the model calls answered, in order
// (harness.Env.ModelCalls).
//
// It leaves out how the world got there: the log (a step of the clock at which nothing fell due
// changes nothing), the sequence numbers that only order the changes due, and the list of every
// model call answered (Models), which only grows and which a caller compares by its length. Two
// worlds of one digest with the same number of model calls are the same world; Counted worlds,
// which keep no effects, are not to be compared.
func (w *World) Digest() [32]byte {
	h := sha256.New()
	put := func(v any) {
		b, err := json.Marshal(v)
		if err != nil {
			panic(fmt.Sprintf("world: Digest: %v", err)) // every part is of plain data
		}
		writeLen(h, b)
	}
	put(w.effects)
	put(w.reuses)
	put(w.applied) // encoding/json writes a map's keys in order
	put(w.fence)
	put(w.leases)
	put(w.token)
	put(w.topics)
	put(w.byRef)
	for _, k := range slices.Sorted(maps.Keys(w.byKey)) {
		v := w.byKey[k]
		put([]any{k, v.reply, v.at, v.identity, v.args, v.beat, v.process})
	}
	put(len(w.pending))
	for _, s := range w.pending {
		put([]any{s.at, s.post, s.call})
	}
	put(w.asked)
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// writeLen writes b to h after its length, so that two sequences of parts never hash alike.
func writeLen(h hash.Hash, b []byte) {
	fmt.Fprintf(h, "%d:", len(b))
	h.Write(b)
}
