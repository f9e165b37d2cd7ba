package sim

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
)

// upgrades reports whether schedule s deploys the target's next version (an upgrade fault).
func upgrades(s faults.Schedule) bool {
	return slices.ContainsFunc(s, func(f faults.Fault) bool {
		info, _ := f.Kind.Info()
		return info.NextVersion
	})
}

// nextVersion returns the Runner of the target's next version (Options.NextVersion): its golden
// run, the next version run from the start, is what an upgrade case is judged against. It is
// built the first time it is needed, and its error kept.
func (rn *Runner) nextVersion() (*Runner, error) {
	rn.nextOnce.Do(func() {
		o := rn.o
		o.Name += " (next version)"
		o.NextVersion = nil
		rn.next, rn.nextErr = NewRunnerContext(rn.ctx, rn.o.NextVersion, o)
		if rn.nextErr != nil {
			rn.nextErr = fmt.Errorf("the next version's golden run: %w", rn.nextErr)
		}
	})
	return rn.next, rn.nextErr
}

// deploy makes every process started from now on in run r the next version's (an upgrade fault
// fired), and remembers the first of them.
func (r *run) deploy() {
	if r.o.NextVersion == nil || r.upgradedAt >= 0 {
		return
	}
	r.newTarget = r.o.NextVersion
	r.upgradedAt = len(r.procs)
}

// DefaultGrace is the grace period of a deploy when Options.Grace is 0: Kubernetes' default
// terminationGracePeriodSeconds.
const DefaultGrace = 30 * time.Second

// NoGrace, as Options.Grace (any negative duration), makes a deploy kill every process at once,
// as SIGKILL does, without asking it to stop first.
const NoGrace time.Duration = -1

// grace returns the grace period of a deploy: Options.Grace, its default, or 0 for none.
func (o *Options) grace() time.Duration {
	switch {
	case o.Grace < 0:
		return 0
	case o.Grace == 0:
		return DefaultGrace
	}
	return o.Grace
}

// grace is the grace period of a deploy under way: the processes it asked to stop, killed if
// still running when the virtual clock reaches until.
type grace struct {
	until time.Time
	procs []*process
	fault faults.Fault
}

// graceful reports whether fault f stops the processes as a deploy does, asking them first and
// killing them only once a grace period has passed (an upgrade with a grace period), rather than
// at once.
func (o *Options) graceful(f *faults.Fault) bool {
	info, _ := f.Kind.Info()
	return info.NextVersion && o.grace() > 0
}

func (r *run) graceful(f *faults.Fault) bool { return r.o.graceful(f) }

// stops reports whether fault f stops the process it fires in at its beat: a crash, but for a
// deploy that gives it a grace period. A nil o is the default Options.
func stops(o *Options, f *faults.Fault) bool {
	if o == nil {
		o = &Options{}
	}
	return isCrash(f.Kind) && !o.graceful(f)
}

// terminate applies a deploy with a grace period (fault f, an upgrade): every process started
// from now on runs the next version, and every live process is asked to stop, as SIGTERM asks:
// through the functions it registered with envlink.Ext.AtStop (adapters/process sends its
// command SIGTERM), else by the cancellation of its context, with harness.ErrTerminated as the
// cause. Each goes on, its beats counted, until it ends on its own (stopped) or the grace period
// ends (graceOver).
func (r *run) terminate(f faults.Fault) {
	r.deploy()
	g := grace{until: r.clock.Now().Add(r.o.grace()), fault: f}
	var ids []string
	signalled, cancelled := 0, 0
	for _, p := range r.live() {
		if p.stopping {
			continue // asked by an earlier deploy, whose grace period it has
		}
		p.stopping = true
		g.procs = append(g.procs, p)
		ids = append(ids, strconv.Itoa(p.id))
		if len(p.atStop) == 0 {
			p.cancel(harness.ErrTerminated)
			cancelled++
			continue
		}
		signalled++
		for _, fn := range p.atStop {
			fn()
		}
	}
	if len(g.procs) == 0 {
		return // every process was asked already, by an earlier deploy
	}
	r.graces = append(r.graces, g)
	how := "SIGTERM; in process, its context cancelled"
	switch {
	case cancelled == 0:
		how = "SIGTERM"
	case signalled == 0:
		how = "its context cancelled, as by SIGTERM"
	}
	r.note(r.nbeats()-1, fmt.Sprintf("%s: process %s asked to stop (%s), killed if still running in %s",
		f, strings.Join(ids, ", "), how, r.o.grace()))
}

// stopped restarts the worker of process p, which ended on its own after a deploy had asked it
// to stop: its next process runs the next version, as after a kill. How it ended (its result,
// error or exit status) is in the note of its last beat; it is neither crashed nor failed.
func (r *run) stopped(p *process) (ending, bool) {
	p.worker.stalled = false
	return r.restart(p.worker, r.o.RestartDelay, true)
}

// leaveGrace forgets process p, which has ended, in the grace periods under way, and those left
// with no process.
func (r *run) leaveGrace(p *process) {
	for i := range r.graces {
		r.graces[i].procs = slices.DeleteFunc(r.graces[i].procs, func(q *process) bool { return q == p })
	}
	r.graces = slices.DeleteFunc(r.graces, func(g grace) bool { return len(g.procs) == 0 })
}

// graceOver kills the processes whose grace period has ended and are still running, as SIGKILL
// does, and restarts their workers with the next version. It returns the run's ending and true
// if the restarts are used up.
func (r *run) graceOver() (ending, bool) {
	now := r.clock.Now()
	for len(r.graces) > 0 && !r.graces[0].until.After(now) {
		g := r.graces[0]
		r.graces = r.graces[1:]
		for _, p := range g.procs { // every one still running: end forgets those that ended
			p.crashed = true
			r.end(p, fmt.Sprintf("process %d killed (SIGKILL): still running at the end of the %s grace period of %s", p.id, r.o.grace(), g.fault))
		}
		for _, p := range g.procs {
			p.worker.stalled = false
			if x, stop := r.restart(p.worker, r.o.RestartDelay, true); stop {
				return x, true
			}
		}
	}
	return ending{}, false
}
