package sim

import (
	"errors"
	"fmt"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/spf13/afero"
)

// processes describes the run's processes for the oracle.
func (r *run) processes() []oracle.Process {
	out := make([]oracle.Process, len(r.procs))
	for i, p := range r.procs {
		out[i] = oracle.Process{First: p.id < len(r.workers), Crashed: p.crashed, Failed: p.failed,
			Marks: p.marks, SinceMark: p.sinceMark, ToFirstMark: p.toMark}
	}
	r.freezes(out)
	return out
}

// freezes fills in each process's pauses by lease faults, read from the run's beats: the beat a
// lease fault fired at in the process, the first beat it made after, and whether a tool call of
// its own was applied from then to its next mark.
// A look-up (Env.Lookup) is a read, not a call acting again.
func (r *run) freezes(procs []oracle.Process) {
	var beats []Beat
	for f, i := range r.fired {
		if i < 0 || r.sched[f].Kind != faults.Lease {
			continue
		}
		if beats == nil {
			beats = r.allBeats()
		}
		b := beats[i]
		fz := oracle.Freeze{At: i, Woke: -1}
		for j := i + 1; j < len(beats); j++ {
			later := beats[j]
			if later.Process != b.Process {
				continue
			}
			if fz.Woke < 0 {
				fz.Woke = j
			}
			if later.Kind == BeatMark {
				break
			}
			fz.Acted = fz.Acted || later.Kind == BeatToolApplied && later.Ref == ""
		}
		procs[b.Process].Frozen = append(procs[b.Process].Frozen, fz)
	}
}

// observe turns a finished run into what the oracle reads.
func (r *run) observe(x ending, stater harness.Stater, trace bool) *oracle.Observation {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.world.Settle() // effects still on their way land, as they would after the run
	obs := &oracle.Observation{
		Beats:      r.nbeats(),
		Processes:  r.processes(),
		Effects:    r.world.Effects(),
		KeyReuses:  r.world.KeyReuses(),
		ModelCalls: r.world.Models(),
	}
	obs.PrefixMarks = r.prefixMarks
	obs.Calls, obs.PrefixBeats = r.calls, len(r.prefix)
	for j, b := range r.beats {
		if b.Kind == BeatMark && (b.Fault == 0 || !stops(r.o, &r.sched[b.Fault-1])) { // a crash at a mark stops it; a freeze delays it
			obs.Marks = append(obs.Marks, oracle.Mark{Beat: len(r.prefix) + r.folded + j, Label: b.Name, Process: b.Process})
		}
		if trace {
			obs.Trace = append(obs.Trace, b.Label())
		}
	}
	obs.Unrecoverable = r.disk.Flips() > 0
	switch {
	case x.stopped != nil:
		obs.Undecided = x.String()
		return obs
	case x.hung != "":
		obs.Undecided = x.hung
		return obs
	case x.over && r.spinning():
		obs.Err = fmt.Sprintf("spins: %d beats in a row with the virtual clock standing still and no progress mark (the golden run's longest such stretch is %d): a livelock, such as a retry loop that never waits (in process, time.Sleep is a wait the virtual clock cannot see: wait with env.Sleep; a process target's own sleeps are virtual, except on the wall clock: --clock wall, or a machine without the trap)", r.spin, r.goldenSpin)
	case x.over:
		obs.Err = fmt.Sprintf("no end in sight: %d beats without completing; a livelock, or a restart that never gets anywhere", r.nbeats())
	case x.panicked != "":
		obs.Err = "the last process panicked: " + x.panicked + because(x.why)
		obs.Stopped = true
	case x.gaveUp:
		obs.Err = x.err.Error()
	case errors.Is(x.err, harness.ErrRefused):
		obs.Err, obs.Refused = "the last process refused to go on: "+x.err.Error(), true
		obs.Stopped = true
	case x.err != nil:
		obs.Err = "the last process failed: " + x.err.Error() + because(x.why)
		obs.Stopped = true
	default:
		obs.Completed = true
		obs.Result = x.result
	}
	if stater != nil && obs.Completed {
		obs.State, obs.StateErr = readState(stater, r.disk)
	}
	return obs
}

// because appends why the supervisor gave up, if it did, to a failure's text.
func because(why string) string {
	if why == "" {
		return ""
	}
	return "; " + why
}

// readState reads a target's durable state, turning a panic into an error.
func readState(s harness.Stater, fsys afero.Fs) (state any, errText string) {
	defer func() {
		if p := recover(); p != nil {
			errText = fmt.Sprintf("State panicked: %v", p)
		}
	}()
	st, err := s.State(fsys)
	if err != nil {
		return nil, err.Error()
	}
	return st, ""
}

// called records a tool call applied or a model call answered at beat idx, for work lost without
// marks; a bare Env (idx -1) records nothing.
func (e *env) called(model bool, identity string, idx int) {
	if idx < 0 {
		return
	}
	e.r.mu.Lock()
	e.r.calls = append(e.r.calls, oracle.Call{Model: model, Identity: identity, Beat: idx, Process: e.p.id})
	e.r.mu.Unlock()
}

// callIdentity names a tool call as it would be made again: by its tool and idempotency key, else
// by its tool and arguments (identity, the effect's).
func callIdentity(c harness.Call, identity string) string {
	if c.Key != "" {
		return c.Tool + " key=" + c.Key
	}
	return identity
}
