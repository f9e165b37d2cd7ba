package sim

import (
	"strconv"
	"strings"
	"time"

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
	BeatModel                       // a model call leaving the process
	BeatSleep                       // a wait for virtual time
	BeatAwait                       // a wait for a message on a topic
	BeatLease                       // a call to the lease service
)

// Beat is one interaction of the target with its Env, the unit at which faults are scheduled.
type Beat struct {
	Kind    BeatKind
	Worker  int       // the worker (slot) whose process made the beat
	Attempt int       // the process: numbered from 0 in the order processes start
	Op      faults.Op // BeatFS: the operation
	Name    string    // the tool, the mark's label, the model call's purpose, the topic, the lease
	Key     string    // the tool call's idempotency key; the lease operation
	Ref     string    // a lookup's reference (harness.Env.Lookup)
	Async   bool      // BeatToolSent: the tool is asynchronous (its completion comes as a message)
	Refused bool      // BeatLease: the lease service refused it (held by another, or lost)
	Dur     time.Duration
	Fault   int // 1 + the index in the schedule of the fault that fired here; 0 if none
}

// Label describes the beat in a few words, e.g. "fs.write run/wal.log +128B @4096",
// "tool create_po key=r1:3 applied", "mark step 3 committed", "model plan step 3".
func (b Beat) Label() string {
	var s strings.Builder
	if b.Worker > 0 {
		s.WriteString("w" + strconv.Itoa(b.Worker) + " ")
	}
	switch b.Kind {
	case BeatFS:
		s.WriteString(b.Op.String())
	case BeatMark:
		s.WriteString("mark " + b.Name)
	case BeatModel:
		s.WriteString("model " + b.Name)
	case BeatSleep:
		s.WriteString("sleep " + b.Dur.String())
	case BeatAwait:
		s.WriteString("await " + b.Name)
	case BeatLease:
		s.WriteString("lease " + b.Key + " " + b.Name)
		if b.Refused {
			s.WriteString(" refused")
		}
	default:
		s.WriteString("tool ")
		s.WriteString(b.Name)
		if b.Ref != "" {
			s.WriteString(" lookup ref=")
			s.WriteString(b.Ref)
		}
		if b.Key != "" {
			s.WriteString(" key=")
			s.WriteString(b.Key)
		}
		if b.Kind == BeatToolSent {
			s.WriteString(" sent")
		} else {
			s.WriteString(" applied")
		}
	}
	return s.String()
}

// Admits reports whether a fault of kind k can fire at b: a kill at any beat, a diskfull at a
// write, an fsyncfail at an fsync, a tool fault at a tool call leaving the process, and so on
// (faults.KindInfo.On). A fault fires at the beat its schedule names if that beat admits it,
// and at no other: tool-transient@2 where beat 2 is a mark does not fire at all (the case lists
// it in Case.Unfired, saying why), rather than at the next tool call, so that every case has
// one name.
func (b Beat) Admits(k faults.Kind) bool {
	info, _ := k.Info()
	c := info.On
	switch c {
	case faults.AnyBeat:
		return true
	case faults.ToolBeat:
		return b.Kind == BeatToolSent
	case faults.AsyncToolBeat:
		return b.Kind == BeatToolSent && b.Async
	case faults.ModelBeat:
		return b.Kind == BeatModel
	}
	return b.Kind == BeatFS && b.Op.Kind.In(c)
}
