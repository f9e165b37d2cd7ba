package campaign

import (
	"slices"
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
)

// maxShrinkRuns bounds the cases one shrink may run.
const maxShrinkRuns = 300

// Shrink returns the smallest schedule it finds that still breaks the first property c broke,
// running candidates against rn: fewer faults first, then earlier beats, then simpler
// arguments (no byte budget, the default torn mode, any worker, shorter lease pauses of
// Options.LeasePauses). It is deterministic, and runs at most 300 cases.
func Shrink(rn *harness.Runner, c *harness.Case, o Options) faults.Schedule {
	o = o.withDefaults()
	if len(c.Verdict.Violations) == 0 {
		return c.Schedule
	}
	property := c.Verdict.Violations[0].Property
	fails := func(s faults.Schedule) bool { return rn.RunOnce(s).Breaks(property) }
	best := slices.Clone(c.Schedule)
	runs := 0
	for improved := true; improved && runs < maxShrinkRuns; {
		improved = false
		for _, cand := range shrinkCandidates(best, o.LeasePauses) {
			if runs++; runs > maxShrinkRuns {
				break
			}
			if fails(cand) {
				best, improved = cand, true
				break
			}
		}
	}
	return best
}

// shrinkCandidates lists simpler variants of s, simplest first; pauses are the shorter lease
// pauses to try.
func shrinkCandidates(s faults.Schedule, pauses []time.Duration) []faults.Schedule {
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
		for _, b := range []int{lo, (lo + f.Beat) / 2, f.Beat - 1} {
			if b >= lo && b < f.Beat {
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
		for _, d := range pauses {
			if d < f.Dur {
				with(i, func(f *faults.Fault) { f.Dur = d })
			}
		}
	}
	return out
}
