package campaign

import (
	"context"
	"iter"
	"sync"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/sim"
)

// Explore runs the campaign over rn's target (the schedules of Schedules, or of Options.Shard
// only) and returns its cases in schedule order. In Random mode each failure is shrunk. When
// ctx is done it stops early: cases not run are nil.
func Explore(ctx context.Context, rn *sim.Runner, o Options) ([]*sim.Case, error) {
	seq, err := scheduleSeq(rn, o, o.Shard.Holds)
	if err != nil {
		return nil, err
	}
	var scheds []faults.Schedule
	var index []int
	for i, s := range seq {
		if s != nil {
			scheds, index = append(scheds, s), append(index, i)
		}
	}
	cases := Run(ctx, rn, scheds, index, o)
	return cases, nil
}

// Run runs the given schedules against rn's target, Options.Parallel at a time, shrinking each
// failure in Random mode, and returns the cases in the order of scheds. index, if not nil,
// gives each schedule's index in its campaign, which OnCase receives; otherwise that is its
// position in scheds. Results do not depend on the number of workers. When ctx is done Run
// stops early: cases not run are nil.
func Run(ctx context.Context, rn *sim.Runner, scheds []faults.Schedule, index []int, o Options) []*sim.Case {
	cases := make([]*sim.Case, len(scheds))
	onCase := o.OnCase
	o.OnCase = func(i int, c *sim.Case) {
		cases[i] = c
		if onCase != nil {
			if index != nil {
				i = index[i]
			}
			onCase(i, c)
		}
	}
	stream(ctx, rn, func(yield func(int, faults.Schedule) bool) {
		for i, s := range scheds {
			if !yield(i, s) {
				return
			}
		}
	}, o)
	return cases
}

// stream runs the schedules seq yields against rn's target, each with its index in its
// campaign, Options.Parallel at a time, shrinking each failure in Random mode, and hands each
// case to Options.OnCase with its index as it finishes. It keeps no case, and draws a schedule
// from seq only when a worker is free for it, so that a campaign of any size runs in memory
// that depends on the number of workers only. When ctx is done stream stops early; a case
// rn's own context stopped (sim.NewRunnerContext), or stopped while it was shrunk, is not
// handed on.
//
// A case whose crash state another case is recovering (sim.Runner.TryRun) gives its worker up
// while it waits, and takes one again to be decided from that recovery: a few at a time
// (parkedPerWorker a worker), so that memory still depends on the number of workers only.
func stream(ctx context.Context, rn *sim.Runner, seq iter.Seq2[int, faults.Schedule], o Options) {
	o = o.withDefaults()
	var mu sync.Mutex
	var wg sync.WaitGroup
	slots := make(chan struct{}, o.Parallel)
	parked := make(chan struct{}, parkedPerWorker*o.Parallel)
	var decide func(k int, s faults.Schedule) // runs holding a slot, and gives it back
	decide = func(k int, s faults.Schedule) {
		if ctx.Err() != nil {
			<-slots
			return
		}
		c, wait := rn.TryRun(s)
		for wait != nil {
			select {
			case parked <- struct{}{}:
				<-slots
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer func() { <-parked }()
					select {
					case <-wait:
					case <-ctx.Done():
						return
					}
					select {
					case slots <- struct{}{}:
					case <-ctx.Done():
						return
					}
					decide(k, s)
				}()
				return
			default: // parked enough: wait holding the slot
				<-wait
				c, wait = rn.TryRun(s)
			}
		}
		defer func() { <-slots }()
		if c.Interrupted() {
			return // not decided: a resumed campaign runs it again
		}
		if c.Failed() && o.Mode == Random && !o.NoShrink {
			if c.Shrunk = Shrink(rn, c, o); rn.Err() != nil {
				return // shrunk only part of the way
			}
			if repro := rn.Options().Repro; repro != nil {
				c.ShrunkRepro = repro(c.Shrunk)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if o.OnCase != nil {
			o.OnCase(k, c)
		}
	}
	for k, s := range seq {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			decide(k, s)
		}()
	}
	wg.Wait()
}

// parkedPerWorker is how many cases per worker may wait for another case's recovery without
// holding a worker.
const parkedPerWorker = 16
