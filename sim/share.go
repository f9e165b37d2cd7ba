package sim

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"unsafe"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/oracle"
)

// Cases whose crash state is the same share one recovery run: a power cut at a beat that wrote
// only what the cut loses leaves the disk, the world and the clock that a power cut at the beat
// before leaves, and what the restarted process does from there is the same, because the target
// is deterministic. So the first such case runs its recovery, and every other takes that run's
// beats, effects and outcome, renumbered from its own crash beat, and is judged on its own: its
// own schedule, prefix, first process (its marks and work lost are counted from its own crash
// beat) and verdict, the same to the byte as if it had run alone.
//
// The crash state is compared by a digest of what the recovery can observe (run.shareKey): the
// disk after the crash as a process sees it (faults.Disk.Digest: names, kinds, modes, times and
// bytes, flipped bits, a full disk), the world's contents (world.World.Digest: effects, keys,
// leases, messages, changes still due, the model's purposes asked) and the number of model calls
// answered, the virtual clock, the scheduler's random source, the labels of the marks made by
// the crash (the supervisor looks for others), the restarts due and when, and when the fault's
// effect is over. How many marks were made is each case's own (the first process's, the
// prefix's), as is where: the oracle measures work lost from them and the recovery's marks.
//
// Left out is what shows only through a later crash: what is durable and what is pending on the
// disk (and whether the disk keeps its pending operations at all, for power@K:subset). A shared
// recovery has no later crash: only the first fault of a one-fault schedule whose kind leaves
// nothing behind but the disk is shared (shareable), and anything else runs alone. Left out too
// is how the world got to its contents: a step of the clock at which nothing fell due adds to the
// world's log and changes nothing a process can see; the model calls enter by their number, for
// the worlds of two crashes of one golden run with as many hold the same ones.
//
// A shared recovery that did not end cleanly (it hung, spun, ran out of beats, was interrupted)
// is not handed on: each case runs alone.

// shareable reports whether a case of schedule s may share its recovery with another's: one
// fault, a kill, a power cut or a torn write, whose crash state is derived. A corrupt fault is
// judged again as a kill when it loses work (Runner.asKill), and a model-diverge fault changes
// what the model answers from then on, which the crash state does not hold: both run alone.
func (rn *Runner) shareable(s faults.Schedule, workers, goldenBeats int) bool {
	if rn.o.NoShare || len(s) != 1 || !rn.derivable(s[0], workers, goldenBeats) {
		return false
	}
	switch s[0].Kind {
	case faults.Kill, faults.Power, faults.Torn:
		return true
	}
	return false
}

// shareKey is the digest of a derived run's crash state: see the comment at the top of the file.
type shareKey [32]byte

// shareKey returns the digest of the crash state of run r, derived from the golden run and
// crashed: what its recovery can observe.
func (r *run) shareKey() shareKey {
	h := sha256.New()
	disk := r.disk.Digest()
	h.Write(disk[:])
	sched, err := r.pcg.MarshalBinary()
	if err != nil {
		panic(err) // a PCG always marshals
	}
	h.Write(sched)
	world := r.world.Digest()
	h.Write(world[:])
	fmt.Fprintf(h, "|%d %d %d %d %t|%d %d %d|", len(r.world.Models()), len(r.procs), r.counted, r.failedProcs,
		r.diverging, r.clock.Now().UnixNano(), r.quietAt.UnixNano(), r.rateLimited.UnixNano())
	// The labels of the marks made so far, the crash beat's included: a restarted process that
	// fails on its own has progressed if it makes a mark of another label (run.progressed).
	labels := map[string]bool{}
	for _, beats := range [][]Beat{r.prefix, r.beats} {
		for _, b := range beats {
			if b.Kind == BeatMark {
				labels[b.Name] = true
			}
		}
	}
	for _, l := range slices.Sorted(maps.Keys(labels)) {
		fmt.Fprintf(h, "%q ", l)
	}
	fmt.Fprint(h, "|")
	for _, rs := range r.restarts {
		fmt.Fprintf(h, "%d %d|", rs.worker.id, rs.at.UnixNano())
	}
	var k shareKey
	h.Sum(k[:0])
	return k
}

