package campaign

import (
	"slices"
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
)

// maxShrinkRuns bounds the cases one shrink may run.
const maxShrinkRuns = 300

// Shrink returns the smallest schedule it finds that still breaks the first property c broke,
// running candidates against rn: fewer faults first, then earlier beats, then simpler
// arguments (no byte budget, the default torn mode, a plain power loss rather than one keeping
// a subset, any worker, shorter lease pauses of Options.LeasePauses, a full disk that has space
// again sooner). It is deterministic, and runs at most 300 cases.
//
// Every fault of the schedule it returns fires, but for a fleet fault. A fault fires only at a
// beat that admits its kind (sim.Beat.Admits), so a fault is moved only to an earlier beat of the
// failing run that admits it; and the faults of a schedule that did not fire (a fault of a random
// schedule past the run's end, or one a change earlier in the run left at another sort of beat)
// are dropped from it, since its run is the same without them: the schedule returned is never
// another name for a smaller one. A fleet fault that did not fire is kept unless a candidate
// without it fails too: it made the case run a fleet's workers, and without it the run is another.
//
// Simpler means a schedule that explains the failure with less: fewer faults, earlier, and
// milder. A diskfull without a duration is shorter to write but is not milder: the disk then
// stays full to the end of the run, which by itself keeps any harness that must write from
// completing or from getting back to where it was. So shrinking shortens a diskfull's
// duration (to 1s at the shortest), and drops it only when the property it keeps broken is not
// one that a disk full for good breaks by itself: never for completes or bounded-work-lost,
// while a duplicated effect or a wrong state that a harness reaches even on a disk that never
// has space again is a simpler story without the duration.
func Shrink(rn *sim.Runner, c *sim.Case, o Options) faults.Schedule {
	o = o.withDefaults()
	if len(c.Verdict.Violations) == 0 {
		return c.Schedule
	}
	property := c.Verdict.Violations[0].Property
	best, beats := fired(c.Schedule, c.Unfired), c.Beats
	forGood := !livenessProperty[property]
	runs := 0
	for improved := true; improved && runs < maxShrinkRuns; {
		improved = false
		for _, cand := range shrinkCandidates(best, beats, o.LeasePauses, forGood) {
			if runs++; runs > maxShrinkRuns || rn.Err() != nil {
				break
			}
			if fc := rn.RunOnce(cand); fc.Breaks(property) {
				best, beats, improved = fired(cand, fc.Unfired), fc.Beats, true
				break
			}
		}
	}
	return best
}

// fired returns s without the faults of unfired, but for a fleet fault: even unfired, it is what
// makes the case run a fleet's workers, so that without it the run is another (a candidate
// without it is tried, and run, as any other).
func fired(s faults.Schedule, unfired []faults.Fault) faults.Schedule {
	return slices.DeleteFunc(slices.Clone(s), func(f faults.Fault) bool { return slices.Contains(unfired, f) && !isFleet(f.Kind) })
}

// livenessProperty holds the properties a disk full to the end of a run breaks by itself.
var livenessProperty = map[string]bool{oracle.Completes: true, oracle.BoundedWorkLost: true}

// shortestFull is the shortest time shrinking lets a disk stay full.
const shortestFull = time.Second

// shrinkCandidates lists simpler variants of s, simplest first, given the beats of its run; pauses
// are the shorter lease pauses to try; forGood lets a full disk lose its duration.
func shrinkCandidates(s faults.Schedule, beats []sim.Beat, pauses []time.Duration, forGood bool) []faults.Schedule {
	var out []faults.Schedule
	if len(s) > 1 {
		for i := range s {
			out = append(out, slices.Delete(slices.Clone(s), i, i+1))
		}
	}
	with := func(i int, change func(f *faults.Fault)) {
		c := slices.Clone(s)
		change(&c[i])
		out = append(out, c)
	}
	for i, f := range s {
		lo := 0
		if i > 0 {
			lo = s[i-1].Beat + 1
		}
		// The run is the same up to f's beat with f earlier: the earlier beats that admit it, the
		// first, the middle one and the last.
		var at []int
		for b := lo; b < min(f.Beat, len(beats)); b++ {
			if beats[b].Admits(f.Kind) {
				at = append(at, b)
			}
		}
		if len(at) > 0 {
			for _, b := range slices.Compact([]int{at[0], at[len(at)/2], at[len(at)-1]}) {
				with(i, func(f *faults.Fault) { f.Beat = b })
			}
		}
		if f.Bytes > 0 {
			with(i, func(f *faults.Fault) { f.Bytes = 0 })
		}
		if f.Mode != "" {
			with(i, func(f *faults.Fault) { f.Mode = "" })
		}
		if f.Worker != 0 {
			with(i, func(f *faults.Fault) { f.Worker = 0 })
		}
		if info, _ := f.Kind.Info(); info.Arg == faults.DurationArg {
			for _, d := range pauses {
				if d < f.Dur {
					with(i, func(f *faults.Fault) { f.Dur = d })
				}
			}
		}
		if info, _ := f.Kind.Info(); info.Lasts && f.Dur > 0 {
			if forGood {
				with(i, func(f *faults.Fault) { f.Dur = 0 })
			}
			shorter := []time.Duration{shortestFull}
			if half := (f.Dur / 2).Truncate(time.Second); half > shortestFull {
				shorter = append(shorter, half)
			}
			for _, d := range shorter {
				if d < f.Dur {
					with(i, func(f *faults.Fault) { f.Dur = d })
				}
			}
		}
	}
	return out
}
