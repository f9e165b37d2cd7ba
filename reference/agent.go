package reference

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"syscall"
	"time"

	"github.com/chaoskit/chaoskit/harness"
	"github.com/spf13/afero"
)

// Agent is the reference checkpointing agent, or one of its variants. It implements
// harness.Target, harness.Stater and harness.Tooler.
type Agent struct {
	Variant Variant
	Task    Task
	args    []json.RawMessage // each step's arguments, encoded once
	tools   []harness.Tool
	seams
}

// seams are the places where the agent's behaviour could go wrong. New sets each to the
// reference's choice, then lets the variant change one.
type seams struct {
	// wrapEnv gives a process what it touches outside its memory (its disk, its tools, its
	// lease): its Env, as it is.
	wrapEnv func(env) env
	// store keeps the run durable: a write-ahead log with a checksum per record, and its
	// snapshot.
	store store
	// intentFor says which tool calls need an intent recorded, and an idempotency key, before
	// they are made: every call that may change something.
	intentFor func(harness.Contract) bool
	// key gives the idempotency key of step i's call: pending is the step's pending intent when
	// the call reconciles it, nil for a new intent. The reference's is stableKey.
	key func(p *proc, i int, pending *Entry) string
	// idle is the set of phases the watchdog counts as idle: only waiting on the model.
	idle phase
	// settle makes durable, as recovery starts, the log it read and will append to (see
	// recover); the reference's fsyncs it.
	settle func(wal afero.File) error
}

// referenceSeams returns the reference's choices.
func referenceSeams() seams {
	return seams{
		wrapEnv:   func(e env) env { return e },
		store:     logStore{checksums: true},
		intentFor: func(c harness.Contract) bool { return c != harness.ReadOnly },
		key:       stableKey,
		idle:      phaseAwaitingLLM,
		settle:    func(wal afero.File) error { return wal.Sync() },
	}
}

// New returns the agent of variant v (Correct for the reference itself) doing task t. It panics
// on an unknown variant.
func New(v Variant, t Task) *Agent {
	info, ok := v.Info()
	if !ok {
		panic(fmt.Sprintf("reference: unknown variant %q", v))
	}
	if len(t.Steps) == 0 {
		panic("reference: a Task needs at least one step")
	}
	a := &Agent{Variant: v, Task: t, tools: tools(t.Reject), seams: referenceSeams()}
	if info.inject != nil {
		info.inject(&a.seams)
	}
	for _, s := range t.Steps {
		b, err := json.Marshal(s.Args)
		if err != nil {
			panic(fmt.Sprintf("reference: step %s: arguments cannot be encoded: %v", s.Name, err))
		}
		a.args = append(a.args, b)
	}
	return a
}

// Name returns "reference" for the correct agent and "reference/VARIANT" for a variant.
func (a *Agent) Name() string {
	if a.Variant == Correct {
		return "reference"
	}
	return "reference/" + string(a.Variant)
}

// Tools declares the tools the tasks call.
func (a *Agent) Tools() []harness.Tool { return a.tools }

func (a *Agent) contract(tool string) harness.Contract {
	for _, t := range a.tools {
		if t.Name == tool {
			return t.Contract
		}
	}
	return 0
}

// ErrCorrupt is returned when the log is damaged in its middle: sound, committed records follow
// a damaged one. Nothing after the damage can be trusted and nothing before it is the whole
// story, so the agent stops rather than redo committed work (whose idempotency keys the tools
// may have forgotten) or drop it silently.
var ErrCorrupt = errors.New("the log is corrupt")

// The ways a session of work, or a turn, ends short of the end of the run.
var (
	errLost     = errors.New("reference: lost the run's lease")
	errWaiting  = errors.New("reference: waiting for a message")
	errHardIdle = errors.New("reference: watchdog: no answer within the hard idle timeout")
	// errNotDone says a tool call certainly did not happen: the step is planned again.
	errNotDone = errors.New("reference: the step did not happen")
)

// phase is where a turn is blocked, after ShanClaw's phase machine: the watchdog reads it.
// Phases are bits, so that a set of them is a phase too.
type phase uint8

const (
	phaseNone        phase = 0
	phaseAwaitingLLM phase = 1 << (iota - 1)
	phaseExecutingTools
)