// recovery is what a shared recovery run left: enough to build the case of another crash at
// the same crash state, renumbered from its crash beat.
type recovery struct {
	fault faults.Fault        // the fault of the case that ran it: the same case run again runs again
	k     int                 // the beat the run crashed at
	beats []Beat              // its beats after the crash beat
	notes map[int]string      // what happened at them
	obs   *oracle.Observation // what the oracle read of the run
}

// share is one crash state's recovery: being run (done open) or run (rec; nil if it cannot be
// handed on).
type share struct {
	done  chan struct{}
	close sync.Once
	rec   *recovery
	key   shareKey
	size  int  // rec.size(), counted in shares.bytes once published
	state bool // counted in Tally.States: its crash state was not met before
}

// end closes done, once: a run that stops without publishing (it panicked) leaves the cases
// waiting for it to run on their own.
func (s *share) end() { s.close.Do(func() { close(s.done) }) }

// shares are a Runner's recent recoveries, by crash state, and its count of runs.
type shares struct {
	mu    sync.Mutex
	m     map[shareKey]*share
	order []shareKey // the keys of m, oldest first
	bytes int        // what the recoveries of m hold, by recovery.size
	// dropped holds the crash states whose recovery was let go, up to droppedKept of them.
	dropped map[[8]byte]struct{}
	tally   Tally
}

// keptRecoveries and recoveryBudget bound the recoveries a Runner keeps for cases to come: at
// least the last keptRecoveries, and older ones while all of them together hold at most
// recoveryBudget bytes (recovery.size). The cases that share a recovery are neighbours in a
// campaign's list only within one fault kind: an exhaustive campaign lists every power cut
// before the kills, so a kill finds the power cut of its beat (the same crash state when nothing
// was pending) only if the runner still holds it. Keeping only the last 4 ran 493 recoveries for
// the 783 cases of the Burr campaign on FUSE, whose crash states are 327 (Tally.States). Each
// recovery holds its run's observation, the state document included, so the budget is in bytes,
// not recoveries: a campaign of a 2 MiB state keeps the last 4 (TestStateMemoryIsFlatInCases),
// one of a few kilobytes keeps hundreds, and memory stays bounded whatever the campaign's size.
const (
	keptRecoveries = 4
	recoveryBudget = 8 << 20
)

// size estimates the bytes rec holds: its beats, notes and observation, documents walked.
func (rec *recovery) size() int {
	n := len(rec.beats) * int(unsafe.Sizeof(Beat{}))
	for _, b := range rec.beats {
		n += len(b.Name) + len(b.Key) + len(b.Ref) + len(b.Op.Path) + len(b.Op.To)
	}
	for _, note := range rec.notes {
		n += 32 + len(note)
	}
	o := rec.obs
	n += docSize(o.State) + docSize(o.Result) + len(o.Err) + len(o.StateErr)
	for _, e := range o.Effects {
		n += int(unsafe.Sizeof(e)) + len(e.Tool) + len(e.Identity) + len(e.Key)
	}
	for _, u := range o.KeyReuses {
		n += int(unsafe.Sizeof(u)) + len(u.Tool) + len(u.Key) + len(u.FirstArgs) + len(u.NewArgs)
	}
	for _, c := range o.Calls {
		n += int(unsafe.Sizeof(c)) + len(c.Identity)
	}
	for _, m := range o.Marks {
		n += int(unsafe.Sizeof(m)) + len(m.Label)
	}
	for _, p := range o.Processes {
		n += int(unsafe.Sizeof(p)) + len(p.Frozen)*64
	}
	for _, m := range o.ModelCalls {
		n += 16 + len(m)
	}
	return n
}

