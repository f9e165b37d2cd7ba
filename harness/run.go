package harness

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/spf13/afero"
)

// run is one execution of a target under a schedule: its processes share the disk, the world,
// the clock and the beat counter.
type run struct {
	target Target
	o      *Options
	sched  faults.Schedule
	fired  []int // the beat each fault fired at, or -1
	disk   *faults.Disk
	world  *World
	clock  *faults.Clock
	rec    *recorder // set while recording a golden run

	mu         sync.Mutex
	beats      []Beat
	notes      map[int]string // what happened at a beat: what a crash did, how a process ended
	attempts   []oracle.Attempt
	crash      *faults.Fault // set when the current process is crashed
	overBudget bool
	maxBeats   int // beats after which a run counts as never ending
}

// cursor is where a golden run stood just before a beat: enough to rebuild its disk, world and
// clock at that beat without running it again.
type cursor struct {
	disk, calls int
	now         time.Time
}

type recorder struct{ cursors []cursor }

func (rc *recorder) at(r *run) {
	rc.cursors = append(rc.cursors, cursor{r.disk.LogLen(), len(r.world.calls), r.clock.Now()})
}

// ending is how one process ended.
type ending struct {
	result   any
	err      error
	panicked string
	crash    *faults.Fault
	hung     string
	over     bool
}

func (x ending) String() string {
	switch {
	case x.hung != "":
		return x.hung
	case x.over:
		return "no end in sight"
	case x.crash != nil:
		return "crashed by " + x.crash.String()
	case x.panicked != "":
		return "panicked: " + firstLine(x.panicked)
	case x.err != nil:
		return "failed: " + x.err.Error()
	}
	return "completed"
}

