package sim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/internal/envlink"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim/internal/world"
	"github.com/spf13/afero"
)

// run is one execution of a target under a schedule: its workers' processes share the disk,
// the world, the clock and the beat counter.
//
// It is a discrete-event simulation. Every process is a set of threads (its main Run, and those
// it starts with Env.Go), goroutines that run one at a time: the runner hands a thread the
// baton, and the thread runs until it blocks (on virtual time, a message, a model that does not
// answer), finishes, is crashed, or is preempted by a switch fault, reporting which on events.
// When no thread can run, the clock jumps to the next thing due: a timer, a message, a
// restart, the end of a freeze. A single thread that never blocks costs nothing per beat.
type run struct {
	// upgradedAt numbers the first process of the next version (an upgrade fault fired: deploy),
	// or is -1.
	upgradedAt int
	newTarget  func() harness.Target // one instance per process
	graces     []grace               // the grace periods of deploys under way (upgrade.go)
	o          *Options
	sched      faults.Schedule
	fired      []int // the beat each fault fired at, or -1
	// diverging says a model-diverge fault has fired: a request the model was asked before
	// gets its alternative answer (diverge.go); diverged holds the purposes that got one, and
	// altFirst those that get it from the first time they are asked (the second reference).
	diverging bool
	diverged  map[string]bool
	altFirst  map[string]bool
	disk      *faults.Disk
	world     *world.World
	clock     *faults.Clock
	rec       *recorder  // set while recording a golden run
	pcg       *rand.PCG  // the scheduler's seeded source...
	rng       *rand.Rand // ...and its choices
	bare      afero.Fs   // set for a bare run: processes use it directly, without beats or faults

	ctx      context.Context // the run stops, its processes ended, when it is done (at the next beat)
	mu       sync.Mutex      // guards beats and the world against a thread the runner gave up on
	prefix   []Beat          // a derived run's first beats: the golden run's, shared, never changed
	beats    []Beat          // the beats after prefix (and after folded)
	folded   int             // beats of a counted golden run added to its tally and dropped
	halted   bool            // the third golden run has parted from the run it is compared with
	notes    map[int]string  // what happened at a beat: what a crash did, how a process ended
	maxBeats int             // beats after which a run counts as never ending
	maxTime  time.Duration   // for a golden run: the virtual time after which it counts as never ending
	late     bool            // the clock would have passed maxTime
	// rateLimited is when the model's rate limit, set by a model-ratelimit fault, ends: every
	// model call before then is refused with the time left (faults.RateLimitRetryAfter).
	rateLimited time.Time
	// spin counts the beats made in a row with the clock standing still and no mark, since
	// spinAt; past maxSpin (0: no limit) the run is a livelock.
	spin       int
	spinAt     time.Time
	maxSpin    int
	goldenSpin int       // the golden run's longest such stretch, which maxSpin is set from
	hangWhy    string    // how the hang detector's timeout was chosen, for its message
	hangHint   string    // the target's own words for where a hang comes from (Hinter), if any
	progress   int       // harness.Env calls so far, beats or not: what the hang detector watches
	seen       int       // progress when the hang detector last saw it move (-1 before the first)
	since      time.Time // and when

	workers  []*worker
	procs    []*process // every process started, in order
	current  *thread
	events   chan event
	timers   []timer // virtual deadlines, in order of due time
	restarts []restart
	timerSeq int
	preempt  *faults.Fault // the switch fault the current thread yielded for
	// prefixMarks is how many marks the golden run made in prefix, all of them made here too.
	prefixMarks int
	// calls lists the tool calls applied and the model calls answered after prefix, for work
	// lost without marks (oracle.Observation.Calls).
	calls    []oracle.Call
	tick     *time.Ticker // the hang detector's
	lastWall time.Time    // when the last beat was made, or a process started, in wall-clock time (recording only)

	failedProcs int // processes that ended on their own with an error or a panic
	// lastFault is the beat the last fault fired at (-1: none yet), and quietAt when the faults
	// fired so far are all over (see end): what tells the supervisor whether a failed process was
	// disturbed.
	lastFault int
	quietAt   time.Time
	counted   int // restarts that count against Options.MaxRestarts
}

