package harness

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/spf13/afero"
)

// Env is everything a target may touch outside its own memory, for one process: the
// filesystem, virtual time, the world (tools, leases, messages, the model), a random source,
// and progress marks. Each restart gets a new Env over the same disk and world.
//
// Every Env call that changes something, or waits, is a beat, at which a fault may fire. Call
// the Env from the goroutine running Run, or from goroutines started with Go: the harness runs
// them one at a time, which is what makes every run reproducible.
type Env struct {
	r    *run
	p    *process
	bare bool // outside any campaign: no beats, no faults
	fs   afero.Fs
	rng  *rand.Rand
}

// FS returns the process's filesystem. Every mutating call on it is a beat; reads are not.
func (e *Env) FS() afero.Fs {
	e.alive()
	return e.fs
}

// Now returns the virtual time. It moves only when every thread of every worker waits (on
// Sleep, a tool's or the model's latency, Await) and across restarts, by Options.RestartDelay.
func (e *Env) Now() time.Time {
	e.alive()
	return e.r.clock.Now()
}

// Rand returns the process's random source. It is seeded from the case's seed and the process
// number: the golden run and the first process of every case draw the same numbers, and a
// restarted process draws new ones, as a real restarted process would.
func (e *Env) Rand() *rand.Rand {
	e.alive()
	return e.rng
}

// Attempt numbers the process: 0 for the first, then one more per process started, whatever
// its worker.
func (e *Env) Attempt() int { return e.p.attempt }

// Worker numbers the worker (from 0 to Options.Replicas-1) the process belongs to.
func (e *Env) Worker() int { return e.p.slot.id }

// AtEnd registers f to run when the process ends, however it ends: its Run returned, a fault
// crashed it, a deploy restarted it, or the run stopped it (hung, over its budget). f runs once,
// on the runner's goroutine, after the process's threads have stopped running and before
// anything else happens: before a crash reaches the disk, before any other process starts. (A
// thread that hung in code of its own may still be running it.)
// Functions run in the reverse order of their registration, and must not call the Env. If the
// process has ended already (the run was stopped while the thread ran code of its own), f runs at
// once, on the caller's goroutine, and the caller stops there, as at any Env call.
//
// It is for targets whose process reaches outside the simulation: an adapter that runs a real
// subprocess kills it here, so that a crash at a beat stops the subprocess at that beat.
func (e *Env) AtEnd(f func()) {
	e.r.mu.Lock()
	select {
	case <-e.p.dead: // end has run, or is running, the functions registered so far: f is not one
		e.r.mu.Unlock()
		f()
		runtime.Goexit()
	default:
	}
	e.p.atEnd = append(e.p.atEnd, f)
	e.r.mu.Unlock()
}

// Mark declares a progress point: call it right after a step of the harness has become durable,
// with a label unique to that step ("step 3 committed"). Marks are beats. The oracle measures
// work lost from them: a golden mark made twice is durable work done twice. Mark progress when
// you make it, not when you replay it from the log; with several workers, only while you hold
// the run's lease.
func (e *Env) Mark(label string) {
	e.beat(Beat{Kind: BeatMark, Name: label})
}

// Sleep waits d of virtual time, or until ctx is done (returning its error). It is a beat.
func (e *Env) Sleep(ctx context.Context, d time.Duration) error {
	e.beat(Beat{Kind: BeatSleep, Dur: d})
	return e.block(&wait{until: e.r.clock.Now().Add(d), ctx: ctx})
}

// WithTimeout returns a copy of parent that is done once d of virtual time has passed, exactly
// as context.WithTimeout's is on wall-clock time: its Err is then context.DeadlineExceeded, and
// so is the Err of every context derived from it (context.WithCancel of it, say), while
// cancelling it gives context.Canceled and a parent's end passes down. It is the deadline to give
// tool and model calls, since a wall-clock deadline would never pass in virtual time.
//
// The deadline reaches the contexts derived from it at once, when the clock gets there; a
// cancellation of parent reaches this context at once too, and those derived from it a moment
// later, as context.AfterFunc would.
func (e *Env) WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	e.alive()
	at := e.r.clock.Now().Add(d)
	inner, stopInner := context.WithCancel(parent) // done with parent, synchronously
	c := &vctx{inner: inner, deadline: at, done: make(chan struct{}), afters: map[*func()]bool{}}
	if dl, ok := parent.Deadline(); ok && dl.Before(at) {
		c.deadline = dl
	}
	stop := context.AfterFunc(inner, func() { c.cancel(inner.Err()) })
	seq := e.r.addTimer(e.p, at, func() { c.cancel(context.DeadlineExceeded) })
	return c, func() {
		select {
		case <-e.p.dead: // the runner dropped the process's timers
		default:
			e.r.removeTimer(seq)
		}
		stop()
		c.cancel(context.Canceled)
		stopInner()
	}
}

