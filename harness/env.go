package harness

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/spf13/afero"
)

// Env is everything a target may touch outside its own memory, for one process: the
// filesystem, the clock, the world, a random source, and progress marks. Each restart gets a
// new Env over the same disk and world.
type Env struct {
	r       *run
	attempt int
	bare    bool // outside any campaign: no beats, no faults
	fs      afero.Fs
	rng     *rand.Rand
	dead    atomic.Bool
	stop    chan struct{} // closed when the process is crashed
	once    sync.Once
}

// BareEnv returns an Env outside any campaign, for running a target bare: FS is fsys itself,
// with no beats and no faults; tools apply at once; marks do nothing; the clock stands still at
// faults.Epoch. It serves to measure a target without chaoskit, or to smoke-test an adapter.
func BareEnv(fsys afero.Fs, tools []Tool, seed uint64) *Env {
	r := &run{world: newWorld(tools), clock: faults.NewClock(faults.Epoch)}
	return &Env{r: r, bare: true, fs: fsys, rng: rand.New(rand.NewPCG(seed, 0)), stop: make(chan struct{})}
}

// FS returns the process's filesystem. Every mutating call on it is a beat, at which a fault
// may fire; reads are not beats.
func (e *Env) FS() afero.Fs {
	e.alive()
	return e.fs
}

// Now returns the virtual time. It does not move while the target works; it moves across
// restarts (by Options.RestartDelay) and when the target waits.
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

// Attempt numbers the process: 0 for the first, one more per restart.
func (e *Env) Attempt() int { return e.attempt }

// Mark declares a progress point: call it right after a step of the harness has become durable,
// with a label unique to that step ("step 3 committed"). Marks are beats. The oracle measures
// work lost from them: a restart may redo the work since the last mark before the crash, no
// more. Mark progress when you make it, not when you replay it from the log.
func (e *Env) Mark(label string) {
	e.beat(Beat{Kind: BeatMark, Name: label})
}

// Call calls a tool. It is two beats: the call leaving the process (a crash here means the
// tool never saw it) and the call applied (a crash here means the effect landed but the reply
// was lost). It returns ctx's error, without calling the tool, if ctx is done.
func (e *Env) Call(ctx context.Context, c Call) (Reply, error) {
	e.alive()
	if err := ctx.Err(); err != nil {
		return Reply{}, err
	}
	e.r.world.tool(c.Tool) // an undeclared tool panics here, not under the run's lock
	id := identity(c)
	if e.bare {
		return e.r.world.apply(c, id, 0, 0), nil
	}
	idx, _ := e.beat(Beat{Kind: BeatToolSent, Name: c.Tool, Key: c.Key})
	e.r.mu.Lock()
	reply := e.r.world.apply(c, id, idx, e.attempt)
	e.r.mu.Unlock()
	e.beat(Beat{Kind: BeatToolApplied, Name: c.Tool, Key: c.Key})
	return reply, nil
}

// injector is the Env's side of the fault layer: every mutating filesystem operation is a beat.
type injector struct{ e *Env }

func (i injector) Inject(op faults.Op) *faults.Fault {
	_, f := i.e.beat(Beat{Kind: BeatFS, Op: op})
	return f
}

// alive stops the calling goroutine if its process has been crashed.
func (e *Env) alive() {
	if e.dead.Load() {
		runtime.Goexit()
	}
}

// beat records a beat and fires the fault due at it, if any. A crash does not return.
func (e *Env) beat(b Beat) (int, *faults.Fault) {
	if e.bare {
		return 0, nil
	}
	e.alive()
	r := e.r
	b.Attempt = e.attempt
	r.mu.Lock()
	idx := len(r.beats)
	r.beats = append(r.beats, b)
	if r.rec != nil {
		r.rec.at(r)
	}
	if idx >= r.maxBeats {
		r.overBudget = true
		r.mu.Unlock()
		e.exit()
	}
	var due *faults.Fault
	for i := range r.sched {
		if r.fired[i] < 0 && r.sched[i].Beat <= idx {
			info, _ := r.sched[i].Kind.Info()
			if b.in(info.On) {
				r.fired[i] = idx
				r.beats[idx].Fault = i + 1
				due = &r.sched[i]
				break
			}
		}
	}
	crash := false
	if due != nil {
		info, _ := due.Kind.Info()
		if crash = info.Crash; crash {
			r.crash = due
		}
	}
	r.mu.Unlock()
	if crash {
		e.exit()
	}
	return idx, due
}

// exit ends the process: it marks the Env dead, tells the runner, and stops the goroutine.
func (e *Env) exit() {
	e.dead.Store(true)
	e.once.Do(func() { close(e.stop) })
	runtime.Goexit()
}
