//go:build campaigns

package process_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"testing"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
)

// campaigns is how many campaigns of each target the tests run: CHAOSKIT_FANOUT_N, or 10 (the
// measurement reported in docs was 200 of the thread pool's).
func campaigns(t *testing.T) int {
	if n, err := strconv.Atoi(os.Getenv("CHAOSKIT_FANOUT_N")); err == nil && n > 0 {
		return n
	}
	return 10
}

// Campaign after campaign of the same correct fan-out harness, each from a new runner (two
// golden runs compared, then a kill at every beat and every tool fault), gets one verdict:
// pass, never refused as not deterministic.
func TestFanOutCampaignsAgree(t *testing.T) {
	for _, file := range []string{"fanout_threads.py", "fanout_gather.py", "fanout_all.mjs"} {
		t.Run(file, func(t *testing.T) {
			n := campaigns(t)
			if file != "fanout_threads.py" {
				n = max(1, n/2)
			}
			verdicts := map[string]int{}
			for range n {
				rn, err := sim.NewRunner(harness.Fresh(timeTarget(t, file)), sim.Options{Name: file})
				if err != nil {
					verdicts["refused: "+err.Error()]++
					continue
				}
				cases, err := campaign.Explore(context.Background(), rn, campaign.Options{Faults: []faults.Kind{faults.Kill, faults.ToolTransient, faults.ToolAmbiguous}})
				if err != nil {
					t.Fatal(err)
				}
				v := "pass"
				for _, c := range cases {
					if c.Verdict.Outcome != oracle.Pass {
						v = c.String()
						break
					}
				}
				verdicts[v]++
			}
			t.Logf("%s: %d campaigns: %v", file, n, verdicts)
			if len(verdicts) != 1 || verdicts["pass"] != n {
				t.Fatalf("verdicts %v, want pass in all %d", verdicts, n)
			}
		})
	}
}

// The harness whose calls depend on the order of their replies is refused in every campaign,
// never passed by luck.
func TestOrderDependenceRefusedEveryTime(t *testing.T) {
	for range campaigns(t) {
		_, err := sim.NewRunner(harness.Fresh(timeTarget(t, "order_counter.py")), sim.Options{Name: "order_counter"})
		if !errors.Is(err, sim.ErrNondeterministic) {
			t.Fatalf("err = %v, want a refusal as not deterministic", err)
		}
	}
}