// docSize estimates the bytes a decoded document holds: its strings and numbers, and a word or
// two for each value, key and element.
func docSize(v any) int {
	switch v := v.(type) {
	case string:
		return 16 + len(v)
	case json.Number:
		return 16 + len(v)
	case map[string]any:
		n := 48
		for k, e := range v {
			n += 16 + len(k) + docSize(e)
		}
		return n
	case []any:
		n := 24
		for _, e := range v {
			n += docSize(e)
		}
		return n
	}
	return 16 // nil, a bool, a float, or a value the target returned as is
}

// Tally counts what a Runner ran: the cases it decided, the runs of the target they took (a
// failing case runs twice, to check that it is deterministic), and the cases decided from the
// recovery run of another case with the same crash state, without a run of their own.
//
// States counts the distinct crash states among the cases that may share, the fewest
// recoveries sharing can run. It is exact unless StatesAtMost: a crash state whose recovery was
// let go (recoveryBudget) and met again counts again once more than droppedKept were let go.
type Tally struct {
	Cases, Runs, Shared int
	States              int
	StatesAtMost        bool
}

// Add adds u's counts to t's.
func (t *Tally) Add(u Tally) {
	t.Cases += u.Cases
	t.Runs += u.Runs
	t.Shared += u.Shared
	t.States += u.States
	t.StatesAtMost = t.StatesAtMost || u.StatesAtMost
}

// droppedKept is how many crash states whose recovery was let go a Runner remembers, by the
// first 8 bytes of their key, to count each once (Tally.States): some 3 MiB at most.
const droppedKept = 1 << 16

// Tally returns the Runner's counts so far.
func (rn *Runner) Tally() Tally {
	rn.shares.mu.Lock()
	defer rn.shares.mu.Unlock()
	return rn.shares.tally
}

// count adds to the Runner's tally.
func (rn *Runner) count(cases, runs, shared int) {
	rn.shares.mu.Lock()
	defer rn.shares.mu.Unlock()
	rn.shares.tally.Add(Tally{Cases: cases, Runs: runs, Shared: shared})
}

// claim returns the share of crash state k and true if the caller is to run its recovery (it
// then publishes it), or the share being run or run by another case and false.
func (rn *Runner) claim(k shareKey) (*share, bool) {
	sh := &rn.shares
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if s, ok := sh.m[k]; ok {
		return s, false
	}
	if sh.m == nil {
		sh.m = map[shareKey]*share{}
	}
	s := &share{done: make(chan struct{}), key: k}
	if _, again := sh.dropped[[8]byte(k[:8])]; !again {
		s.state = true
		sh.tally.States++
	}
	sh.m[k] = s
	sh.order = append(sh.order, k)
	sh.evict()
	return s, true
}

// evict drops the oldest recoveries run while more than keptRecoveries are kept and together
// they hold more than recoveryBudget bytes; one still running stays, as a case may be waiting
// for it. Called with mu held.
func (sh *shares) evict() {
	for i := 0; len(sh.m) > keptRecoveries && sh.bytes > recoveryBudget && i < len(sh.order); {
		old := sh.m[sh.order[i]]
		select {
		case <-old.done:
			sh.bytes -= old.size
			if sh.dropped == nil {
				sh.dropped = map[[8]byte]struct{}{}
			}
			if len(sh.dropped) < droppedKept {
				sh.dropped[[8]byte(old.key[:8])] = struct{}{}
			} else {
				sh.tally.StatesAtMost = true
			}
			delete(sh.m, sh.order[i])
			sh.order = append(sh.order[:i], sh.order[i+1:]...)
		default:
			i++
		}
	}
}

// forget drops the share of crash state k, whose run ended without a recovery to hand on (it
// was interrupted): a case waiting for it runs on its own, and a later one claims it again.
func (rn *Runner) forget(k shareKey, s *share) {
	sh := &rn.shares
	sh.mu.Lock()
	if sh.m[k] == s {
		sh.bytes -= s.size
		if s.state {
			sh.tally.States-- // claimed again by the case that resumes it
		}
		delete(sh.m, k)
		for i, o := range sh.order {
			if o == k {
				sh.order = append(sh.order[:i], sh.order[i+1:]...)
				break
			}
		}
	}
	sh.mu.Unlock()
}