// panicSite returns " (at func file:line)" for the frame that panicked, from a stack trace:
// the first frame outside the runtime and the harness. It leaves out goroutine numbers, paths and
// offsets, so that reports stay the same from run to run.
func panicSite(stack []byte) string {
	lines := strings.Split(string(stack), "\n")
	for i := 1; i+1 < len(lines); i += 2 {
		fn := lines[i]
		if strings.HasPrefix(fn, "runtime") || strings.HasPrefix(fn, "panic(") || strings.HasPrefix(fn, "github.com/chaoskit/chaoskit/harness.") {
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

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func newRun(t Target, o *Options, tools []Tool, s faults.Schedule, maxBeats int, goldenBeats int) *run {
	r := &run{
		beats:    make([]Beat, 0, goldenBeats+goldenBeats/2),
		target:   t,
		o:        o,
		sched:    s,
		fired:    make([]int, len(s)),
		clock:    faults.NewClock(faults.Epoch),
		notes:    map[int]string{},
		maxBeats: maxBeats,
	}
	r.disk = faults.NewDisk(faults.DiskOptions{Now: r.clock.Now, Sector: o.Sector})
	r.world = newWorld(tools)
	for i := range r.fired {
		r.fired[i] = -1
	}
	return r
}

// process runs one process of the target to its end.
func (r *run) process(attempt int) ending {
	env := &Env{r: r, attempt: attempt, stop: make(chan struct{}),
		rng: rand.New(rand.NewPCG(r.o.Seed, uint64(attempt)))}
	env.fs = faults.New(r.disk, injector{env})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var (
		result   any
		err      error
		panicked string
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if p := recover(); p != nil {
				panicked = fmt.Sprintf("%v%s", p, panicSite(debug.Stack()))
			}
		}()
		result, err = r.target.Run(ctx, env)
	}()

	// Wait for the process to end. It is hung if it goes a whole Timeout without a beat, or
	// does not stop within a Timeout of being crashed from another of its goroutines.
	tick := time.NewTicker(r.o.Timeout)
	defer tick.Stop()
	var x ending
	stop, seen, ticksSinceCrash := env.stop, -1, 0
wait:
	for {
		select {
		case <-done:
			break wait
		case <-stop:
			stop = nil
			cancel() // let the rest of the crashed process see it and return
		case <-tick.C:
			r.mu.Lock()
			n := len(r.beats)
			r.mu.Unlock()
			switch {
			case stop == nil:
				if ticksSinceCrash++; ticksSinceCrash > 1 {
					x.hung = fmt.Sprintf("process %d did not stop within %s of being crashed", attempt, r.o.Timeout)
					break wait
				}
			case n == seen:
				x.hung = fmt.Sprintf("process %d hung: no beat for %s (wall clock)", attempt, r.o.Timeout)
				break wait
			}
			seen = n
		}
	}
	env.dead.Store(true)
	if x.hung != "" {
		return x
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	x.crash, r.crash = r.crash, nil
	x.over = r.overBudget
	if x.crash == nil && !x.over {
		x.result, x.err, x.panicked = result, err, panicked
	}
	return x
}

// pending reports whether a scheduled fault has yet to fire.
func (r *run) pending() bool {
	return slices.Contains(r.fired, -1)
}

// firstFault returns the first beat at or after start at which a fault fired, or -1.
func (r *run) firstFault(start int) int {
	first := -1
	for _, b := range r.fired {
		if b >= start && (first < 0 || b < first) {
			first = b
		}
	}
	return first
}

// crashRand returns the random source for the crash at beat: a function of the seed and the
// beat only, so that a derived crash state equals a re-run one.
func (r *run) crashRand(beat int) *rand.Rand {
	return rand.New(rand.NewPCG(r.o.Seed^0x63_68_61_6f_73_6b_69_74, uint64(beat)))
}

// processes runs processes from attempt on until the run completes, stops for good, or
// exhausts its restarts, and returns how the last one ended.
func (r *run) processes(attempt int) ending {
	for ; ; attempt++ {
		start := len(r.beats)
		x := r.process(attempt)
		if r.ended(attempt, start, &x) {
			return x
		}
	}
}

// ended does the bookkeeping after a process that started at beat start has ended: it records
// the process, applies its crash to the disk, and says whether the run is over. A process that
// failed or panicked is restarted, as a supervisor would, unless it failed on its own with no
// fault left to fire, when restarting cannot help.
func (r *run) ended(attempt, start int, x *ending) (over bool) {
	end := len(r.beats)
	r.attempts = append(r.attempts, oracle.Attempt{Start: start, End: end, Crashed: x.crash != nil, FirstFault: r.firstFault(start)})
	if end > start {
		r.note(end-1, fmt.Sprintf("process %d %s", attempt, x))
	}
	switch {
	case x.hung != "", x.over:
		return true
	case x.crash != nil:
		r.note(end-1, r.disk.Crash(*x.crash, r.crashRand(end-1)))
		r.clock.Advance(r.o.RestartDelay)
	case x.err == nil && x.panicked == "":
		return true
	case r.firstFault(start) < 0 && !r.pending():
		return true
	}
	if len(r.attempts) > r.o.MaxRestarts {
		x.err = fmt.Errorf("gave up after %d restarts; the last process %s", r.o.MaxRestarts, x)
		x.crash, x.panicked = nil, ""
		return true
	}
	return false
}

func (r *run) note(beat int, s string) {
	if old := r.notes[beat]; old != "" {
		s = old + "; " + s
	}
	r.notes[beat] = s
}

// observe turns a finished run into what the oracle reads.
func (r *run) observe(x ending, stater Stater, trace bool) *oracle.Observation {
	obs := &oracle.Observation{
		Beats:    len(r.beats),
		Attempts: r.attempts,
		Effects:  r.world.effects,
	}
	for i, b := range r.beats {
		if b.Kind == BeatMark && (b.Fault == 0 || !isCrash(r.sched[b.Fault-1].Kind)) { // a crash at a mark stops it
			obs.Marks = append(obs.Marks, oracle.Mark{Beat: i, Label: b.Name})
		}
		if trace {
			obs.Trace = append(obs.Trace, b.Label())
		}
	}
	for i, f := range r.sched {
		if f.Kind == faults.Corrupt && r.fired[i] >= 0 {
			obs.Unrecoverable = true
		}
	}
	switch {
	case x.hung != "":
		obs.Undecided = x.hung
		return obs
	case x.over:
		obs.Err = fmt.Sprintf("no end in sight: %d beats without completing; a livelock, or a restart that never gets anywhere", len(r.beats))
	case x.panicked != "":
		obs.Err = "the last process panicked: " + x.panicked
	case x.err != nil:
		obs.Err = "the last process failed: " + x.err.Error()
	default:
		obs.Completed = true
		obs.Result = x.result
	}
	if stater != nil && obs.Completed {
		obs.State, obs.StateErr = readState(stater, r.disk)
	}
	return obs
}

// readState reads a target's durable state, turning a panic into an error.
func readState(s Stater, fsys afero.Fs) (state any, errText string) {
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

// errGolden wraps every failure of a golden run.
var errGolden = errors.New("golden run")