// vctx is a context with a virtual deadline. It is a type of its own, not a wrapper of the
// standard library's cancel contexts: a context derived from one of those takes its error from
// the wrapped context, which would say Canceled where a deadline passed. Contexts derived from
// a vctx register with it through its AfterFunc method, so that its deadline reaches them
// synchronously.
type vctx struct {
	inner    context.Context // a child of the parent: done when the parent is
	deadline time.Time
	done     chan struct{}
	mu       sync.Mutex
	err      error
	afters   map[*func()]bool
}

func (c *vctx) Deadline() (time.Time, bool) { return c.deadline, true }
func (c *vctx) Done() <-chan struct{}       { return c.done }
func (c *vctx) Value(key any) any           { return c.inner.Value(key) }

// Err returns why c is done: its own deadline or cancellation, or its parent's end.
func (c *vctx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		return c.inner.Err()
	}
	return c.err
}

// AfterFunc calls f once c is done, synchronously with the deadline or cancellation that ends it;
// stop unregisters f. It is how contexts derived from c learn of its end (the standard library
// calls it).
func (c *vctx) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		go f()
		return func() bool { return false }
	}
	key := &f
	c.afters[key] = true
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		registered := c.afters[key]
		delete(c.afters, key)
		return registered
	}
}

// cancel makes c done with err, the first time, and calls the functions registered with it.
func (c *vctx) cancel(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	close(c.done)
	afters := c.afters
	c.afters = nil
	c.mu.Unlock()
	for f := range afters {
		(*f)()
	}
}

// Go starts f in a new thread of the process (a watchdog, a heartbeat): it runs when the
// process's other threads wait, and dies with the process. ctx is done when the process ends.
func (e *Env) Go(f func(ctx context.Context)) {
	e.alive()
	e.r.spawn(e.p, func(ctx context.Context) (any, error) {
		f(ctx)
		return nil, nil
	})
}

// Call calls a tool. It is two beats: the call leaving the process (a crash here means the
// tool never saw it) and the call applied (a crash here means the effect landed but the reply
// was lost); the tool's latency passes between them. It returns ctx's error, without calling
// the tool, if ctx is done.
func (e *Env) Call(ctx context.Context, c Call) (Reply, error) {
	reply, _, err := e.call(ctx, c, false)
	return reply, err
}

// Lookup asks a tool for the effect applied with the caller's own reference ref (Call.Ref): the
// read-only look-up real APIs offer (charges listed by metadata, an order found by its number),
// which outlives the tool's memory of idempotency keys. found is false if no effect of the tool
// carries ref. It is two beats, like a call, and the tool faults that make a call fail make it
// fail too; it is never an effect.
func (e *Env) Lookup(ctx context.Context, tool, ref string) (reply Reply, found bool, err error) {
	if ref == "" {
		panic("harness: Env.Lookup with an empty reference")
	}
	return e.call(ctx, Call{Tool: tool, Ref: ref}, true)
}

