package campaign_test

import (
	"fmt"
	"testing"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/reference"
	"github.com/chaoskit/chaoskit/sim"
)

// BenchmarkExhaustiveSchedules lists the schedules of an exhaustive storage campaign over
// synthetic agents of growing length: what it costs to decide where torn and power:subset can
// fire, before any case runs. It should grow with the golden run, not with its square.
//
//	go test ./campaign -run '^$' -bench ExhaustiveSchedules
func BenchmarkExhaustiveSchedules(b *testing.B) {
	for _, beats := range []int{300, 1000, 3000} {
		b.Run(fmt.Sprint(beats, "beats"), func(b *testing.B) {
			opts := campaign.Options{Faults: []faults.Kind{faults.Kill, faults.Power, faults.Torn}}
			for b.Loop() {
				b.StopTimer()
				rn, err := sim.NewRunner(reference.Synthetic(beats), sim.Options{})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if _, err := campaign.Schedules(rn, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
