package faults

import (
	"fmt"
	"strings"
)

// Kind names a fault. The names are stable: they appear in schedules, reports and gates.
type Kind string

// The storage and process faults.
const (
	// Kill kills the process at a beat: everything it wrote survives, synced or not, because the
	// page cache outlives the process.
	Kill Kind = "kill"
	// Power cuts the power at a beat: writes and directory entries that were not fsynced are lost.
	Power Kind = "power"
	// Torn cuts the power while the last un-fsynced write is landing: a sector-aligned prefix of
	// it reaches the disk, or (mode garbage) its tail reads back as garbage.
	Torn Kind = "torn"
	// DiskFull fills the disk at a write beat: the write lands only up to a byte budget and fails
	// with ENOSPC, and so does every later write of that process.
	DiskFull Kind = "diskfull"
	// FsyncFail fails an fsync with EIO and drops the file's dirty pages, as Linux does: a retried
	// fsync then succeeds without the data ever reaching the disk.
	FsyncFail Kind = "fsyncfail"
	// Corrupt kills the process at a beat and flips one bit of a byte that had reached the disk.
	Corrupt Kind = "corrupt"
)

// Class says at which beats a fault can fire.
type Class int

// The beat classes.
const (
	AnyBeat   Class = iota // any beat
	WriteBeat              // a write or truncate of file data
	SyncBeat               // an fsync of a file or a directory
)

// Arg says what a fault takes after its beat number.
type Arg int

// The argument forms.
const (
	NoArg    Arg = iota
	BytesArg     // ":N", a byte count
	ModeArg      // ":mode", one of KindInfo.Modes
)

// KindInfo describes a fault kind: what it models and how it is written.
type KindInfo struct {
	Kind    Kind
	Summary string   // one line: what the fault models
	On      Class    // the beats it can fire at
	Arg     Arg      // what follows the beat number
	Modes   []string // for ModeArg: the allowed modes; the first is the default and is not written
	Crash   bool     // the fault ends the process
	Storage bool     // the fault acts on the filesystem
}

var kindTable = []KindInfo{
	{Kill, "process killed (SIGKILL, OOM, deploy): everything written survives, synced or not", AnyBeat, NoArg, nil, true, true},
	{Power, "power lost: un-fsynced writes and un-fsynced directory entries are lost", AnyBeat, NoArg, nil, true, true},
	{Torn, "power lost mid-write: the last un-fsynced write lands as a sector-aligned prefix (or, :garbage, with a garbage tail)", AnyBeat, ModeArg, []string{"prefix", "garbage"}, true, true},
	{DiskFull, "disk full: writes past a byte budget fail with ENOSPC, the first one landing partially", WriteBeat, BytesArg, nil, false, true},
	{FsyncFail, "fsync fails with EIO and the dirty data is dropped (a retried fsync then lies)", SyncBeat, NoArg, nil, false, true},
	{Corrupt, "process killed and one bit of a durable byte flips (bit rot, a bad sector)", AnyBeat, NoArg, nil, true, true},
}

var kindIndex = func() map[Kind]int {
	m := make(map[Kind]int, len(kindTable))
	for i, k := range kindTable {
		m[k.Kind] = i
	}
	return m
}()

// Kinds lists every fault kind, in a stable order.
func Kinds() []KindInfo { return append([]KindInfo(nil), kindTable...) }

// StorageKinds lists the kinds that act on the filesystem, in a stable order.
func StorageKinds() []Kind {
	var ks []Kind
	for _, k := range kindTable {
		if k.Storage {
			ks = append(ks, k.Kind)
		}
	}
	return ks
}

// Info returns the description of k, and false if k is not a known kind.
func (k Kind) Info() (KindInfo, bool) {
	i, ok := kindIndex[k]
	if !ok {
		return KindInfo{}, false
	}
	return kindTable[i], true
}

// ParseKinds parses a comma-separated list of kind names ("kill,power"). The word "storage"
// stands for every storage kind and "all" for every kind. The result has no duplicates and keeps
// the order of first mention.
func ParseKinds(list string) ([]Kind, error) {
	var out []Kind
	seen := map[Kind]bool{}
	add := func(k Kind) {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		switch name {
		case "":
			return nil, fmt.Errorf("fault list %q: empty fault name", list)
		case "storage":
			for _, k := range StorageKinds() {
				add(k)
			}
		case "all":
			for _, k := range kindTable {
				add(k.Kind)
			}
		default:
			k := Kind(name)
			if _, ok := k.Info(); !ok {
				return nil, fmt.Errorf("fault list %q: unknown fault %q (known: %s)", list, name, knownKinds())
			}
			add(k)
		}
	}
	return out, nil
}

func knownKinds() string {
	names := make([]string, 0, len(kindTable))
	for _, k := range kindTable {
		names = append(names, string(k.Kind))
	}
	return strings.Join(names, ", ")
}
