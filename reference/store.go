package reference

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"

	"github.com/spf13/afero"
)

// store is how a process keeps the run durable. Its methods act for process p: on the log p
// opened as the lease holder (recover), under p's lease token.
type store interface {
	// append makes record r durable, before anything else happens.
	append(p *proc, r record) error
	// snapshot saves p.st; final marks the save that ends the run.
	snapshot(p *proc, final bool) error
	// load reads the state a restarted process would recover from fsys.
	load(fsys afero.Fs) (loaded, error)
}

// logStore is the reference's store: it appends every record to the write-ahead log (wal.go)
// and now and then snapshots the state the records fold to.
type logStore struct {
	// checksums puts a CRC-32C in every record, and has the log's records and the snapshot
	// checked against theirs when they are read.
	checksums bool
}

func (s logStore) append(p *proc, r record) error {
	return p.write(p.wal, frame(r, p.lease.Token, s.checksums))
}

// snapshot writes the state, the log offset it covers and the lease token it was written under
// to a new file, makes it durable, and renames it over the old snapshot.
func (logStore) snapshot(p *proc, _ bool) error {
	fi, err := p.wal.Stat()
	if err != nil {
		return err
	}
	return p.replace(snapPath, encodeSnapshot(p.st, fi.Size(), p.lease.Token))
}

// loaded is what the disk holds, as recovery reads it.
type loaded struct {
	stamp      int // the log's size when it was read, -1 if it did not exist
	st         State
	good       int // where the log's sound part ends
	walExists  bool
	snapshotOK bool
}

// load reads the state a restarted process would recover: the snapshot, if it is whole, ends
// at a record of the log and was written under the newest lease token up to there (not by a
// zombie), then the records after it.
func (s logStore) load(fsys afero.Fs) (loaded, error) {
	var l loaded
	b, err := afero.ReadFile(fsys, walPath)
	switch {
	case err == nil:
		l.walExists = true
	case !errors.Is(err, fs.ErrNotExist):
		return l, fmt.Errorf("reference: reading the log: %w", err)
	}
	entries, good, corrupt := scan(b, s.checksums)
	if corrupt {
		return l, fmt.Errorf("reference: %s: the record at offset %d is damaged and sound records follow it: %w", walPath, good, ErrCorrupt)
	}
	l.good = good
	from := 0
	if sb, err := afero.ReadFile(fsys, snapPath); err == nil {
		if snap, ok := decodeSnapshot(sb, s.checksums); ok {
			var maxTok uint64
			for i, e := range entries {
				maxTok = max(maxTok, e.tok)
				if e.end == snap.off && maxTok <= snap.tok {
					l.st, l.snapshotOK, from = snap.st, true, i+1
					break
				}
			}
		}
	}
	for _, e := range entries[from:] {
		var r record
		if err := json.Unmarshal(e.payload, &r); err != nil {
			continue // a record whose checksum was not checked, and that does not decode
		}
		if err := l.st.apply(r); err != nil {
			return l, fmt.Errorf("reference: replaying the log: %w", err)
		}
	}
	return l, nil
}

// snapshotHead is how a snapshot starts: a JSON object holding the log offset it covers, the
// lease token it was written under and the CRC-32C of its state, then the state. It is written
// and read by hand, so that the state is parsed once.
const snapshotHead = `{"wal_offset":%d,"tok":%d,"crc":%d,"state":`

func encodeSnapshot(st State, off int64, tok uint64) []byte {
	state, err := json.Marshal(st)
	if err != nil {
		panic(err) // a State holds only encodable values
	}
	b := fmt.Appendf(nil, snapshotHead, off, tok, crc32.Checksum(state, castagnoli))
	return append(append(b, state...), '}')
}

// snapshot is a decoded snapshot.
type snapshot struct {
	st  State
	off int
	tok uint64
}

// decodeSnapshot reads a snapshot; ok is false if it is damaged or (checksum) fails its CRC.
func decodeSnapshot(b []byte, checksum bool) (s snapshot, ok bool) {
	var crc uint32
	var off int64
	n, err := fmt.Sscanf(string(b[:min(len(b), 96)]), snapshotHead, &off, &s.tok, &crc)
	if err != nil || n != 3 || b[len(b)-1] != '}' {
		return s, false
	}
	head := len(fmt.Appendf(nil, snapshotHead, off, s.tok, crc))
	if head > len(b)-1 {
		return s, false
	}
	state := b[head : len(b)-1]
	if checksum && crc32.Checksum(state, castagnoli) != crc {
		return s, false
	}
	s.off = int(off)
	return s, json.Unmarshal(state, &s.st) == nil
}