// call is Call, or (lookup) Lookup.
func (e *Env) call(ctx context.Context, c Call, lookup bool) (Reply, bool, error) {
	e.alive()
	tool := e.r.world.tool(c.Tool) // an undeclared tool panics here, not under the run's lock
	if err := ctx.Err(); err != nil {
		return Reply{}, false, err
	}
	ref := ""
	if lookup {
		ref = c.Ref
	}
	idx, f := e.beat(Beat{Kind: BeatToolSent, Name: c.Tool, Key: c.Key, Ref: ref, Async: tool.Async > 0 && !lookup})
	if lookup {
		return e.lookup(ctx, tool, c, f)
	}
	op := worldOp{kind: wCall, at: e.r.clock.Now(), call: c, identity: identity(c), beat: idx, attempt: e.p.attempt}
	var kind faults.Kind
	if f != nil {
		kind = f.Kind
	}
	switch kind {
	case faults.ToolTransient:
		return Reply{}, false, fmt.Errorf("%s: %w", c.Tool, ErrToolTransient)
	case faults.ToolTimeout:
		// The call outlives the caller: it is still pending at the caller's deadline (or the
		// tool's own, a minute), and lands a second after.
		until := e.r.clock.Now().Add(time.Minute)
		if dl, ok := ctx.Deadline(); ok && dl.Before(until) {
			until = dl
		}
		err := e.block(&wait{until: until, ctx: ctx})
		if err == nil {
			err = context.DeadlineExceeded
		}
		op.kind, op.at, op.delay = wLate, e.r.clock.Now(), time.Second
		e.do(op)
		return Reply{}, false, fmt.Errorf("%s: %w (it may still be applied)", c.Tool, err)
	case faults.CallbackDup:
		op.dupCallback = true
	}
	reply, _, err := e.do(op)
	if err != nil {
		return Reply{}, false, fmt.Errorf("%s: %w", c.Tool, err)
	}
	if tool.Latency > 0 {
		if err := e.block(&wait{until: e.r.clock.Now().Add(tool.Latency), ctx: ctx}); err != nil {
			return Reply{}, false, fmt.Errorf("%s: %w (it may have been applied)", c.Tool, err)
		}
	}
	e.beat(Beat{Kind: BeatToolApplied, Name: c.Tool, Key: c.Key})
	if kind == faults.ToolAmbiguous {
		return Reply{}, false, fmt.Errorf("%s: %w", c.Tool, ErrToolAmbiguous)
	}
	return reply, true, nil
}

// lookup is the rest of a Lookup after its first beat, at which fault f fired (if not nil).
func (e *Env) lookup(ctx context.Context, tool Tool, c Call, f *faults.Fault) (Reply, bool, error) {
	if f != nil && f.Kind == faults.ToolTransient {
		return Reply{}, false, fmt.Errorf("%s: lookup: %w", c.Tool, ErrToolTransient)
	}
	e.r.mu.Lock()
	reply, found := e.r.world.byRef[c.Tool+"\x00"+c.Ref]
	e.r.mu.Unlock()
	if tool.Latency > 0 {
		if err := e.block(&wait{until: e.r.clock.Now().Add(tool.Latency), ctx: ctx}); err != nil {
			return Reply{}, false, fmt.Errorf("%s: lookup: %w", c.Tool, err)
		}
	}
	e.beat(Beat{Kind: BeatToolApplied, Name: c.Tool, Ref: c.Ref})
	if f != nil && (f.Kind == faults.ToolAmbiguous || f.Kind == faults.ToolTimeout) {
		return Reply{}, false, fmt.Errorf("%s: lookup: %w", c.Tool, ErrToolAmbiguous)
	}
	reply.Replayed = found
	return reply, found, nil
}

// ModelCall is one call of the target's language model. The model is a script: the target
// says what it answers; the world adds latency, faults, and the count of calls.
type ModelCall struct {
	// Purpose names what the call is for, uniquely per logical call ("plan step 3"): the
	// oracle counts calls made again after restarts by it.
	Purpose string
	// Reply is the scripted answer.
	Reply string
	// Latency is the virtual time the answer takes.
	Latency time.Duration
}

// Model calls the model. It is a beat. Faults can make it answer a rate limit
// (*RateLimitError), a server error (ErrModelServer), a context-length error (ErrContextLength),
// or never answer until ctx is done, so give it a deadline with WithTimeout.
func (e *Env) Model(ctx context.Context, c ModelCall) (string, error) {
	e.alive()
	if err := ctx.Err(); err != nil {
		return "", err
	}
	_, f := e.beat(Beat{Kind: BeatModel, Name: c.Purpose})
	if f != nil {
		switch f.Kind {
		case faults.ModelRateLimit:
			return "", &RateLimitError{RetryAfter: faults.RateLimitRetryAfter}
		case faults.ModelError:
			return "", ErrModelServer
		case faults.ModelContext:
			return "", ErrContextLength
		case faults.ModelHang:
			return "", e.block(&wait{ctx: ctx})
		}
	}
	if c.Latency > 0 {
		if err := e.block(&wait{until: e.r.clock.Now().Add(c.Latency), ctx: ctx}); err != nil {
			return "", err
		}
	}
	e.do(worldOp{kind: wModel, at: e.r.clock.Now(), name: c.Purpose})
	return c.Reply, nil
}

