package harness

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/chaoskit/chaoskit/internal/envlink"

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
	k kernel
}

// kernel is what runs an Env: package sim's process, reached through internal/envlink. Its
// methods are Env's.
type kernel interface {
	FS() afero.Fs
	Now() time.Time
	Rand() *rand.Rand
	Process() int
	Worker() int
	AtEnd(f func())
	Mark(label string)
	Sleep(ctx context.Context, d time.Duration) error
	WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc)
	// Spawn is Go, and returns a function that waits for f to return (or ctx to be done).
	Spawn(f func(ctx context.Context)) (wait func(ctx context.Context) error)
	Call(ctx context.Context, c Call) (Reply, error)
	Lookup(ctx context.Context, tool, ref string) (Reply, bool, error)
	Model(ctx context.Context, c ModelCall) (string, error)
	Await(ctx context.Context, topic string) ([]Message, error)
	Messages(topic string) []Message
	ModelCalls() []string
	Acquire(ctx context.Context, name string, ttl time.Duration) (Lease, error)
	Renew(ctx context.Context, l Lease, ttl time.Duration) (Lease, error)
	Release(ctx context.Context, l Lease) error
}

func init() {
	envlink.New = func(k any) any { return &Env{k: k.(kernel)} }
	envlink.Kernel = func(env any) any { return env.(*Env).k }
}

// FS returns the process's filesystem. Every mutating call on it is a beat; reads are not.
func (e *Env) FS() afero.Fs {
	return e.k.FS()
}

// Now returns the virtual time. It moves only when every thread of every worker waits (on
// Sleep, a tool's or the model's latency, Await) and across restarts, by sim.Options.RestartDelay.
func (e *Env) Now() time.Time {
	return e.k.Now()
}

// Rand returns the process's random source. It is seeded from the case's seed and the process
// number: the golden run and the first process of every case draw the same numbers, and a
// restarted process draws new ones, as a real restarted process would.
func (e *Env) Rand() *rand.Rand {
	return e.k.Rand()
}

// Process numbers the process: 0 for the first, then one more per process started, whatever
// its worker.
func (e *Env) Process() int {
	return e.k.Process()
}

// Worker numbers the worker (from 0 to sim.Options.Workers-1) the process belongs to.
func (e *Env) Worker() int {
	return e.k.Worker()
}

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
	e.k.AtEnd(f)
}

// Mark declares a progress point: call it right after a step of the harness has become durable,
// with a label unique to that step ("step 3 committed"). Marks are beats. The oracle measures
// work lost from them: a golden mark made twice is durable work done twice. Mark progress when
// you make it, not when you replay it from the log; with several workers, only while you hold
// the run's lease.
func (e *Env) Mark(label string) {
	e.k.Mark(label)
}

// Sleep waits d of virtual time, or until ctx is done (returning its error). It is a beat.
func (e *Env) Sleep(ctx context.Context, d time.Duration) error {
	return e.k.Sleep(ctx, d)
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
	return e.k.WithTimeout(parent, d)
}

// Go starts f in a new thread of the process (a watchdog, a heartbeat): it runs when the
// process's other threads wait, and dies with the process. ctx is done when the process ends, or
// is asked to stop by a deploy (as Run's: see Target).
// To wait for the threads you start, start them with a Group: a sync.WaitGroup, a channel or an
// errgroup blocks outside the Env, where no other thread of the process runs, and the process
// hangs.
func (e *Env) Go(f func(ctx context.Context)) {
	e.k.Spawn(f)
}

// Group returns a new, empty group of threads of the process, for work done at once and waited
// for, such as several tool calls whose latencies overlap: Env's errgroup.Group.
func (e *Env) Group() *Group { return &Group{e: e} }

// Group is a set of threads of one process, started with Go and waited for with Wait, as an
// errgroup.Group's are, but through the Env, so that waiting lets the threads run.
type Group struct {
	e     *Env
	mu    sync.Mutex
	waits []func(ctx context.Context) error
	err   error // the first error a thread returned
}

