package process

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/internal/envlink"
)

// A process's requests reach chaoskit at once from several threads, subprocesses and
// connections, in an order the operating system decides afresh in every run. So a request is
// never served as it arrives: it waits, submitted, until the command is quiescent (every thread
// of it blocked, nothing owed to it: quiesce.go), and then every request waiting is admitted at
// once, in their canonical order (Key), each run in a thread of the process's own in the
// simulation (harness.Env.Go), so that their latencies overlap in virtual time as an in-process
// harness.Group's calls do. A reply is not sent when its thread has it: it is stashed, and the
// serve loop hands the replies over one at a time, each once the command is quiescent again, in
// the canonical order of their requests (reversed in the counted golden runs: envlink.Ext's
// Reversed). The command therefore runs only while the serve loop waits for it, and what it does
// next is decided by what it was given, not by which of its threads the OS ran first.
//
// The protocol's socket (session.go) is one front door that submits requests; the HTTP front
// doors (a model provider's API, MCP, REST) are others, through Admit (frontdoor.go).

// Key orders the requests admitted at once: by Op, then Name, then Key, then Args, each
// compared as bytes. Two requests whose keys are equal are the same request made twice, and
// which of them is admitted first is not decided (they are told apart only by arrival).
type Key struct {
	// Op is the operation: the protocol's op ("call", "model", "sleep"), or a front door's own
	// ("chat.completions", "tools/call").
	Op string
	// Name is what the request acts on: the tool, the model call's purpose, the topic, the
	// lease's name, the mark's label.
	Name string
	// Key is the request's idempotency key, if it has one.
	Key string
	// Args is the request's canonical encoding (JSON with sorted keys): everything else that
	// tells it apart, without what differs between runs of the same request (its id on the
	// wire, a connection's number).
	Args string
}

// compare orders keys: Op, Name, Key, Args.
func (k Key) compare(o Key) int {
	return cmp.Or(cmp.Compare(k.Op, o.Op), cmp.Compare(k.Name, o.Name), cmp.Compare(k.Key, o.Key), cmp.Compare(k.Args, o.Args))
}

// Do is what an admitted request does, in a thread of the process (ctx is the thread's, done
// when the process ends): the Env calls it stands for, returning its reply.
type Do func(ctx context.Context, env *harness.Env) any

// submission is one request, from its submission to the delivery of its reply.
type submission struct {
	key     Key
	arrival uint64 // ties only
	order   int    // its place among those admitted with it, then in the process
	do      Do
	deliver func(reply any) // run by the serve loop when the reply is handed over
	reply   any
	// gone, if set, becomes true once the caller has given up waiting for the reply (a front
	// door's client that hung up): the command waits for it no more.
	gone *atomic.Bool
}

// admission is the admission of one process's requests.
type admission struct {
	env *harness.Env
	ext envlink.Ext

	mu       sync.Mutex
	pending  []*submission // submitted, not admitted; guarded by mu (front doors submit)
	reads    []*submission // submitted reads (see submitRead); guarded by mu
	arrivals uint64
	closed   bool
	notify   chan struct{} // a request was submitted (capacity 1)

	// The rest is the serve loop's and the request threads', which run one at a time.
	admitted int                  // requests admitted so far
	inflight int                  // admitted, their reply not yet stashed
	running  map[*submission]bool // the ones in flight
	stash    []*submission        // replies not yet delivered
	wake     context.CancelFunc
}

// newAdmission returns the admission of the process env is the Env of.
func newAdmission(env *harness.Env) *admission {
	ext, _ := envlink.Kernel(env).(envlink.Ext)
	return &admission{env: env, ext: ext, notify: make(chan struct{}, 1)}
}

// errNotServed is why a request submitted to a process that has ended is never served.
var errNotServed = errors.New("the process has ended: the request was not served")

// submit queues a request for admission; deliver gets its reply. It reports false if the
// process has ended.
func (a *admission) submit(k Key, do Do, deliver func(reply any)) bool {
	return a.submitFrom(k, do, deliver, nil)
}

// submitFrom is submit for a caller that may give up: gone becomes true when it has.
func (a *admission) submitFrom(k Key, do Do, deliver func(reply any), gone *atomic.Bool) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return false
	}
	a.arrivals++
	a.pending = append(a.pending, &submission{key: k, arrival: a.arrivals, do: do, deliver: deliver, gone: gone})
	select {
	case a.notify <- struct{}{}:
	default:
	}
	return true
}

// submitRead submits a request that only reads what cannot change while the command runs
// (the clock, a topic's messages, the next random number): the serve loop answers it as soon as
// it sees it (answerReads), without waiting for quiescence. It reports false if the process has
// ended.
func (a *admission) submitRead(do Do, deliver func(reply any)) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return false
	}
	a.reads = append(a.reads, &submission{do: do, deliver: deliver})
	select {
	case a.notify <- struct{}{}:
	default:
	}
	return true
}

// answerReads answers the reads submitted, on the serve loop.
func (a *admission) answerReads(ctx context.Context) {
	a.mu.Lock()
	reads := a.reads
	a.reads = nil
	a.mu.Unlock()
	for _, s := range reads {
		s.deliver(s.do(ctx, a.env))
	}
}

// close refuses further submissions and returns those never admitted.
func (a *admission) close() []*submission {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed = true
	p := a.pending
	a.pending = nil
	return p
}

// waiting reports whether requests wait for admission.
func (a *admission) waiting() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.pending) > 0
}

// admitAll admits every request waiting, in canonical order, each in a thread of its own; on
// the serve loop, the command quiescent. It returns how many it admitted.
func (a *admission) admitAll() int {
	a.mu.Lock()
	batch := a.pending
	a.pending = nil
	a.mu.Unlock()
	slices.SortStableFunc(batch, func(x, y *submission) int {
		return cmp.Or(x.key.compare(y.key), cmp.Compare(x.arrival, y.arrival))
	})
	for _, s := range batch {
		s.order = a.admitted
		a.admitted++
		a.inflight++
		if a.running == nil {
			a.running = map[*submission]bool{}
		}
		a.running[s] = true
		a.env.Go(func(ctx context.Context) {
			s.reply = s.do(ctx, a.env)
			a.inflight--
			delete(a.running, s)
			a.stash = append(a.stash, s)
			if a.wake != nil {
				a.wake()
			}
		})
	}
	return len(batch)
}

// awaited reports whether the command waits for a request in flight: one whose caller has not
// given up. A model call that hangs, whose client timed out and went on, is awaited no more.
func (a *admission) awaited() bool {
	for s := range a.running {
		if s.gone == nil || !s.gone.Load() {
			return true
		}
	}
	return false
}

// next returns the reply to deliver first of those stashed (nil if none): the earliest
// admitted, or in the counted golden runs the latest.
func (a *admission) next() *submission {
	if len(a.stash) == 0 {
		return nil
	}
	i := 0
	for j, s := range a.stash {
		if (s.order < a.stash[i].order) != a.ext.Reversed() {
			i = j
		}
	}
	s := a.stash[i]
	a.stash = slices.Delete(a.stash, i, i+1)
	return s
}

// hold waits in the simulation, letting the request threads run, until a reply is stashed or
// the clock reaches until (zero: no deadline), then until everything due at that instant has
// happened. It returns ctx's error if the process ends.
func (a *admission) hold(ctx context.Context, until time.Time) error {
	wctx, cancel := context.WithCancel(ctx)
	a.wake = cancel
	defer func() { a.wake = nil; cancel() }()
	if len(a.stash) == 0 {
		if err := a.ext.Hold(wctx, until); err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
	}
	a.ext.Settle()
	return ctx.Err()
}