// Await waits until a message has been posted on topic (an asynchronous tool's completion, a
// human's approval) and returns every message posted there so far, in order; a delivery may
// come twice. It is a beat. It returns ctx's error if ctx is done first.
func (e *Env) Await(ctx context.Context, topic string) ([]Message, error) {
	e.beat(Beat{Kind: BeatAwait, Name: topic})
	w := &wait{topic: topic, ctx: ctx}
	if err := e.block(w); err != nil {
		return nil, err
	}
	return w.msgs, nil
}

// Messages returns the messages posted on topic so far, without waiting. It is a read, not a
// beat.
func (e *Env) Messages(topic string) []Message {
	e.alive()
	e.r.mu.Lock()
	defer e.r.mu.Unlock()
	return append([]Message(nil), e.r.world.topics[topic]...)
}

// Acquire takes the named lease for ttl of virtual time, if no other worker holds it or it has
// expired (a sweeper reaping an expired lease is just this). A restarted worker may take back its
// own lease at once: its old process is dead. Each acquisition gets a new, larger token. It is a
// beat. It fails with ErrLeaseHeld.
func (e *Env) Acquire(ctx context.Context, name string, ttl time.Duration) (Lease, error) {
	return e.lease(ctx, worldOp{kind: wAcquire, name: name, ttl: ttl}, "acquire")
}

// Renew extends a lease by ttl from now. It is a beat. It fails with ErrLeaseLost if the lease
// has expired or been taken over: its holder must stop acting for it.
func (e *Env) Renew(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	return e.lease(ctx, worldOp{kind: wRenew, name: l.Name, token: l.Token, ttl: ttl}, "renew")
}

// Release gives a lease up. It is a beat.
func (e *Env) Release(ctx context.Context, l Lease) error {
	_, err := e.lease(ctx, worldOp{kind: wRelease, name: l.Name, token: l.Token}, "release")
	return err
}

func (e *Env) lease(ctx context.Context, op worldOp, verb string) (Lease, error) {
	e.alive()
	if err := ctx.Err(); err != nil {
		return Lease{}, err
	}
	idx, _ := e.beat(Beat{Kind: BeatLease, Name: op.name, Key: verb})
	op.at, op.holder = e.r.clock.Now(), fmt.Sprintf("worker-%d", e.p.slot.id)
	_, l, err := e.do(op)
	if err != nil {
		if idx >= 0 {
			e.r.mu.Lock()
			e.r.ownBeat(idx).Refused = true
			e.r.mu.Unlock()
		}
		return l, fmt.Errorf("lease %s: %w", op.name, err)
	}
	return l, nil
}

// do performs a change to the world.
func (e *Env) do(op worldOp) (Reply, Lease, error) {
	e.r.mu.Lock()
	defer e.r.mu.Unlock()
	return e.r.world.do(op)
}

// block makes the calling thread wait for w, letting other threads run, and returns why it
// woke: nil, or the error of w's context.
func (e *Env) block(w *wait) error {
	if w.ctx != nil && w.ctx.Err() != nil {
		return w.ctx.Err()
	}
	t := e.r.current
	t.wait = w
	e.r.wakeIfReady(t)
	if t.wait != nil {
		e.r.report(event{t: t, kind: evBlock})
	}
	return w.err
}

// injector is the Env's side of the fault layer: every mutating filesystem operation is a beat.
type injector struct{ e *Env }

func (i injector) Inject(op faults.Op) *faults.Fault {
	_, f := i.e.beat(Beat{Kind: BeatFS, Op: op})
	return f
}

// alive stops the calling goroutine if its process has ended.
func (e *Env) alive() {
	select {
	case <-e.p.dead:
		runtime.Goexit()
	default:
	}
}

// beat records a beat (see run.step) and acts on the fault due at it, if any. A crash does not
// return; a freeze or a switch returns once the thread has the baton again.
func (e *Env) beat(b Beat) (int, *faults.Fault) {
	e.alive()
	r := e.r
	r.mu.Lock()
	r.progress++
	if e.bare {
		r.mu.Unlock()
		return -1, nil
	}
	idx, due := r.step(e.p, b)
	over := idx >= r.maxBeats || r.spinning() || r.halted || r.ctx.Err() != nil
	r.mu.Unlock()
	if over {
		r.exit(event{t: r.current, kind: evOver})
	}
	switch {
	case due == nil:
	case isCrash(due.Kind):
		r.exit(event{t: r.current, kind: evCrash, fault: due})
	case due.Kind == faults.Lease:
		r.report(event{t: r.current, kind: evFreeze, fault: due})
	case due.Kind == faults.Switch:
		r.report(event{t: r.current, kind: evYield, fault: due})
	}
	return idx, due
}