// env is what the agent uses of its harness.Env: every interaction with the world outside its
// memory (its disk, the clock, its tools, the model, leases, messages) goes through it.
type env interface {
	FS() afero.Fs
	Now() time.Time
	Rand() *rand.Rand
	Process() int
	Mark(label string)
	Sleep(ctx context.Context, d time.Duration) error
	WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc)
	Go(f func(ctx context.Context))
	Call(ctx context.Context, c harness.Call) (harness.Reply, error)
	Lookup(ctx context.Context, tool, ref string) (harness.Reply, bool, error)
	Model(ctx context.Context, c harness.ModelCall) (string, error)
	Await(ctx context.Context, topic string) ([]harness.Message, error)
	Messages(topic string) []harness.Message
	Acquire(ctx context.Context, name string, ttl time.Duration) (harness.Lease, error)
	Renew(ctx context.Context, l harness.Lease, ttl time.Duration) (harness.Lease, error)
	Release(ctx context.Context, l harness.Lease) error
}

// proc is one process of the agent: what it holds in memory until it is crashed.
type proc struct {
	a         *Agent
	env       env
	fs        afero.Fs // env.FS()
	st        State
	wal       afero.File
	sinceSnap int
	lease     harness.Lease
	held      bool
	renewed   time.Time // when the lease was last taken or renewed
	seen      *loaded   // the disk as last read, and the log size it was read at

	// the turn, as the watchdog sees it
	phase      phase
	since      time.Time
	softFired  bool
	cancelTurn context.CancelCauseFunc
}

// Run works on the run until it is over, resuming it from the disk. A worker works only while
// it holds the run's lease; without it, it waits, and takes over once the lease expires. At an
// asynchronous step or an approval it records that it waits, releases the lease, and waits for
// the message like any other worker. On a full disk it lets the run go and waits for space,
// backing off, then takes the run up again from the disk (see waitForSpace).
func (a *Agent) Run(ctx context.Context, e *harness.Env) (any, error) {
	env := a.wrapEnv(e)
	p := &proc{a: a, env: env, fs: env.FS()}
	defer p.drop()
	full := 0 // the waits for space since the disk last had room for a whole session
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		l, err := p.read() // the run's state, as a worker without the lease may read it
		if err != nil {
			return nil, err
		}
		st := l.st
		if st.over() {
			return st.result(), nil
		}
		if st.Awaiting != "" {
			if _, err := env.Await(ctx, st.Awaiting); err != nil {
				return nil, err
			}
		}
		if !p.held {
			if err := p.acquire(ctx); errors.Is(err, harness.ErrLeaseHeld) {
				if err := env.Sleep(ctx, pollEvery); err != nil {
					return nil, err
				}
				continue
			} else if err != nil {
				return nil, err
			}
		}
		switch err := p.work(ctx); {
		case err == nil:
			return p.st.result(), nil
		case errors.Is(err, errLost):
			p.drop()
			full = 0
		case errors.Is(err, errWaiting):
			if err := env.Release(ctx, p.lease); err != nil {
				return nil, err
			}
			p.drop()
			full = 0
		case errors.Is(err, syscall.ENOSPC) && full < fullWaits:
			full++
			if err := p.waitForSpace(ctx, full); err != nil {
				return nil, err
			}
		default:
			return nil, err
		}
	}
}

// waitForSpace waits, the try-th time in a row, for a full disk to have space again. A restart
// would find the disk as full (a full disk is the machine's, not the process's), so failing
// would only crash-loop; and retrying at once would spin. The worker gives the lease up (another
// may take the run meanwhile), sleeps, doubling the pause each time up to fullPauseMax, and
// then takes the run up again from the disk exactly as after a crash: the record that did not
// fit is a damaged tail of the log, which recovery continues past with an epoch record, and a
// pending intent is reconciled by its key. After fullWaits waits it gives up with the error
// (Run returns it): a disk that stays full is not something to wait out for ever.
func (p *proc) waitForSpace(ctx context.Context, try int) error {
	if err := p.env.Release(ctx, p.lease); err != nil {
		return err
	}
	p.drop()
	return p.env.Sleep(ctx, min(fullPause<<(try-1), fullPauseMax))
}

func (s State) result() Result {
	res := Result{RunID: s.RunID, Phase: s.Phase}
	for _, c := range s.Completed {
		res.Outputs = append(res.Outputs, c.Output)
	}
	return res
}

func (p *proc) acquire(ctx context.Context) error {
	l, err := p.env.Acquire(ctx, "run-"+p.a.Task.ID, leaseTTL)
	if err != nil {
		return err
	}
	p.lease, p.held, p.renewed = l, true, p.env.Now()
	return nil
}