// publish hands the recovery of run r, which crashed at beat k and ended as x, observed as obs,
// to the cases waiting for it, if it ended cleanly; otherwise they run on their own.
// crashNote is what r noted at beat k once it had crashed there: a recovery that noted more at
// the crash beat is not handed on, for the notes of another case's crash beat are its own.
func (rn *Runner) publish(s *share, r *run, k int, crashNote string, x ending, obs *oracle.Observation) {
	defer s.end()
	if x.hung != "" || x.over || x.late || x.stopped != nil || r.spinning() || r.halted || obs.Undecided != "" || r.notes[k] != crashNote {
		return
	}
	// A derived run's own beats are the crash beat, then the recovery's.
	rec := &recovery{fault: r.sched[0], k: k, beats: append([]Beat(nil), r.beats[1:]...), notes: map[int]string{}, obs: obs}
	for b, n := range r.notes {
		if b > k {
			rec.notes[b] = n
		}
	}
	s.rec, s.size = rec, rec.size()
	sh := &rn.shares
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.m[s.key] == s {
		sh.bytes += s.size
		sh.evict()
	}
}

// fits reports whether recovery rec can stand for that of a run crashed by f, whose bound is
// maxBeats: f is another case's fault (a case run again, as to check that it is deterministic,
// runs again), and the recovery's beats renumbered from f's beat all fall within the bound, as
// they would have had the run gone on.
func (rec *recovery) fits(f faults.Fault, maxBeats int) bool {
	return f != rec.fault && f.Beat+len(rec.beats) < maxBeats
}

// graft decides case c, whose run r was derived up to its crash at beat k and crashed there,
// from recovery rec: the recovery's beats, notes and observation renumbered from k, with r's own
// first process and prefix. keep keeps its beats even if it passes.
func (rn *Runner) graft(c *Case, r *run, k int, rec *recovery, gold *Golden, keep bool) {
	d := k - rec.k
	src := rec.obs
	obs := &oracle.Observation{
		Completed: src.Completed, Err: src.Err, Undecided: src.Undecided, Unrecoverable: src.Unrecoverable,
		Stopped: src.Stopped, Refused: src.Refused, Result: src.Result, State: src.State, StateErr: src.StateErr,
		ModelCalls: src.ModelCalls, Beats: src.Beats + d, PrefixMarks: r.prefixMarks,
	}
	shift := func(b int) int {
		if b > rec.k {
			return b + d
		}
		return b
	}
	for _, e := range src.Effects {
		e.Beat = shift(e.Beat)
		obs.Effects = append(obs.Effects, e)
	}
	for _, u := range src.KeyReuses {
		u.Beat, u.FirstBeat = shift(u.Beat), shift(u.FirstBeat)
		obs.KeyReuses = append(obs.KeyReuses, u)
	}
	for _, m := range src.Marks {
		m.Beat = shift(m.Beat)
		obs.Marks = append(obs.Marks, m)
	}
	for _, call := range src.Calls { // work lost without marks is measured from them
		call.Beat = shift(call.Beat)
		obs.Calls = append(obs.Calls, call)
	}
	obs.PrefixBeats = len(r.prefix)
	obs.Processes = append(r.processes()[:1], src.Processes[1:]...)
	oo := oracle.Options{Compare: rn.cmp, WorkLostSlack: rn.o.WorkLostSlack, Ordered: rn.ordered}
	c.Verdict = oracle.Check(gold.obs, obs, oo)
	c.Result, c.State = obs.Result, obs.State
	if keep || rn.o.KeepBeats || c.Verdict.Outcome != oracle.Pass || c.Verdict.Detected != "" {
		c.Beats = append(r.allBeats(), rec.beats...)
		c.Notes = maps.Clone(r.notes)
		for b, n := range rec.notes {
			c.Notes[b+d] = n
		}
	}
}
