package chaoskittest

import (
	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/sim"
	"pgregory.net/rapid"
)

// Schedules returns a rapid generator of fault schedules for rn's target: the schedules a Random
// campaign with opts draws (campaign.Draw), with rapid making the choices, so that rapid can
// shrink them. It is for properties of your own that run a target under faults:
//
//	rapid.Check(t, func(rt *rapid.T) {
//		c := rn.Run(chaoskittest.Schedules(rn, opts).Draw(rt, "schedule"))
//		...
//	})
//
// It panics if no kind of opts.Faults applies to any beat of the target's golden run.
func Schedules(rn *sim.Runner, opts campaign.Options) *rapid.Generator[faults.Schedule] {
	return rapid.Custom(func(rt *rapid.T) faults.Schedule {
		s, err := campaign.Draw(rn, opts, func(n int, what string) int { return rapid.IntRange(0, n-1).Draw(rt, what) })
		if err != nil {
			panic("chaoskittest.Schedules: " + err.Error())
		}
		return s
	})
}