// renew extends the lease; a lease that was lost ends the session.
func (p *proc) renew(ctx context.Context) error {
	l, err := p.env.Renew(ctx, p.lease, leaseTTL)
	if err != nil {
		return errLost
	}
	p.lease, p.renewed = l, p.env.Now()
	return nil
}

// drop forgets the lease and closes the log.
func (p *proc) drop() {
	p.held = false
	if p.wal != nil {
		p.wal.Close()
		p.wal = nil
	}
}

// mark declares progress, which only the lease holder may: it first checks that the lease
// still stands, renewing it (a heartbeat) if it is older than the heartbeat interval or has run
// out; a renewal fails if the lease was taken over.
func (p *proc) mark(ctx context.Context, label string) error {
	if now := p.env.Now(); now.Sub(p.renewed) >= heartbeat || !now.Before(p.lease.Expires) {
		if err := p.renew(ctx); err != nil {
			return err
		}
	}
	p.env.Mark(label)
	return nil
}

// work does the run while holding the lease, until it is over, waits, or the lease is lost.
func (p *proc) work(ctx context.Context) error {
	if err := p.recover(); err != nil {
		return err
	}
	if p.st.RunID == "" {
		if err := p.log(record{Type: "start", RunID: "run-" + p.a.Task.ID, Goal: p.a.Task.Goal, Plan: p.a.plan()}); err != nil {
			return err
		}
		if err := p.mark(ctx, "started"); err != nil {
			return err
		}
	} else if plan := p.a.plan(); !p.st.over() && len(plan) > len(p.st.Plan) && slices.Equal(plan[:len(p.st.Plan)], p.st.Plan) {
		// A new version of the agent, deployed mid-run, gained steps: the run takes them on.
		if err := p.log(record{Type: "plan", Plan: plan}); err != nil {
			return err
		}
	}
	for p.st.Cursor < len(p.a.Task.Steps) && !p.st.over() {
		i := p.st.Cursor // the step may commit before it fails (in its snapshot, say)
		if err := p.step(ctx, i); err != nil {
			if errors.Is(err, errLost) || errors.Is(err, errWaiting) {
				return err
			}
			return fmt.Errorf("reference: step %d (%s): %w", i, p.a.Task.Steps[i].Name, err)
		}
	}
	if err := p.finish(ctx); err != nil {
		if errors.Is(err, errLost) {
			return err
		}
		return fmt.Errorf("reference: finishing: %w", err)
	}
	return nil
}

func (a *Agent) plan() []string {
	names := make([]string, len(a.Task.Steps))
	for i, s := range a.Task.Steps {
		names[i] = s.Name
	}
	return names
}

// step does step i. Each attempt is a turn under its own watchdog; a turn the watchdog cut
// short, or a step that did not happen, is planned again.
func (p *proc) step(ctx context.Context, i int) error {
	replan := false
	for tries := 0; ; tries++ {
		err := p.turn(ctx, i, replan)
		if !errors.Is(err, errHardIdle) && !errors.Is(err, errNotDone) || tries == 3 {
			return err
		}
		replan = true
	}
}

// turn does one attempt at step i: the model plans it, the intent is recorded, the tool is
// called, and the outcome is committed, or, for an asynchronous step or an approval, the wait is
// recorded. Each is durable before the next begins, and each resumes from the log.
func (p *proc) turn(ctx context.Context, i int, replan bool) error {
	turn, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	p.cancelTurn, p.softFired = cancel, false
	p.env.Go(p.watchdog(turn))

	s := p.a.Task.Steps[i]
	if p.st.Awaiting != "" { // the message this step waited for has come
		return p.complete(turn, i)
	}
	if p.st.Planned < i || replan {
		msg, err := p.think(turn, i)
		if err != nil {
			return err
		}
		if err := p.log(record{Type: "model", Step: i, Msg: &msg}); err != nil {
			return err
		}
		if err := p.mark(turn, fmt.Sprintf("step %d %s planned", i, s.Name)); err != nil {
			return err
		}
	}
	call := harness.Call{Tool: s.Tool, Args: p.a.args[i]}
	resumed := false
	if p.a.intentFor(p.a.contract(s.Tool)) {
		key, pending, err := p.intend(turn, i, replan)
		if err != nil {
			return err
		}
		call.Key, call.Ref, resumed = key, key, pending
	}
	call.Fence = p.lease.Token // a tool rejects the call if a newer holder has acted
	var reply harness.Reply
	found := false
	if resumed && call.Ref != "" { // the effect may have been applied long before, by a holder now gone
		var err error
		if reply, found, err = p.look(turn, call); err != nil {
			return err
		}
	}
	if !found {
		var err error
		if reply, err = p.act(turn, call); err != nil {
			return err
		}
	}
	if s.Kind != Act {
		if err := p.log(record{Type: "await", Step: i, Topic: reply.Topic, Human: s.Kind == Approval}); err != nil {
			return err
		}
		if err := p.mark(turn, fmt.Sprintf("step %d %s awaiting", i, s.Name)); err != nil {
			return err
		}
		return errWaiting
	}
	return p.commit(turn, i, reply.ID)
}

