package campaign

import (
	"context"
	"sync"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"golang.org/x/sync/errgroup"
)

// Explore runs the campaign over rn's target (the schedules of Schedules, or of Options.Shard
// only) and returns its cases in schedule order. In Random mode each failure is shrunk. When
// ctx is done it stops early: cases not run are nil.
func Explore(ctx context.Context, rn *harness.Runner, o Options) ([]*harness.Case, error) {
	scheds, err := Schedules(rn, o)
	if err != nil {
		return nil, err
	}
	var index []int
	if o.Shard.N > 0 {
		var mine []faults.Schedule
		for i, s := range scheds {
			if o.Shard.Holds(i) {
				mine, index = append(mine, s), append(index, i)
			}
		}
		scheds = mine
	}
	cases := Run(ctx, rn, scheds, index, o)
	return cases, nil
}

// Run runs the given schedules against rn's target, Options.Workers at a time, shrinking each
// failure in Random mode, and returns the cases in the order of scheds. index, if not nil,
// gives each schedule's index in its campaign, which OnCase receives; otherwise that is its
// position in scheds. Results do not depend on the number of workers. When ctx is done Run
// stops early: cases not run are nil.
func Run(ctx context.Context, rn *harness.Runner, scheds []faults.Schedule, index []int, o Options) []*harness.Case {
	o = o.withDefaults()
	cases := make([]*harness.Case, len(scheds))
	var mu sync.Mutex
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(o.Workers)
	for i, s := range scheds {
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error {
			if ctx.Err() != nil {
				return nil
			}
			c := rn.Run(s)
			if c.Failed() && o.Mode == Random && !o.NoShrink {
				c.Shrunk = Shrink(rn, c, o)
			}
			mu.Lock()
			defer mu.Unlock()
			cases[i] = c
			if o.OnCase != nil {
				k := i
				if index != nil {
					k = index[i]
				}
				o.OnCase(k, c)
			}
			return nil
		})
	}
	g.Wait()
	return cases
}
