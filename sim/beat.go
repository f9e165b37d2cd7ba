package sim

import (
	"fmt"
	"slices"
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
	BeatWait                        // a wait of the target's own clock that timed out (a process target's)
)

// Beat is one interaction of the target with its Env, the unit at which faults are scheduled.
type Beat struct {
	Kind    BeatKind
	Worker  int       // the worker whose process made the beat
	Process int       // the process: numbered from 0 in the order processes start
	Op      faults.Op // BeatFS: the operation
	Name    string    // the tool, the mark's label, the model call's purpose, the topic, the lease, the wait's call
	Key     string    // the tool call's idempotency key; the lease operation
	Ref     string    // a lookup's reference (harness.Env.Lookup)
	Async   bool      // BeatToolSent: the tool is asynchronous (its completion comes as a message)
	Alt     bool      // BeatModel: the call has an alternative answer (harness.ModelCall.Alternative)
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
	case BeatWait:
		s.WriteString("wait " + b.Dur.String() + " (" + b.Name + ")")
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

// Recovery returns the beats at which a process restarted after a kill at beat k of the golden
// run recovers: from its first beat up to its first mark, and the beat after that mark (every
// beat it makes, if it makes no mark), numbered as a case under kill@k numbers them. A power cut
// at one of them lands while the recovery builds on what the killed process left in the page
// cache; the one after the mark, which a power cut at the mark itself precedes, asks whether
// what the recovery declared durable is. It needs one worker, and returns nil if k is not a beat
// of the golden run or the case has no restart.
func (rn *Runner) Recovery(k int) []int {
	g, err := rn.Golden(nil)
	if err != nil || k < 0 || k >= g.Len() || rn.o.Workers != 1 {
		return nil
	}
	beats := rn.Beats(faults.Schedule{{Kind: faults.Kill, Beat: k}}, 1)
	var out []int
	for i := k + 1; i < len(beats); i++ {
		b := beats[i]
		if b.Process != 1 {
			break
		}
		out = append(out, i)
		if b.Kind == BeatMark {
			if i+1 < len(beats) && beats[i+1].Process == 1 {
				out = append(out, i+1)
			}
			break
		}
	}
	return out
}

// Beats returns the beats of the run of schedule s without its faults from the n-th on (n
// from 0), with the workers s runs with, numbered as the case under s numbers them: the case
// under s makes the same beats up to the one its n-th fault fires at, so they say where that
// fault can fire (Beat.Admits). It panics on a schedule that ParseSchedule would refuse.
func (rn *Runner) Beats(s faults.Schedule, n int) []Beat {
	if err := s.Validate(); err != nil {
		panic("sim: Runner.Beats: " + err.Error())
	}
	return rn.runCaseAs(s[:n], s, true).Beats
}

// step records beat b of process p: the one place where beats are numbered, scheduled faults
// fire and progress is accounted, for a beat a process makes and for one replayed from a golden
// recording (Runner.derive) alike. It returns the beat's index and the fault that fires there,
// if any: a fault fires at the beat it names, if that beat admits its kind (Beat.Admits), and
// at no other. The caller holds r.mu, or owns r alone.
func (r *run) step(p *process, b Beat) (int, *faults.Fault) {
	b.Worker, b.Process = p.worker.id, p.id
	idx := r.nbeats()
	r.beats = append(r.beats, b)
	if now := r.clock.Now(); b.Kind == BeatMark || !now.Equal(r.spinAt) {
		r.spin, r.spinAt = 0, now
	} else {
		r.spin++
	}
	if rc := r.rec; rc != nil {
		if rc.tally == nil {
			rc.at(r, p)
		} else if len(r.beats) >= foldEvery {
			r.fold(len(r.beats) - 1)
		}
		rc.maxSpin = max(rc.maxSpin, r.spin)
		// The one use of the wall clock in a run: to scale the hang detector, and to show progress.
		now := time.Now()
		rc.maxGap, r.lastWall = max(rc.maxGap, now.Sub(r.lastWall)), now
		if r.o.OnGolden != nil && now.Sub(rc.shown) >= progressEvery {
			rc.shown = now
			r.o.OnGolden(GoldenProgress{Target: rc.name, Run: rc.no, Beats: idx, Virtual: r.clock.Now().Sub(faults.Epoch),
				Of: rc.of, MaxBeats: r.o.MaxBeats, MaxVirtualTime: r.o.MaxVirtualTime})
		}
	}
	var due *faults.Fault
	for i := range r.sched {
		if f := &r.sched[i]; r.fired[i] < 0 && f.Beat == idx && b.Admits(f.Kind) && f.Worker <= len(r.workers) {
			r.fired[i] = idx
			r.beats[len(r.beats)-1].Fault = i + 1
			due = &r.sched[i]
			break
		}
	}
	if due != nil {
		if p.firstFault < 0 {
			p.firstFault = idx
		}
		r.lastFault = idx
		info, _ := due.Kind.Info()
		if until := info.End(*due, r.clock.Now()); until.After(r.quietAt) {
			r.quietAt = until
		}
	}
	switch {
	case due != nil && stops(r.o, due): // the process stops here: the beat is not progress
	case b.Kind == BeatMark:
		p.marks++
		p.sinceMark = 0
	default:
		p.sinceMark++
		if p.marks == 0 {
			p.toMark++
		}
	}
	return idx, due
}

// atEnd fires the faults scheduled after the run's end (faults.End: power@end), once the run
// has ended with its last process exiting on its own (x, how it ended, completed): the power is
// cut with no process left to restart, and the state read back is what survived. They are
// recorded as fired at the beat after the last (Case.Trace shows them there); in a run that
// ended otherwise they do not fire.
func (r *run) atEnd(x ending) {
	if x.String() != "completed" {
		return
	}
	at := r.nbeats()
	for i := range r.sched {
		f := r.sched[i]
		if f.Beat != faults.End || r.fired[i] >= 0 {
			continue
		}
		r.fired[i] = at
		if info, _ := f.Kind.Info(); info.Disk {
			r.note(at, fmt.Sprintf("%s after the last process exited: %s", f, r.disk.Crash(f, r.crashRand(at))))
		}
	}
}

// spinning reports whether the run has spun past its limit (see run.spin).
func (r *run) spinning() bool { return r.maxSpin > 0 && r.spin > r.maxSpin }

// nbeats returns how many beats the run has made.
func (r *run) nbeats() int { return len(r.prefix) + r.folded + len(r.beats) }

// beat returns beat i of the run, to change it (it must not be of the shared prefix, nor
// folded into a tally).
func (r *run) ownBeat(i int) *Beat { return &r.beats[i-len(r.prefix)-r.folded] }

// label returns the label of beat i of the run.
func (r *run) label(i int) string {
	if i < len(r.prefix) {
		return r.prefix[i].Label()
	}
	return r.beats[i-len(r.prefix)-r.folded].Label()
}

// allBeats returns every beat of the run, the prefix's and its own, in one new slice.
func (r *run) allBeats() []Beat {
	if len(r.prefix) == 0 {
		return r.beats
	}
	return append(r.prefix[:len(r.prefix):len(r.prefix)], r.beats...)
}

// pending reports whether a scheduled fault has yet to fire.
func (r *run) pending() bool { return slices.Contains(r.fired, -1) }
