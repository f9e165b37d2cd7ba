package reference

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
)

// The agent's files.
const (
	dir      = "run"
	walPath  = "run/wal.log"
	snapPath = "run/snapshot.json"
	metaPath = "run/meta.log"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// A record is framed as: a magic number, the payload's length, the CRC-32C of the token and
// the payload, the writer's lease token, the payload (JSON). The magic lets a reader find the
// next record after a damaged stretch.
const (
	magic     = 0xC4A05717
	headerLen = 4 + 4 + 4 + 8
	maxRecord = 1 << 20
)

var magicBytes = binary.BigEndian.AppendUint32(nil, magic)

// frame encodes a record written under lease token tok. Without checksums the CRC field is
// zero.
func frame(r record, tok uint64, checksum bool) []byte {
	payload, err := json.Marshal(r)
	if err != nil {
		panic(err) // records hold only encodable values
	}
	b := make([]byte, headerLen, headerLen+len(payload))
	binary.BigEndian.PutUint32(b, magic)
	binary.BigEndian.PutUint32(b[4:], uint32(len(payload)))
	binary.BigEndian.PutUint64(b[12:], tok)
	b = append(b, payload...)
	if checksum {
		binary.BigEndian.PutUint32(b[8:], crc32.Checksum(b[12:], castagnoli))
	}
	return b
}

// entry is a record as the scan finds it, not yet decoded.
type entry struct {
	tok      uint64
	payload  []byte
	end      int  // offset just past the record
	resumeAt bool // an epoch record that continues the log after a damaged stretch
}

// parse reads the record at off, if a whole, sound one starts there.
func parse(b []byte, off int, checksum bool) (entry, bool) {
	if len(b)-off < headerLen || binary.BigEndian.Uint32(b[off:]) != magic {
		return entry{}, false
	}
	n := int(binary.BigEndian.Uint32(b[off+4:]))
	if n > maxRecord || off+headerLen+n > len(b) {
		return entry{}, false
	}
	if checksum && crc32.Checksum(b[off+12:off+headerLen+n], castagnoli) != binary.BigEndian.Uint32(b[off+8:]) {
		return entry{}, false
	}
	return entry{tok: binary.BigEndian.Uint64(b[off+12:]), payload: b[off+headerLen : off+headerLen+n], end: off + headerLen + n}, true
}

// scan finds the records of the log that count, and where its sound part ends.
//
// The log is append-only. Where a record is damaged (torn, partly written on a full disk,
// corrupted) the sound part ends; every record after it is ignored, except an epoch record
// whose base names exactly that end: the next lease holder writes one when it finds the
// damage, and carries on after it. Records from a writer whose lease token is older than one
// already seen come from a zombie and are ignored. The scan does not decode payloads, except
// to recognise epoch records.
//
// Damage followed by sound records that no epoch record continues is not a torn tail but
// corruption in the middle of the log: scan reports it, as corrupt, and a reader must stop
// rather than quietly drop the committed records after it.
func scan(b []byte, checksum bool) (entries []entry, good int, corrupt bool) {
	off, maxTok := 0, uint64(0)
	for off < len(b) {
		e, ok := parse(b, off, checksum)
		if !ok {
			// Damage at off: look for an epoch record that continues from exactly here.
			next, found := resync(b, off, checksum)
			if !found {
				return entries, off, soundAfter(b, off, checksum)
			}
			e = next
		}
		if e.tok >= maxTok {
			maxTok = e.tok
			entries = append(entries, e)
		}
		off = e.end
	}
	return entries, off, false
}

// soundAfter reports whether a sound record starts somewhere after off.
func soundAfter(b []byte, off int, checksum bool) bool {
	for at := off + 1; at < len(b); at++ {
		i := bytes.Index(b[at:], magicBytes)
		if i < 0 {
			return false
		}
		at += i
		if _, ok := parse(b, at, checksum); ok {
			return true
		}
	}
	return false
}

// resync searches past damage at off for an epoch record based at off.
func resync(b []byte, off int, checksum bool) (entry, bool) {
	for at := off + 1; at < len(b); {
		i := bytes.Index(b[at:], magicBytes)
		if i < 0 {
			return entry{}, false
		}
		at += i
		if e, ok := parse(b, at, checksum); ok {
			var r struct {
				Type string `json:"t"`
				Base int    `json:"base"`
			}
			if json.Unmarshal(e.payload, &r) == nil && r.Type == "epoch" && r.Base == off {
				e.resumeAt = true
				return e, true
			}
		}
		at++
	}
	return entry{}, false
}
