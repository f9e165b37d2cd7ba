package reference

import (
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
)

// The agent's files.
const (
	dir      = "run"
	walPath  = "run/wal.log"
	snapPath = "run/snapshot.json"
	snapTmp  = "run/snapshot.tmp"
	metaPath = "run/meta.log"
	metaTmp  = "run/meta.tmp"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// headerLen is the size of a record's header: the payload's length and its CRC-32C, both
// big-endian.
const headerLen = 8

// maxRecord bounds a record's payload; a larger length is a damaged header.
const maxRecord = 1 << 20

// frame encodes a record. Without checksums (the no-checksum variant) the CRC field is zero.
func frame(r record, checksum bool) []byte {
	payload, err := json.Marshal(r)
	if err != nil {
		panic(err) // records hold only encodable values
	}
	b := make([]byte, headerLen, headerLen+len(payload))
	binary.BigEndian.PutUint32(b, uint32(len(payload)))
	if checksum {
		binary.BigEndian.PutUint32(b[4:], crc32.Checksum(payload, castagnoli))
	}
	return append(b, payload...)
}

// scan decodes the records of a log from offset from. The log ends at the first record that is
// incomplete, fails its checksum or does not decode, as SQLite's and PostgreSQL's logs do: that
// is a torn or partial write at the tail, or damage, and either way nothing after it can be
// trusted. It returns the records and the offset at which the good part ends.
func scan(b []byte, from int, checksum bool) (recs []record, good int) {
	off := from
	for len(b)-off >= headerLen {
		n := int(binary.BigEndian.Uint32(b[off:]))
		if n > maxRecord || off+headerLen+n > len(b) {
			break
		}
		payload := b[off+headerLen : off+headerLen+n]
		if checksum && crc32.Checksum(payload, castagnoli) != binary.BigEndian.Uint32(b[off+4:]) {
			break
		}
		var r record
		if json.Unmarshal(payload, &r) != nil {
			break
		}
		recs = append(recs, r)
		off += headerLen + n
	}
	return recs, off
}
