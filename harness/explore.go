package harness

import (
	"context"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"golang.org/x/sync/errgroup"
)

// Schedules returns the schedules of the runner's campaign, in the order they run.
//
// In Exhaustive mode that is one case per fault kind per golden beat at which the kind can fire:
// kill, power and corrupt at every beat; torn at every beat where a power loss would find an
// un-fsynced write to tear, once per mode that tears it differently from a plain power loss;
// diskfull at every write, with room for half of it; fsyncfail at every fsync. In Random mode it
// is Options.Cases distinct schedules of up to Options.MaxFaults faults each, drawn from the
// seed, whose beats reach half again past the golden run so that faults land in recoveries.
func (rn *Runner) Schedules() []faults.Schedule {
	if rn.o.Mode == Random {
		return rn.randomSchedules()
	}
	var out []faults.Schedule
	for _, kind := range rn.o.Faults {
		info, _ := kind.Info()
		gold := rn.golden(rn.replicas(faults.Schedule{{Kind: kind}}))
		if gold.err != nil {
			continue
		}
		g := gold.r
		for k, b := range g.beats {
			if !b.in(info.On) {
				continue
			}
			f := faults.Fault{Kind: kind, Beat: k}
			switch kind {
			case faults.Lease:
				for _, d := range rn.o.LeasePauses {
					f.Dur = d
					out = append(out, faults.Schedule{f})
				}
				continue
			case faults.Torn:
				disk := g.disk.Replay(g.rec.cursors[k].disk, faults.DiskOptions{})
				for _, mode := range info.Modes {
					if disk.Tearable(mode) {
						f.Mode = mode
						if mode == info.Modes[0] {
							f.Mode = ""
						}
						out = append(out, faults.Schedule{f})
					}
				}
				continue
			case faults.DiskFull:
				f.Bytes = int64(b.Op.Len / 2)
			}
			out = append(out, faults.Schedule{f})
		}
	}
	if n := rn.o.Cases; n > 0 && len(out) > n {
		sample := make([]faults.Schedule, n) // evenly, so that every kind keeps its share
		for i := range sample {
			sample[i] = out[i*len(out)/n]
		}
		out = sample
	}
	return out
}

// randomSchedules draws Options.Cases distinct schedules from the seed.
func (rn *Runner) randomSchedules() []faults.Schedule {
	rng := rand.New(rand.NewPCG(rn.o.Seed, 0x72616e646f6d))
	span := rn.GoldenBeats() + rn.GoldenBeats()/2 + 1
	seen := map[string]bool{}
	var out []faults.Schedule
	for tries := 0; len(out) < rn.o.Cases && tries < 100*rn.o.Cases; tries++ {
		n := 1 + rng.IntN(rn.o.MaxFaults)
		beats := map[int]bool{}
		for len(beats) < min(n, span) {
			beats[rng.IntN(span)] = true
		}
		var s faults.Schedule
		for _, b := range slices.Sorted(maps.Keys(beats)) {
			s = append(s, rn.randomFault(rng, b))
		}
		if key := s.String(); !seen[key] {
			seen[key] = true
			out = append(out, s)
		}
	}
	return out
}

// randomFault draws a fault of one of the campaign's kinds at beat b.
func (rn *Runner) randomFault(rng *rand.Rand, b int) faults.Fault {
	f := faults.Fault{Kind: rn.o.Faults[rng.IntN(len(rn.o.Faults))], Beat: b}
	info, _ := f.Kind.Info()
	switch info.Arg {
	case faults.BytesArg:
		f.Bytes = int64(rng.IntN(1024))
	case faults.ModeArg:
		if m := rng.IntN(len(info.Modes)); m > 0 {
			f.Mode = info.Modes[m]
		}
	case faults.DurationArg:
		f.Dur = rn.o.LeasePauses[rng.IntN(len(rn.o.LeasePauses))]
	}
	return f
}

// Explore runs every schedule of the campaign, Options.Workers at a time, and returns the
// cases in schedule order. In Random mode each failure is shrunk. It stops early, returning the
// cases finished so far, when ctx is done.
func (rn *Runner) Explore(ctx context.Context) []*Case {
	return rn.RunAll(ctx, rn.Schedules())
}

// RunAll runs the given schedules like Explore. Cases not run because ctx was done are nil.
func (rn *Runner) RunAll(ctx context.Context, scheds []faults.Schedule) []*Case {
	cases := make([]*Case, len(scheds))
	var mu sync.Mutex
	done, failed := 0, 0
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(rn.o.Workers)
	for i, s := range scheds {
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error {
			if ctx.Err() != nil {
				return nil
			}
			c := rn.Run(s)
			if c.Failed() && rn.o.Mode == Random && !rn.o.NoShrink {
				c.Shrunk = rn.Shrink(c)
			}
			mu.Lock()
			defer mu.Unlock()
			cases[i] = c
			done++
			if c.Failed() {
				failed++
			}
			if rn.o.OnCase != nil {
				rn.o.OnCase(c)
			}
			if rn.o.Progress != nil {
				rn.o.Progress(done, len(scheds), failed)
			}
			return nil
		})
	}
	g.Wait()
	return cases
}

// maxShrinkRuns bounds the cases one shrink may run.
const maxShrinkRuns = 300

// Shrink returns the smallest schedule it finds that still breaks the first property c broke:
// fewer faults first, then earlier beats, then simpler arguments. It is deterministic.
func (rn *Runner) Shrink(c *Case) faults.Schedule {
	if len(c.Verdict.Violations) == 0 {
		return c.Schedule
	}
	property := c.Verdict.Violations[0].Property
	fails := func(s faults.Schedule) bool { return rn.Run(s).Breaks(property) }
	best := slices.Clone(c.Schedule)
	runs := 0
	for improved := true; improved && runs < maxShrinkRuns; {
		improved = false
		for _, cand := range shrinkCandidates(best, rn.o.LeasePauses) {
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
	for i, f := range s {
		lo := 0
		if i > 0 {
			lo = s[i-1].Beat + 1
		}
		for _, b := range []int{lo, (lo + f.Beat) / 2, f.Beat - 1} {
			if b >= lo && b < f.Beat {
				c := slices.Clone(s)
				c[i].Beat = b
				out = append(out, c)
			}
		}
		if f.Bytes > 0 {
			c := slices.Clone(s)
			c[i].Bytes = 0
			out = append(out, c)
		}
		if f.Mode != "" {
			c := slices.Clone(s)
			c[i].Mode = ""
			out = append(out, c)
		}
		if f.Worker != 0 {
			c := slices.Clone(s)
			c[i].Worker = 0
			out = append(out, c)
		}
		for _, d := range pauses {
			if d < f.Dur {
				c := slices.Clone(s)
				c[i].Dur = d
				out = append(out, c)
			}
		}
	}
	return out
}