// complete finishes step i with the message it waited for: the first, for a completion may be
// delivered twice. If it has not come, the holder goes back to waiting without the lease.
func (p *proc) complete(ctx context.Context, i int) error {
	msgs := p.env.Messages(p.st.Awaiting)
	if len(msgs) == 0 {
		return errWaiting
	}
	if p.a.Task.Steps[i].Kind == Approval && msgs[0].Body == "rejected" {
		if err := p.log(record{Type: "reject", Step: i}); err != nil {
			return err
		}
		return p.mark(ctx, fmt.Sprintf("step %d %s rejected", i, p.a.Task.Steps[i].Name))
	}
	return p.commit(ctx, i, msgs[0].Body)
}

// commit records step i's outcome, compacting the transcript when it is time.
func (p *proc) commit(ctx context.Context, i int, output string) error {
	compact := p.a.Task.CompactAfter > 0 && i+1 == p.a.Task.CompactAfter
	if err := p.log(record{Type: "commit", Step: i, Output: output, Compact: compact}); err != nil {
		return err
	}
	if err := p.mark(ctx, fmt.Sprintf("step %d %s committed", i, p.a.Task.Steps[i].Name)); err != nil {
		return err
	}
	every := p.a.Task.SnapshotEvery
	if every <= 0 {
		every = 2
	}
	if p.sinceSnap++; p.sinceSnap >= every {
		return p.snapshot(false)
	}
	return nil
}

// intend returns the idempotency key of step i's call, recording the intent to make the call,
// durable before it is made. A pending intent, whose call a crash or a lost lease left
// unanswered, is not recorded again but reconciled (pending is true): the caller looks the
// effect up by the key, which the call also carries as its reference, and otherwise makes the
// call again under the same key, so the tool applies it once. A step planned again gets a new
// intent.
func (p *proc) intend(ctx context.Context, i int, replan bool) (key string, pending bool, err error) {
	if e := p.st.entry(i); e != nil && e.Status == "pending" && !replan {
		return p.a.key(p, i, e), true, nil
	}
	s := p.a.Task.Steps[i]
	key = p.a.key(p, i, nil)
	if err := p.log(record{Type: "intent", Step: i, Tool: s.Tool, Key: key}); err != nil {
		return "", false, err
	}
	return key, false, p.mark(ctx, fmt.Sprintf("step %d %s intent", i, s.Name))
}

// stableKey returns the idempotency key of a call of step i: for a pending intent, the key it
// was recorded with; for a new one, a key stable per logical step: the run, the step and, for a
// step planned again, how many times it was planned before.
func stableKey(p *proc, i int, pending *Entry) string {
	if pending != nil {
		return pending.Key
	}
	return stepKey(p.st.RunID, i, p.st.revision(i))
}

// stepKey is the key of step i of a run, planned for the rev-th time.
func stepKey(run string, i, rev int) string {
	k := fmt.Sprintf("%s:%d", run, i)
	if rev > 0 {
		k += fmt.Sprintf(":r%d", rev)
	}
	return k
}

