package harness

import (
	"strings"

	"github.com/chaoskit/chaoskit/faults"
)

// BeatKind says what a beat is.
type BeatKind uint8

// The kinds of beat.
const (
	BeatFS          BeatKind = iota // a mutating filesystem operation
	BeatToolSent                    // a tool call leaving the process
	BeatToolApplied                 // a tool call applied, its reply not yet received
	BeatMark                        // a progress mark
)

// Beat is one interaction of the target with its Env, the unit at which faults are scheduled.
type Beat struct {
	Kind    BeatKind
	Attempt int       // the process: 0 for the first, one more per restart
	Op      faults.Op // BeatFS: the operation
	Name    string    // the tool, or the mark's label
	Key     string    // the tool call's idempotency key
	Fault   int       // 1 + the index in the schedule of the fault that fired here; 0 if none
}

// Label describes the beat in a few words, e.g. "fs.write run/wal.log +128B @4096",
// "tool create_po key=r1:3 applied", "mark step 3 committed".
func (b Beat) Label() string {
	switch b.Kind {
	case BeatFS:
		return b.Op.String()
	case BeatMark:
		return "mark " + b.Name
	}
	var s strings.Builder
	s.WriteString("tool ")
	s.WriteString(b.Name)
	if b.Key != "" {
		s.WriteString(" key=")
		s.WriteString(b.Key)
	}
	if b.Kind == BeatToolSent {
		s.WriteString(" sent")
	} else {
		s.WriteString(" applied")
	}
	return s.String()
}

// in reports whether a fault of class c can fire at b.
func (b Beat) in(c faults.Class) bool {
	if b.Kind == BeatFS {
		return b.Op.Kind.In(c)
	}
	return c == faults.AnyBeat
}
