package sim

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
)

// A model-diverge fault kills the process, as a kill does, and from then on the model answers
// a request it was asked before the crash with the request's alternative answer
// (harness.ModelCall.Alternative): another amount, recipient or tool, as a real model may when a
// resumed agent asks again what it had asked already. A case that took an alternative cannot be
// held to the golden run alone, for a correct agent that asks again before it acted on the first
// answer rightly follows the second; so it is judged against two references: the golden run,
// and the golden run in which the model gave those requests their alternative from the first
// time they were asked (Runner.alternative). It passes if it holds against either: what it must
// not do is act on both answers.

// answer returns what the model answers call c in this run: its reply, or its alternative where
// the run gives it (see above). The caller holds r.mu.
func (r *run) answer(c harness.ModelCall) string {
	if c.Alternative == "" {
		return c.Reply
	}
	switch {
	case r.altFirst[c.Purpose] || r.diverged[c.Purpose]:
	case r.diverging && slices.Contains(r.world.Models(), c.Purpose):
		if r.diverged == nil {
			r.diverged = map[string]bool{}
		}
		r.diverged[c.Purpose] = true
	default:
		return c.Reply
	}
	return c.Alternative
}

// alternative returns the observation of a golden run of the given number of workers in which
// the model answers each request of purposes with its alternative from the first time it is
// asked: the second reference of a case a model-diverge fault made take those alternatives. It
// is run once per set of purposes.
func (rn *Runner) alternative(workers int, purposes []string) (*oracle.Observation, error) {
	key := fmt.Sprintf("%d\x00%s", workers, strings.Join(purposes, "\x00"))
	rn.mu.Lock()
	defer rn.mu.Unlock()
	if obs, ok := rn.alts[key]; ok {
		return obs, nil
	}
	o := rn.o
	o.Workers = workers
	r := newRun(rn.newTarget, &o, rn.tools, nil, o.MaxBeats)
	r.ctx, r.maxTime = rn.ctx, o.MaxVirtualTime
	r.altFirst = map[string]bool{}
	for _, p := range purposes {
		r.altFirst[p] = true
	}
	x := r.startAll()
	switch {
	case x.stopped != nil:
		return nil, fmt.Errorf("%s: the run with the model's alternative answers: %w: %w", rn.o.Name, ErrInterrupted, x.stopped)
	case x.over || x.late || x.hung != "" || x.err != nil || x.panicked != "":
		// A reference that does not complete judges nothing: the case stays judged by the golden run.
		return nil, fmt.Errorf("%s: the run with the model's alternative answers did not complete: %s", rn.o.Name, x)
	}
	obs := r.observe(x, rn.state(), false)
	rn.alts[key] = obs
	return obs, nil
}

// judgeDiverged judges case c, whose run r took the model's alternatives, against the second
// reference too, when the golden run fails it: it keeps the verdict that passes, if one does.
func (rn *Runner) judgeDiverged(c *Case, r *run, obs *oracle.Observation, oo oracle.Options) {
	if len(r.diverged) == 0 || c.Verdict.Outcome != oracle.Fail {
		return
	}
	purposes := slices.Sorted(maps.Keys(r.diverged))
	alt, err := rn.alternative(len(r.workers), purposes)
	if err != nil {
		if errors.Is(err, ErrInterrupted) {
			c.interrupted = true
		}
		return
	}
	if v := oracle.Check(alt, obs, oo); v.Outcome != oracle.Fail {
		v.Reference = "the run in which the model gives its alternative answer from the start to " + strings.Join(purposes, ", ") +
			" (a model-diverge fault made the case take it): the golden run's own answer was never acted on"
		c.Verdict = v
	}
}

// isDiverge reports whether f is a model-diverge fault, which makes the run diverge once it fires.
func isDiverge(f faults.Fault) bool { return f.Kind == faults.ModelDiverge }