// think asks the model to plan step i, recovering from its failures through one dispatch, in
// ShanClaw's order: a hard idle timeout, then a context too long (compact the prompt), then a
// retryable error (back off), else give up (the process fails and is restarted).
func (p *proc) think(ctx context.Context, i int) (Message, error) {
	msg := model(p.a.Task, i)
	compacted, retries := false, 0
	for {
		p.enter(phaseAwaitingLLM)
		_, err := p.env.Model(ctx, harness.ModelCall{Purpose: fmt.Sprintf("plan step %d", i), Reply: msg.Content, Latency: modelLatency})
		p.enter(phaseNone)
		var rl *harness.RateLimitError
		switch {
		case err == nil:
			return msg, nil
		case errors.Is(context.Cause(ctx), errHardIdle):
			return msg, errHardIdle // the watchdog cancelled the call: a new turn asks again
		case errors.Is(context.Cause(ctx), errLost):
			return msg, errLost
		case errors.Is(err, harness.ErrContextLength) && !compacted:
			compacted = true // ask again with a compacted prompt
		case errors.As(err, &rl) && retries < 3:
			retries++
			if err := p.env.Sleep(ctx, rl.RetryAfter); err != nil {
				return msg, err
			}
		case errors.Is(err, harness.ErrModelServer) && retries < 3:
			retries++
			if err := p.env.Sleep(ctx, time.Duration(retries)*time.Second); err != nil {
				return msg, err
			}
		default:
			if c := context.Cause(ctx); c != nil && !errors.Is(c, context.Canceled) {
				return msg, c
			}
			return msg, fmt.Errorf("model: %w", err)
		}
	}
}

// act calls a tool, retrying with the same key what may not have happened: a transient
// failure, a lost reply, a timeout. A fenced call means the lease was lost.
func (p *proc) act(ctx context.Context, call harness.Call) (reply harness.Reply, err error) {
	err = p.retry(ctx, func(tctx context.Context) (err error) {
		reply, err = p.env.Call(tctx, call)
		return err
	})
	return reply, err
}

// look asks the tool whether the effect of a call was applied already, by the call's reference:
// an intent found pending on resuming may be older than the tool's memory of keys, never than
// its memory of references. Failures are retried as act retries them.
func (p *proc) look(ctx context.Context, call harness.Call) (reply harness.Reply, found bool, err error) {
	err = p.retry(ctx, func(tctx context.Context) (err error) {
		reply, found, err = p.env.Lookup(tctx, call.Tool, call.Ref)
		return err
	})
	return reply, found, err
}

// retry runs one request of a tool under the tool deadline, again while it fails in a way that
// says nothing was applied or that it may have been (transient, ambiguous, timed out), up to five
// times with a growing pause. A fenced request means the lease was lost.
func (p *proc) retry(ctx context.Context, request func(ctx context.Context) error) error {
	for try := 1; ; try++ {
		tctx, cancel := p.env.WithTimeout(ctx, toolDeadline)
		p.enter(phaseExecutingTools)
		err := request(tctx)
		p.enter(phaseNone)
		cancel()
		switch {
		case err == nil:
			return nil
		case errors.Is(err, harness.ErrFenced):
			return errLost
		case errors.Is(context.Cause(ctx), errHardIdle):
			return errHardIdle
		case errors.Is(context.Cause(ctx), errLost):
			return errLost
		case errors.Is(err, harness.ErrToolTransient), errors.Is(err, harness.ErrToolAmbiguous), errors.Is(err, context.DeadlineExceeded):
		default:
			return err
		}
		if try == 5 {
			return err
		}
		if err := p.env.Sleep(ctx, time.Duration(try)*time.Second); err != nil {
			return err
		}
	}
}

// enter records the turn's phase for the watchdog.
func (p *proc) enter(ph phase) {
	p.phase, p.since = ph, p.env.Now()
}

// idle reports whether the turn is blocked in a phase that counts as idle.
func (p *proc) idle() bool { return p.phase&p.a.idle != 0 }

// watchdog returns the turn's watchdog, a thread that ticks in virtual time: idle past the soft
// timeout it emits a status, past the hard timeout it cancels the turn; and it renews the lease
// (the heartbeat).
func (p *proc) watchdog(ctx context.Context) func(context.Context) {
	return func(context.Context) {
		for p.env.Sleep(ctx, watchTick) == nil {
			now := p.env.Now()
			if p.idle() {
				idle := now.Sub(p.since)
				if idle >= softTimeout && !p.softFired {
					p.softFired = true
					p.env.Call(ctx, harness.Call{Tool: "emit_status", Args: map[string]string{"status": "idle_soft"}})
				}
				if idle >= hardTimeout {
					p.cancelTurn(errHardIdle)
					return
				}
			}
			if p.held && now.Sub(p.renewed) >= heartbeat {
				if p.renew(ctx) != nil {
					p.cancelTurn(errLost)
					return
				}
			}
		}
	}
}

