package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/internal/envlink"
	"github.com/chaoskit/chaoskit/sim/internal/world"
	"github.com/spf13/afero"
)

// env is a process's harness.Env: the kernel's side of it, with what it offers adapters
// beyond it (envlink.Ext).
type env struct {
	r    *run
	p    *process
	bare bool // outside any campaign: no beats, no faults
	fs   afero.Fs
	rng  *rand.Rand
}

var _ envlink.Ext = (*env)(nil)

// FS is harness.Env.FS.
func (e *env) FS() afero.Fs {
	e.alive()
	return e.fs
}

// Now is harness.Env.Now.
func (e *env) Now() time.Time {
	e.alive()
	return e.r.clock.Now()
}

// Rand is harness.Env.Rand.
func (e *env) Rand() *rand.Rand {
	e.alive()
	return e.rng
}

// Process is harness.Env.Process.
func (e *env) Process() int { return e.p.id }

// Worker is harness.Env.Worker.
func (e *env) Worker() int { return e.p.worker.id }

// AtEnd is harness.Env.AtEnd.
func (e *env) AtEnd(f func()) {
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

// AtStop is envlink.Ext.AtStop. A process already asked to stop calls f at once.
func (e *env) AtStop(f func()) {
	e.alive()
	if e.p.stopping {
		f()
		return
	}
	e.p.atStop = append(e.p.atStop, f)
}

// Mark is harness.Env.Mark.
func (e *env) Mark(label string) {
	e.beat(Beat{Kind: BeatMark, Name: label})
}

// Sleep is harness.Env.Sleep.
func (e *env) Sleep(ctx context.Context, d time.Duration) error {
	e.beat(Beat{Kind: BeatSleep, Dur: d})
	return e.block(&wait{until: e.r.clock.Now().Add(d), ctx: ctx})
}

// WithTimeout is harness.Env.WithTimeout.
func (e *env) WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
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

// Spawn is harness.Env.Go, returning what waits for f (harness.Group.Wait).
func (e *env) Spawn(f func(ctx context.Context)) func(ctx context.Context) error {
	e.alive()
	t := e.r.spawn(e.p, func(ctx context.Context) (any, error) {
		f(ctx)
		return nil, nil
	})
	return func(ctx context.Context) error {
		e.alive()
		if t.done {
			return nil // ended: a done ctx changes nothing
		}
		return e.block(&wait{thread: t, ctx: ctx})
	}
}

// Call is harness.Env.Call.
func (e *env) Call(ctx context.Context, c harness.Call) (harness.Reply, error) {
	reply, _, err := e.call(ctx, c, false)
	return reply, err
}

// Lookup is harness.Env.Lookup.
func (e *env) Lookup(ctx context.Context, tool, ref string) (reply harness.Reply, found bool, err error) {
	if ref == "" {
		panic("harness: Env.Lookup with an empty reference")
	}
	return e.call(ctx, harness.Call{Tool: tool, Ref: ref}, true)
}

// call is Call, or (lookup) Lookup.
func (e *env) call(ctx context.Context, c harness.Call, lookup bool) (harness.Reply, bool, error) {
	e.alive()
	tool := e.r.world.Tool(c.Tool) // an undeclared tool panics here, not under the run's lock
	if err := ctx.Err(); err != nil {
		return harness.Reply{}, false, err
	}
	ref := ""
	if lookup {
		ref = c.Ref
	}
	idx, f := e.beat(Beat{Kind: BeatToolSent, Name: c.Tool, Key: c.Key, Ref: ref, Async: tool.Async > 0 && !lookup})
	if lookup {
		return e.lookup(ctx, tool, c, f)
	}
	args := world.Args(c)
	op := world.Op{Kind: world.Call, At: e.r.clock.Now(), Call: c, Args: args, Identity: world.Identity(c.Tool, args), Beat: idx, Process: e.p.id}
	var kind faults.Kind
	if f != nil {
		kind = f.Kind
	}
	switch kind {
	case faults.ToolTransient:
		return harness.Reply{}, false, fmt.Errorf("%s: %w", c.Tool, harness.ErrToolTransient)
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
		op.Kind, op.At, op.Delay = world.Late, e.r.clock.Now(), time.Second
		e.do(op)
		return harness.Reply{}, false, fmt.Errorf("%s: %w (it may still be applied)", c.Tool, err)
	case faults.CallbackDup:
		op.DupCallback = true
	}
	reply, _, err := e.do(op)
	if err != nil {
		return harness.Reply{}, false, fmt.Errorf("%s: %w", c.Tool, err)
	}
	e.called(false, callIdentity(c, op.Identity), idx)
	if tool.Latency > 0 {
		if err := e.block(&wait{until: e.r.clock.Now().Add(tool.Latency), ctx: ctx}); err != nil {
			return harness.Reply{}, false, fmt.Errorf("%s: %w (it may have been applied)", c.Tool, err)
		}
	}
	e.beat(Beat{Kind: BeatToolApplied, Name: c.Tool, Key: c.Key})
	if kind == faults.ToolAmbiguous {
		return harness.Reply{}, false, fmt.Errorf("%s: %w", c.Tool, harness.ErrToolAmbiguous)
	}
	return reply, true, nil
}

// lookup is the rest of a Lookup after its first beat, at which fault f fired (if not nil).
func (e *env) lookup(ctx context.Context, tool harness.Tool, c harness.Call, f *faults.Fault) (harness.Reply, bool, error) {
	if f != nil && f.Kind == faults.ToolTransient {
		return harness.Reply{}, false, fmt.Errorf("%s: lookup: %w", c.Tool, harness.ErrToolTransient)
	}
	e.r.mu.Lock()
	reply, found := e.r.world.ByRef(c.Tool, c.Ref)
	e.r.mu.Unlock()
	if tool.Latency > 0 {
		if err := e.block(&wait{until: e.r.clock.Now().Add(tool.Latency), ctx: ctx}); err != nil {
			return harness.Reply{}, false, fmt.Errorf("%s: lookup: %w", c.Tool, err)
		}
	}
	e.beat(Beat{Kind: BeatToolApplied, Name: c.Tool, Ref: c.Ref})
	if f != nil && (f.Kind == faults.ToolAmbiguous || f.Kind == faults.ToolTimeout) {
		return harness.Reply{}, false, fmt.Errorf("%s: lookup: %w", c.Tool, harness.ErrToolAmbiguous)
	}
	reply.Replayed = found
	return reply, found, nil
}

// Model is harness.Env.Model.
func (e *env) Model(ctx context.Context, c harness.ModelCall) (string, error) {
	e.alive()
	if err := ctx.Err(); err != nil {
		return "", err
	}
	idx, f := e.beat(Beat{Kind: BeatModel, Name: c.Purpose, Alt: c.Alternative != ""})
	var kind faults.Kind
	if f != nil {
		kind = f.Kind
	}
	switch kind {
	case faults.ModelRateLimit:
		if until := e.r.clock.Now().Add(faults.RateLimitRetryAfter); until.After(e.r.rateLimited) {
			e.r.rateLimited = until
		}
		return "", &harness.RateLimitError{RetryAfter: faults.RateLimitRetryAfter}
	case faults.ModelError:
		if f.Mode == "503" {
			return "", harness.ErrModelUnavailable
		}
		return "", harness.ErrModelServer
	case faults.ModelContext:
		return "", harness.ErrContextLength
	case faults.ModelHang:
		return "", e.block(&wait{ctx: ctx})
	}
	if left := e.r.rateLimited.Sub(e.r.clock.Now()); left > 0 {
		return "", &harness.RateLimitError{RetryAfter: left} // the window a rate limit opened holds for every process
	}
	if c.Latency > 0 {
		if err := e.block(&wait{until: e.r.clock.Now().Add(c.Latency), ctx: ctx}); err != nil {
			return "", err
		}
	}
	e.r.mu.Lock()
	reply := e.r.answer(c)
	e.r.world.Do(world.Op{Kind: world.Model, At: e.r.clock.Now(), Name: c.Purpose})
	e.r.mu.Unlock()
	e.called(true, c.Purpose, idx)
	if kind == faults.ModelCut {
		return "", harness.ErrModelCut // the model did the work; the caller got part of it
	}
	return reply, nil
}

// Await is harness.Env.Await.
func (e *env) Await(ctx context.Context, topic string) ([]harness.Message, error) {
	e.beat(Beat{Kind: BeatAwait, Name: topic})
	w := &wait{topic: topic, ctx: ctx}
	if err := e.block(w); err != nil {
		return nil, err
	}
	return w.msgs, nil
}

// Messages is harness.Env.Messages.
func (e *env) Messages(topic string) []harness.Message {
	e.alive()
	e.r.mu.Lock()
	defer e.r.mu.Unlock()
	return e.r.world.Messages(topic)
}

// ModelCalls is harness.Env.ModelCalls.
func (e *env) ModelCalls() []string {
	e.alive()
	e.r.mu.Lock()
	defer e.r.mu.Unlock()
	return slices.Clone(e.r.world.Asked())
}

// Acquire is harness.Env.Acquire.
func (e *env) Acquire(ctx context.Context, name string, ttl time.Duration) (harness.Lease, error) {
	return e.lease(ctx, world.Op{Kind: world.Acquire, Name: name, TTL: ttl}, "acquire")
}

// Renew is harness.Env.Renew.
func (e *env) Renew(ctx context.Context, l harness.Lease, ttl time.Duration) (harness.Lease, error) {
	return e.lease(ctx, world.Op{Kind: world.Renew, Name: l.Name, Token: l.Token, TTL: ttl}, "renew")
}

// Release is harness.Env.Release.
func (e *env) Release(ctx context.Context, l harness.Lease) error {
	_, err := e.lease(ctx, world.Op{Kind: world.Release, Name: l.Name, Token: l.Token}, "release")
	return err
}

func (e *env) lease(ctx context.Context, op world.Op, verb string) (harness.Lease, error) {
	e.alive()
	if err := ctx.Err(); err != nil {
		return harness.Lease{}, err
	}
	idx, _ := e.beat(Beat{Kind: BeatLease, Name: op.Name, Key: verb})
	op.At, op.Holder = e.r.clock.Now(), fmt.Sprintf("worker-%d", e.p.worker.id)
	_, l, err := e.do(op)
	if err != nil {
		if idx >= 0 {
			e.r.mu.Lock()
			e.r.ownBeat(idx).Refused = true
			e.r.mu.Unlock()
		}
		return l, fmt.Errorf("lease %s: %w", op.Name, err)
	}
	return l, nil
}

// do performs a change to the world.
func (e *env) do(op world.Op) (harness.Reply, harness.Lease, error) {
	e.r.mu.Lock()
	defer e.r.mu.Unlock()
	return e.r.world.Do(op)
}

// block makes the calling thread wait for w, letting other threads run, and returns why it
// woke: nil, or the error of w's context.
func (e *env) block(w *wait) error {
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

// Hold is envlink.Ext.Hold.
func (e *env) Hold(ctx context.Context, at time.Time) error {
	e.alive()
	return e.block(&wait{until: at, ctx: ctx})
}

// Settle is envlink.Ext.Settle.
func (e *env) Settle() {
	e.alive()
	e.block(&wait{idle: true})
}

// Waited is envlink.Ext.Waited.
func (e *env) Waited(d time.Duration, what string) {
	e.beatAs(Beat{Kind: BeatWait, Dur: d, Name: what}, false)
}

// Reversed is envlink.Ext.Reversed: the counted golden runs reverse ties.
func (e *env) Reversed() bool {
	return e.r.rec != nil && e.r.rec.tally != nil
}

// injector is the Env's side of the fault layer: every mutating filesystem operation is a beat.
type injector struct{ e *env }

func (i injector) Inject(op faults.Op) *faults.Fault {
	_, f := i.e.beat(Beat{Kind: BeatFS, Op: op})
	return f
}

// alive stops the calling goroutine if its process has ended.
func (e *env) alive() {
	select {
	case <-e.p.dead:
		runtime.Goexit()
	default:
	}
}

// beat records a beat (see run.step) and acts on the fault due at it, if any. A crash does not
// return; a freeze or a switch returns once the thread has the baton again.
func (e *env) beat(b Beat) (int, *faults.Fault) {
	return e.beatAs(b, true)
}

// beatAs is beat; progress says whether the beat counts as progress for the hang detector.
func (e *env) beatAs(b Beat, progress bool) (int, *faults.Fault) {
	e.alive()
	r := e.r
	r.mu.Lock()
	if progress {
		r.progress++
	}
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
	case r.graceful(due):
		r.report(event{t: r.current, kind: evTerm, fault: due})
	case isCrash(due.Kind):
		r.exit(event{t: r.current, kind: evCrash, fault: due})
	case due.Kind == faults.Lease:
		r.report(event{t: r.current, kind: evFreeze, fault: due})
	case due.Kind == faults.Switch:
		r.report(event{t: r.current, kind: evYield, fault: due})
	}
	return idx, due
}