// worker is one of the target's workers, which run at once over one disk and world: the
// processes started for it, one after another.
type worker struct {
	id       int
	proc     *process
	done     bool
	result   any
	err      error
	panicked string
	// failures counts its processes' failures in a row, for the back-off; stalled says that the
	// last failure was of an undisturbed process that made no progress (see run.failed), and
	// lastFailed which process it was.
	failures   int
	stalled    bool
	lastFailed int
	gaveUp     string // why the supervisor gave the worker up, if it did
}

// process is one process of the target: one call of Run, and its threads.
type process struct {
	worker     *worker
	id         int
	born       time.Time    // the virtual time it started at
	env        *env         // the Env, the kernel's side
	api        *harness.Env // the Env its target is given
	threads    []*thread
	frozen     time.Time // frozen (by a lease fault) until
	dead       chan struct{}
	ctx        context.Context // its threads': done when it ends, or is asked to stop (terminate)
	cancel     context.CancelCauseFunc
	start      int // its first beat
	marks      int // marks it made
	sinceMark  int // beats it made since its last mark
	toMark     int // beats it made before its first mark
	firstFault int // the first beat a fault fired at in it, or -1
	ended      bool
	crashed    bool
	atEnd      []func() // harness.Env.AtEnd's functions, guarded by run.mu
	failed     bool     // it ended on its own with an error or a panic
	// stopping says a deploy has asked it to stop (terminate): it has a grace period to end on
	// its own; atStop are envlink.Ext.AtStop's functions, which ask it in its own terms.
	stopping bool
	atStop   []func()
}

// thread is one goroutine of a process, run under the baton.
type thread struct {
	p      *process
	resume chan struct{}
	wait   *wait         // what it is blocked on; nil when runnable
	done   bool          // its function returned (as the runner learned)
	gone   chan struct{} // closed when its goroutine has ended, its deferred calls run
}

// wait is what a blocked thread waits for; it wakes on the first of them.
type wait struct {
	until  time.Time         // this virtual time (zero: none)
	topic  string            // a message on this topic
	ctx    context.Context   // this context being done (nil: none)
	err    error             // why it woke
	msgs   []harness.Message // the topic's messages, when it woke for them
	thread *thread           // this thread having returned (Env.Go's wait)
	idle   bool              // nothing else of the run being able to run before the clock moves (Settle)
}

type eventKind uint8

const (
	evFinish eventKind = iota // the thread's function returned
	evBlock                   // the thread blocked on its wait
	evYield                   // the thread was preempted by a switch fault
	evCrash                   // a fault crashed the process (or every process)
	evFreeze                  // a lease fault froze the process
	evOver                    // the run exceeded its beat budget
	evTerm                    // a deploy asks every process to stop, with a grace period (upgrade.go)
)

type event struct {
	t        *thread
	kind     eventKind
	fault    *faults.Fault
	result   any
	err      error
	panicked string
}

type timer struct {
	at     time.Time
	seq    int
	cancel func()
	owner  *process
}

type restart struct {
	at     time.Time
	worker *worker
}

// keepsSubset reports whether s has a crash keeping a subset of what was not fsynced, for which
// the disk must keep its pending operations (faults.KindInfo.Pending).
func keepsSubset(s faults.Schedule) bool {
	return slices.ContainsFunc(s, func(f faults.Fault) bool {
		info, _ := f.Kind.Info()
		return info.NeedsPending(f)
	})
}

// ending is how a run ended.
type ending struct {
	result   any
	err      error
	panicked string
	hung     string // why the run cannot be judged: a process hung, or asked what no one can answer (harness.ErrUndecided)
	cause    error  // the harness.ErrUndecided a process ended with, when that is why hung is set
	over     bool
	late     bool   // a golden run's clock would have passed Options.MaxVirtualTime
	stopped  error  // the run's context was done (its cause): the run was interrupted
	gaveUp   bool   // the harness stopped the run (stuck, restarts used up), not the target
	why      string // why the supervisor stopped restarting the failing process, if it did
}