// finish records that the run is done, if it is not over yet, and makes the final save.
func (p *proc) finish(ctx context.Context) error {
	if p.st.Phase == Running {
		if err := p.log(record{Type: "done"}); err != nil {
			return err
		}
		if err := p.mark(ctx, "done"); err != nil {
			return err
		}
	}
	return p.snapshot(true) // the final save
}

// log makes a record durable, then folds it into the state.
func (p *proc) log(r record) error {
	r.At = p.env.Now().Unix()
	if err := p.a.store.append(p, r); err != nil {
		return err
	}
	return p.st.apply(r)
}

// write writes b to f and fsyncs it.
func (p *proc) write(f afero.File, b []byte) error {
	if _, err := f.Write(b); err != nil {
		return err
	}
	return f.Sync()
}

// syncDir fsyncs a directory, so that the entries created or renamed in it are durable.
func (p *proc) syncDir(name string) error {
	d, err := p.fs.Open(name)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// snapshot saves the state; final marks the save that ends the run.
func (p *proc) snapshot(final bool) error {
	p.sinceSnap = 0
	return p.a.store.snapshot(p, final)
}

// replace atomically replaces the file at path with b, through a temporary file of this
// process's own.
func (p *proc) replace(path string, b []byte) error {
	tmp := fmt.Sprintf("%s.%d.tmp", path, p.env.Process())
	f, err := p.fs.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if err := p.write(f, b); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := p.fs.Rename(tmp, path); err != nil {
		return err
	}
	return p.syncDir(dir)
}

// recover rebuilds the state from the disk and opens the log for appending, as the new lease
// holder. It fsyncs the directories every time, for a process that created them may have died
// before it could, and the log before it appends to it: what it read may be records a killed
// process wrote and never fsynced, still in the page cache, and a power cut could keep its own
// records and lose those it builds on (PostgreSQL fsyncs its data directory as crash recovery
// starts, for the same reason). It writes an epoch record under its lease token first: every record a zombie
// of an older holder appends after it is then ignored, and past a damaged tail the epoch names
// the sound part this holder continues (the log is never cut). A missing or stale snapshot is
// rebuilt from the log.
func (p *proc) recover() error {
	if _, err := p.fs.Stat(dir); err != nil {
		if err := p.fs.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("reference: %w", err)
		}
	}
	if err := p.syncDir("."); err != nil {
		return fmt.Errorf("reference: %w", err)
	}
	l, err := p.read()
	if err != nil {
		return err
	}
	p.st, p.seen = l.st, nil // p.st will change: the cache must not share it
	flag := os.O_WRONLY | os.O_APPEND
	if !l.walExists {
		flag |= os.O_CREATE
	}
	if p.wal, err = p.fs.OpenFile(walPath, flag, 0o644); err != nil {
		return fmt.Errorf("reference: %w", err)
	}
	if err := p.syncDir(dir); err != nil {
		return fmt.Errorf("reference: %w", err)
	}
	if err := p.a.settle(p.wal); err != nil {
		return fmt.Errorf("reference: %w", err)
	}
	if err := p.log(record{Type: "epoch", Base: l.good}); err != nil {
		return fmt.Errorf("reference: %w", err)
	}
	if !l.snapshotOK && p.st.RunID != "" {
		if err := p.snapshot(false); err != nil {
			return fmt.Errorf("reference: rebuilding the snapshot: %w", err)
		}
	}
	return nil
}

// read loads the disk, or returns what it last read if the log is the size it was then: the
// log only grows, and only through lease holders' appends, so a worker polling for the lease
// does not decode the run's state every time it looks. What it returns shares its slices with
// the cache: a caller that will change the state (recover) drops the cache first.
func (p *proc) read() (loaded, error) {
	size := -1
	if fi, err := p.fs.Stat(walPath); err == nil {
		size = int(fi.Size())
	}
	if l := p.seen; l != nil && l.stamp == size {
		return *l, nil
	}
	l, err := p.a.store.load(p.fs)
	l.stamp = size
	if err == nil {
		c := l
		p.seen = &c
	}
	return l, err
}

// State reads the state a restarted agent would recover from fsys, less the message
// timestamps, which legitimately move with restarts. (Leaving them out, rather than ignoring
// them with a go-cmp option, lets identical states skip go-cmp.)
func (a *Agent) State(fsys afero.Fs) (any, error) {
	l, err := a.store.load(fsys)
	for i := range l.st.Meta {
		l.st.Meta[i].At = 0
	}
	return l.st, err
}