// Go starts f in a new thread of the process, as Env.Go does; Wait returns the first error a
// thread of the group returned. A thread of the group may start more.
func (g *Group) Go(f func(ctx context.Context) error) {
	if g.e == nil {
		panic("harness: a Group's Go on a Group not made by Env.Group")
	}
	wait := g.e.k.Spawn(func(ctx context.Context) {
		if err := f(ctx); err != nil {
			g.mu.Lock()
			if g.err == nil {
				g.err = err
			}
			g.mu.Unlock()
		}
	})
	g.mu.Lock()
	g.waits = append(g.waits, wait)
	g.mu.Unlock()
}

// Wait blocks until every thread started with Go has returned, those they started with Go
// included, letting them run, and returns the first error one returned; or, if ctx is done
// before they all have, ctx's error. It is not a beat. Called from a thread of the group, it
// waits for itself, for ever.
func (g *Group) Wait(ctx context.Context) error {
	for i := 0; ; i++ {
		g.mu.Lock()
		if i == len(g.waits) {
			defer g.mu.Unlock()
			return g.err
		}
		wait := g.waits[i]
		g.mu.Unlock()
		if err := wait(ctx); err != nil {
			return err
		}
	}
}

// Call calls a tool. It is two beats: the call leaving the process (a crash here means the
// tool never saw it) and the call applied (a crash here means the effect landed but the reply
// was lost); the tool's latency passes between them. It returns ctx's error, without calling
// the tool, if ctx is done.
func (e *Env) Call(ctx context.Context, c Call) (Reply, error) {
	return e.k.Call(ctx, c)
}

// Lookup asks a tool for the effect applied with the caller's own reference ref (Call.Ref): the
// read-only look-up real APIs offer (charges listed by metadata, an order found by its number),
// which outlives the tool's memory of idempotency keys. found is false if no effect of the tool
// carries ref. It is two beats, like a call, and the tool faults that make a call fail make it
// fail too; it is never an effect.
func (e *Env) Lookup(ctx context.Context, tool, ref string) (reply Reply, found bool, err error) {
	return e.k.Lookup(ctx, tool, ref)
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
	// Alternative, if set, is another answer the model could give to the same request: what
	// it answers when it is asked the same thing again after a model-diverge crash (another
	// amount, another recipient, another tool), as a real model may on resume.
	Alternative string
}

// Model calls the model. It is a beat. Faults can make it answer a rate limit
// (*RateLimitError), a server error (ErrModelServer, or ErrModelUnavailable for a 503), a
// context-length error (ErrContextLength), an answer cut off mid-stream (ErrModelCut), or never
// answer until ctx is done, so give it a deadline with WithTimeout.
func (e *Env) Model(ctx context.Context, c ModelCall) (string, error) {
	return e.k.Model(ctx, c)
}

// Await waits until a message has been posted on topic (an asynchronous tool's completion, a
// human's approval) and returns every message posted there so far, in order; a delivery may
// come twice. It is a beat. It returns ctx's error if ctx is done first.
func (e *Env) Await(ctx context.Context, topic string) ([]Message, error) {
	return e.k.Await(ctx, topic)
}

// Messages returns the messages posted on topic so far, without waiting. It is a read, not a
// beat.
func (e *Env) Messages(topic string) []Message {
	return e.k.Messages(topic)
}

// ModelCalls returns the distinct purposes of the model calls answered so far in the run, by
// every process, in the order each was first answered. It is a read, not a beat: for an adapter
// that serves a model API to know which requests the run already asked (a cassette's answers in
// order keep their places across restarts).
func (e *Env) ModelCalls() []string {
	return e.k.ModelCalls()
}

// Acquire takes the named lease for ttl of virtual time, if no other worker holds it or it has
// expired (a sweeper reaping an expired lease is just this). A restarted worker may take back its
// own lease at once: its old process is dead. Each acquisition gets a new, larger token. It is a
// beat. It fails with ErrLeaseHeld.
func (e *Env) Acquire(ctx context.Context, name string, ttl time.Duration) (Lease, error) {
	return e.k.Acquire(ctx, name, ttl)
}

// Renew extends a lease by ttl from now. It is a beat. It fails with ErrLeaseLost if the lease
// has expired or been taken over: its holder must stop acting for it.
func (e *Env) Renew(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	return e.k.Renew(ctx, l, ttl)
}

// Release gives a lease up. It is a beat.
func (e *Env) Release(ctx context.Context, l Lease) error {
	return e.k.Release(ctx, l)
}