func (x ending) String() string {
	switch {
	case x.stopped != nil:
		return "interrupted: " + x.stopped.Error()
	case x.hung != "":
		return x.hung
	case x.over || x.late:
		return "no end in sight"
	case x.panicked != "":
		return "panicked: " + firstLine(x.panicked)
	case x.err != nil:
		return "failed: " + x.err.Error()
	}
	return "completed"
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func newRun(newTarget func() harness.Target, o *Options, tools []harness.Tool, s faults.Schedule, maxBeats int) *run {
	r := &run{
		ctx:        context.Background(),
		lastFault:  -1,
		upgradedAt: -1,
		newTarget:  newTarget,
		o:          o,
		sched:      s,
		fired:      make([]int, len(s)),
		clock:      faults.NewClock(faults.Epoch),
		notes:      map[int]string{},
		maxBeats:   maxBeats,
		pcg:        rand.NewPCG(o.Seed, 0x736368656475),
		events:     make(chan event),
		seen:       -1,
	}
	r.rng = rand.New(r.pcg)
	r.disk = faults.NewDisk(faults.DiskOptions{Now: r.clock.Now, Sector: o.Sector, Pending: keepsSubset(s), Model: o.FSModel})
	r.world = world.New(tools)
	for i := range r.fired {
		r.fired[i] = -1
	}
	for i := 0; i < o.Workers; i++ {
		r.workers = append(r.workers, &worker{id: i})
	}
	return r
}

// newProcess records a new process for worker w, not yet running.
func (r *run) newProcess(w *worker) *process {
	p := &process{worker: w, id: len(r.procs), born: r.clock.Now(), dead: make(chan struct{}), start: r.nbeats(), firstFault: -1}
	p.ctx, p.cancel = context.WithCancelCause(context.Background())
	p.env = &env{r: r, p: p, rng: rand.New(rand.NewPCG(r.o.Seed, uint64(p.id)))}
	p.api = envlink.New(p.env).(*harness.Env)
	if r.bare != nil {
		p.env.fs, p.env.bare = r.bare, true
	} else {
		p.env.fs = faults.New(r.disk, injector{p.env})
	}
	w.proc = p
	r.procs = append(r.procs, p)
	return p
}

// start starts a process for worker w: a fresh instance of the target, whose Run is its main
// thread, runnable. The instance is built on that thread, so that a constructor that panics
// fails the process like a Run that does.
func (r *run) start(w *worker) {
	if r.rec != nil {
		r.lastWall = time.Now()
	}
	p := r.newProcess(w)
	r.spawn(p, func(ctx context.Context) (any, error) {
		tg := r.newTarget()
		if h, ok := tg.(Hinter); ok {
			r.mu.Lock()
			r.hangHint = h.HangHint()
			r.mu.Unlock()
		}
		return tg.Run(ctx, p.api)
	})
}

// spawn starts a thread of p and returns it; it waits for the baton before running f.
func (r *run) spawn(p *process, f func(ctx context.Context) (any, error)) *thread {
	t := &thread{p: p, resume: make(chan struct{}), gone: make(chan struct{})}
	p.threads = append(p.threads, t)
	go func() {
		defer close(t.gone)
		if !t.await() {
			return
		}
		ev := event{t: t, kind: evFinish}
		defer func() {
			select {
			case <-p.dead: // crashed or killed (exit and report wait for this): the runner knows
				return
			default:
			}
			if p := recover(); p != nil {
				ev.panicked = fmt.Sprintf("%v%s", p, panicSite(debug.Stack()))
			}
			r.send(ev)
		}()
		ev.result, ev.err = f(p.ctx)
	}()
	return t
}

// await waits for the baton; false means the process died meanwhile.
func (t *thread) await() bool {
	select {
	case <-t.resume:
		return true
	case <-t.p.dead:
		return false
	}
}

// report sends an event for the current thread and waits for the baton again. A thread whose
// process dies meanwhile leaves through runtime.Goexit.
func (r *run) report(ev event) {
	t := ev.t
	if !r.send(ev) || !t.await() {
		runtime.Goexit()
	}
}

// send sends an event of a thread to the runner, unless the thread's process dies first (the
// runner gave up on it: it hung, or the run was interrupted, and nothing reads events any more).
// It reports whether the event was sent.
func (r *run) send(ev event) bool {
	select {
	case r.events <- ev:
		return true
	case <-ev.t.p.dead:
		return false
	}
}

// exit sends a final event for the current thread and stops it.
//
// It waits for the runner to mark the process dead before leaving, so that the deferred calls
// Goexit runs find it dead and cannot reach the disk or the world after the crash.
func (r *run) exit(ev event) {
	r.send(ev)
	<-ev.t.p.dead
	runtime.Goexit()
}

// runnable lists the threads that can run, in a stable order.
func (r *run) runnable() []*thread {
	var out []*thread
	for _, w := range r.workers {
		p := w.proc
		if p == nil || p.ended || p.frozen.After(r.clock.Now()) {
			continue
		}
		for _, t := range p.threads {
			if !t.done && t.wait == nil {
				out = append(out, t)
			}
		}
	}
	return out
}

// pick chooses the next thread to run: the current one while it can, else one drawn by the
// scheduler's seeded source; after a switch fault, one of another worker (or the one named).
func (r *run) pick() *thread {
	if c := r.current; c != nil && r.preempt == nil && !c.done && c.wait == nil && !c.p.ended && !c.p.frozen.After(r.clock.Now()) {
		return c // the common case, without listing the others
	}
	ts := r.runnable()
	if len(ts) == 0 {
		return nil
	}
	if f := r.preempt; f != nil {
		r.preempt = nil
		var others []*thread
		for _, t := range ts {
			if t.p != r.current.p && (f.Worker == 0 || t.p.worker.id == f.Worker-1) {
				others = append(others, t)
			}
		}
		if len(others) > 0 {
			ts = others
		}
	}
	if len(ts) == 1 {
		return ts[0]
	}
	return ts[r.rng.IntN(len(ts))]
}

// hangHint says where a hang usually comes from: waiting where the kernel does not see it. A
// target that is a Hinter says it in its own words.
const hangHint = "a thread waited outside the Env (in Go: a channel, a sync.WaitGroup, a lock or time.Sleep; wait for threads with harness.Group, for time with Env.Sleep) or the process ran code of its own that never returned"

// loop runs the processes until every worker is done, or the run stops for good.
func (r *run) loop() ending {
	r.tick = time.NewTicker(max(r.o.Timeout/hangTicks, time.Millisecond))
	defer r.tick.Stop()
	for {
		if x, over := r.over(); over {
			return x
		}
		if r.ctx.Err() != nil {
			r.killAll()
			return ending{stopped: context.Cause(r.ctx)}
		}
		t := r.pick()
		if t == nil {
			if !r.advance() {
				return r.stuckEnding()
			}
			if r.late {
				r.killAll()
				return ending{late: true}
			}
			if x, stop := r.graceOver(); stop {
				return x
			}
			continue
		}
		r.current = t
		ev, hung := r.next(t)
		if r.ctx.Err() != nil && hung != "" {
			return ending{stopped: context.Cause(r.ctx)}
		}
		if hung != "" {
			return ending{hung: hung}
		}
		if x, stop := r.handle(ev); stop {
			return x
		}
		r.wakeReady()
	}
}

// hangTicks is how many times per Timeout the hang detector looks at the run's progress: a
// process counts as hung between Timeout and Timeout plus a sixteenth of it after its last beat.
const hangTicks = 16

// next runs t until it reports an event. It returns a reason instead if t hangs: no progress
// for Timeout of wall-clock time (noticed within Timeout/hangTicks more); or if the run's context
// is done, having ended every process.
func (r *run) next(t *thread) (event, string) {
	r.mu.Lock()
	if r.progress != r.seen {
		r.seen, r.since = r.progress, time.Now()
	}
	r.mu.Unlock()
	t.resume <- struct{}{}
	for {
		select {
		case ev := <-r.events:
			return ev, ""
		case <-r.ctx.Done():
			// Every process ends, and t, which was running, is let finish what it does until its
			// next Env call, where it stops: code of its own that cleans up as it stops (an
			// adapter's AtEnd function, run there if t had not registered it yet) runs to its end
			// before the run returns and chaoskit exits, within a Timeout.
			r.killAll()
			select {
			case <-t.gone:
			case <-time.After(r.o.Timeout):
			}
			return event{}, "interrupted"
		case now := <-r.tick.C:
			r.mu.Lock()
			n, hint := r.progress, cmp.Or(r.hangHint, hangHint)
			r.mu.Unlock()
			// seen and since live in the run, across events: threads that only wait and wake
			// (envlink.Ext's Hold) are no progress.
			if n != r.seen || r.since.IsZero() {
				r.seen, r.since = n, now
				continue
			}
			if now.Sub(r.since) >= r.o.Timeout {
				r.killAll()
				return event{}, fmt.Sprintf("process %d hung: no beat for %s of wall-clock time%s; %s", t.p.id, r.o.Timeout, r.hangWhy, hint)
			}
		}
	}
}

// handle applies an event. It returns the run's ending and true when the run is over.
func (r *run) handle(ev event) (ending, bool) {
	t, p := ev.t, ev.t.p
	switch ev.kind {
	case evYield:
		r.preempt = ev.fault
	case evBlock: // the loop's wakeReady wakes it if its wait is already over
	case evFreeze:
		p.frozen = r.clock.Now().Add(ev.fault.Dur)
		r.note(r.nbeats()-1, fmt.Sprintf("process %d frozen for %s", p.id, ev.fault.Dur))
	case evOver:
		r.killAll()
		if r.ctx.Err() != nil {
			return ending{stopped: context.Cause(r.ctx)}, true
		}
		return ending{over: true}, true
	case evFinish:
		t.done = true
		if t != p.threads[0] && ev.panicked == "" {
			return ending{}, false // a secondary thread ended; the process goes on
		}
		// The main thread ended, or any thread panicked, which ends the process as it would a
		// real one.
		how := ending{result: ev.result, err: ev.err, panicked: ev.panicked}
		if p.stopping {
			what := how.String()
			if what == "completed" {
				what = "ended without an error"
			}
			r.end(p, fmt.Sprintf("process %d stopped within the deploy's grace period (%s)", p.id, what))
		} else {
			r.end(p, fmt.Sprintf("process %d %s", p.id, how))
		}
		if errors.Is(ev.err, harness.ErrUndecided) {
			r.killAll() // the run cannot be judged: nothing it does from here on means anything
			return ending{hung: ev.err.Error(), cause: ev.err}, true
		}
		w := p.worker
		w.result, w.err, w.panicked = ev.result, ev.err, ev.panicked
		if p.stopping {
			return r.stopped(p)
		}
		if ev.err == nil && ev.panicked == "" || errors.Is(ev.err, harness.ErrRefused) {
			w.done = true // completed, or refused to go on: nothing to restart
			return ending{}, false
		}
		return r.failed(p, w)
	case evCrash:
		return r.crashed(p, *ev.fault)
	case evTerm:
		r.terminate(*ev.fault)
	}
	return ending{}, false
}

// crashed applies a crash fault that fired in process p.
func (r *run) crashed(p *process, f faults.Fault) (ending, bool) {
	beat := r.nbeats() - 1
	r.diverging = r.diverging || isDiverge(f)
	info, _ := f.Kind.Info()
	victims := []*process{p}
	if info.Ends == faults.MachineScope || info.Ends == faults.FleetScope {
		victims = r.live() // every worker runs on the one machine, and is of the one fleet
	}
	for _, v := range victims {
		v.crashed = true
		r.end(v, fmt.Sprintf("process %d crashed by %s", v.id, f))
	}
	if info.Disk {
		r.note(beat, r.disk.Crash(f, r.crashRand(beat)))
	}
	if info.NextVersion {
		r.deploy()
	}
	for _, v := range victims {
		v.worker.stalled = false // the crash changed what the next process finds
		if x, stop := r.restart(v.worker, r.o.RestartDelay, true); stop {
			return x, true
		}
	}
	return ending{}, false
}

// end marks process p dead: its threads stop at their next Env call, or now if blocked.
func (r *run) end(p *process, note string) {
	if p.ended {
		return
	}
	p.ended = true
	p.cancel(nil)
	if p.stopping {
		r.leaveGrace(p)
	}
	close(p.dead)
	r.mu.Lock()
	hooks := p.atEnd
	r.mu.Unlock()
	for i := len(hooks) - 1; i >= 0; i-- {
		hooks[i]()
	}
	r.timers = slices.DeleteFunc(r.timers, func(t timer) bool { return t.owner == p })
	end := r.nbeats()
	if end > p.start {
		r.note(end-1, note)
	}
}

func (r *run) live() []*process {
	var out []*process
	for _, w := range r.workers {
		if w.proc != nil && !w.proc.ended {
			out = append(out, w.proc)
		}
	}
	return out
}

func (r *run) killAll() {
	for _, p := range r.live() {
		r.end(p, fmt.Sprintf("process %d stopped", p.id))
	}
}

// over reports whether every worker is done, with the run's ending.
func (r *run) over() (ending, bool) {
	var x ending
	for _, w := range r.workers {
		if !w.done || w.proc == nil {
			return x, false
		}
	}
	results := make([]any, len(r.workers))
	for i, w := range r.workers {
		results[i] = w.result
		if x.err == nil && x.panicked == "" {
			x.err, x.panicked, x.why = w.err, w.panicked, w.gaveUp
		}
	}
	x.result = results[0]
	if len(results) > 1 {
		x.result = results
	}
	return x, true
}

// advance moves the clock to the next thing due and makes it happen. It returns false when
// nothing is due: every thread waits for something that will never come.
func (r *run) advance() bool {
	if r.settle() {
		return true
	}
	now := r.clock.Now()
	next, ok := time.Time{}, false
	consider := func(t time.Time) {
		if !ok || t.Before(next) {
			next, ok = t, true
		}
	}
	for _, p := range r.live() {
		if p.frozen.After(now) {
			consider(p.frozen)
		}
		for _, t := range p.threads {
			if t.wait != nil && !t.wait.until.IsZero() {
				consider(t.wait.until)
			}
		}
	}
	if len(r.timers) > 0 {
		consider(r.timers[0].at)
	}
	if at, due := r.world.Next(); due {
		consider(at)
	}
	for _, rs := range r.restarts {
		consider(rs.at)
	}
	for _, g := range r.graces {
		consider(g.until)
	}
	if !ok {
		return false
	}
	if r.maxTime > 0 && next.Sub(faults.Epoch) > r.maxTime {
		r.late = true // a golden run that would pass its bound in virtual time: it goes no further
		return true
	}
	if next.After(now) {
		r.clock.Set(next)
	}
	r.mu.Lock()
	r.world.Do(world.Op{Kind: world.Advance, At: next})
	r.mu.Unlock()
	for len(r.timers) > 0 && !r.timers[0].at.After(next) {
		tm := r.timers[0]
		r.timers = r.timers[1:]
		tm.cancel()
	}
	var later []restart
	for _, rs := range r.restarts {
		if rs.at.After(next) {
			later = append(later, rs)
		} else {
			r.start(rs.worker)
		}
	}
	r.restarts = later
	r.wakeReady()
	return true
}

// settle wakes the threads that wait for the run to settle at this instant (envlink.Ext's
// Settle), if any: nothing else can run, and the clock has not moved yet.
func (r *run) settle() bool {
	woke := false
	for _, p := range r.live() {
		for _, t := range p.threads {
			if w := t.wait; w != nil && w.idle && !t.done {
				t.wait = nil
				woke = true
			}
		}
	}
	return woke
}

// wakeReady wakes every blocked thread whose wait is over.
func (r *run) wakeReady() {
	for _, p := range r.live() {
		for _, t := range p.threads {
			r.wakeIfReady(t)
		}
	}
}

func (r *run) wakeIfReady(t *thread) {
	w := t.wait
	if w == nil || t.done {
		return
	}
	switch {
	case w.topic != "" && len(r.world.Messages(w.topic)) > 0:
		w.msgs = r.world.Messages(w.topic)
	case w.thread != nil && w.thread.done:
	case w.ctx != nil && w.ctx.Err() != nil:
		w.err = w.ctx.Err()
	case !w.until.IsZero() && !w.until.After(r.clock.Now()):
	default:
		return
	}
	t.wait = nil
}

// addTimer registers a virtual deadline of process p and returns its number, for removeTimer.
func (r *run) addTimer(p *process, at time.Time, cancel func()) int {
	r.timerSeq++
	tm := timer{at: at, seq: r.timerSeq, cancel: cancel, owner: p}
	i := len(r.timers)
	for i > 0 && r.timers[i-1].at.After(at) {
		i--
	}
	r.timers = slices.Insert(r.timers, i, tm)
	return tm.seq
}

// removeTimer forgets a deadline that no longer matters, so that it does not move the clock.
func (r *run) removeTimer(seq int) {
	r.timers = slices.DeleteFunc(r.timers, func(t timer) bool { return t.seq == seq })
}

func (r *run) stuckEnding() ending {
	var waiting []string
	for _, p := range r.live() {
		for _, t := range p.threads {
			if t.wait != nil {
				what := "forever"
				switch {
				case t.wait.topic != "":
					what = "a message on " + t.wait.topic
				case t.wait.thread != nil:
					what = "a thread of its own that waits too (harness.Group's Wait)"
				}
				waiting = append(waiting, fmt.Sprintf("process %d waits for %s", p.id, what))
			}
		}
	}
	r.killAll()
	return ending{err: fmt.Errorf("stuck: nothing will ever wake the run (%s)", strings.Join(waiting, "; ")), gaveUp: true}
}

// crashRand returns the random source for the crash at beat: a function of the seed and the
// beat only, so that a derived crash state equals a re-run one.
func (r *run) crashRand(beat int) *rand.Rand {
	return rand.New(rand.NewPCG(r.o.Seed^0x63_68_61_6f_73_6b_69_74, uint64(beat)))
}

func (r *run) note(beat int, s string) {
	if beat < 0 {
		return
	}
	if old := r.notes[beat]; old != "" {
		s = old + "; " + s
	}
	r.notes[beat] = s
}

func isCrash(k faults.Kind) bool {
	info, _ := k.Info()
	return info.Crash()
}

// panicSite returns " (at func file:line)" for the frame that panicked, from a stack trace:
// the first frame outside the runtime, the kernel, the world and package harness (the Env's
// methods). It leaves out goroutine numbers, paths and
// offsets, so that reports stay the same from run to run.
func panicSite(stack []byte) string {
	lines := strings.Split(string(stack), "\n")
	for i := 1; i+1 < len(lines); i += 2 {
		fn := lines[i]
		if strings.HasPrefix(fn, "runtime") || strings.HasPrefix(fn, "panic(") || strings.HasPrefix(fn, "github.com/chaoskit/chaoskit/harness.") ||
			strings.HasPrefix(fn, "github.com/chaoskit/chaoskit/sim.") || strings.HasPrefix(fn, "github.com/chaoskit/chaoskit/sim/internal/world.") {
			continue
		}
		if j := strings.LastIndexByte(fn, '('); j > 0 && !strings.HasSuffix(fn[:j], ".") {
			fn = fn[:j]
		}
		loc := strings.TrimSpace(lines[i+1])
		if j := strings.LastIndexByte(loc, ' '); j > 0 {
			loc = loc[:j]
		}
		if j := strings.LastIndexByte(loc, '/'); j >= 0 {
			loc = loc[j+1:]
		}
		return " (at " + fn[strings.LastIndexByte(fn, '/')+1:] + " " + loc + ")"
	}
	return ""
}

// startAll starts a process for every worker and runs them to the end.
func (r *run) startAll() ending {
	for _, w := range r.workers {
		r.start(w)
	}
	return r.loop()
}
