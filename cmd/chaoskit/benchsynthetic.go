package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/reference"
	"github.com/chaoskit/chaoskit/sim"
	"github.com/spf13/afero"
)

// benchPoint measures the synthetic agent of one length: its cases against bare runs, side by
// side in one loop, rounds times over. Times are averages over every round; ratios are per
// round, as min/median/max.
type benchPoint struct {
	Beats       int   `json:"beats"`         // the golden run's beats
	Cases       int   `json:"cases"`         // an exhaustive kill campaign's cases: one per beat
	Rounds      int   `json:"rounds"`        // of the campaign, and of the late and early crashes
	BareNs      int64 `json:"bare_ns"`       // one bare run
	CaseNs      int64 `json:"case_ns"`       // one case of the campaign, on average
	LateCaseNs  int64 `json:"late_case_ns"`  // a kill two beats before the end: a short recovery
	EarlyCaseNs int64 `json:"early_case_ns"` // a kill at beat 2: recovery does nearly everything
	// Per round: a case of the campaign over a bare run, wall-clock and CPU; the late and the
	// early crash over a bare run.
	Ratio      benchSpread `json:"case_vs_bare_ratio"`
	CPURatio   benchSpread `json:"case_vs_bare_cpu_ratio"`
	LateRatio  benchSpread `json:"late_case_vs_bare_ratio"`
	EarlyRatio benchSpread `json:"early_case_vs_bare_ratio"`
}

// benchSynthetic measures the synthetic agent of n beats, rounds times: each round runs the
// exhaustive kill campaign with bare runs spread among its cases, then a late and an early crash
// beside bare runs, which of them goes first turning from one to the next, so that the
// machine's load weighs on cases and bare runs alike.
func benchSynthetic(ctx context.Context, n, rounds int) (benchPoint, error) {
	newAgent := reference.Synthetic(n)
	alone := campaign.Options{}
	alone.NoShare = true // a case's own cost, not a share of another's recovery
	rn, err := campaign.NewRunner(ctx, campaign.Target{Name: "synthetic", New: newAgent}, alone)
	if err != nil {
		return benchPoint{}, err
	}
	g, _ := rn.Golden(nil)
	p := benchPoint{Beats: g.Len(), Cases: g.Len(), Rounds: rounds}
	kill := func(b int) func() error {
		return func() error { rn.Run(faults.Schedule{{Kind: faults.Kill, Beat: b}}); return nil }
	}
	bare := func() error {
		_, err := sim.RunBare(newAgent, afero.NewMemMapFs(), sim.Options{})
		return err
	}
	// Enough bare runs, and late and early crashes, for a few hundred milliseconds at any length.
	bares := max(1, min(p.Cases, 20_000/g.Len()))
	reps := max(1, 20_000/g.Len()/rounds)
	var ratio, cpuRatio, lateRatio, earlyRatio []float64
	var bareAll, caseAll, lateAll, earlyAll cost
	var bareN, lateN int
	for round := range rounds {
		var bareT, caseT cost
		for b := range p.Cases {
			steps := []func() error{kill(b)}
			if b*bares/p.Cases != (b+1)*bares/p.Cases { // bares bare runs, spread evenly
				steps = append(steps, bare)
			}
			costs, err := interleaved(steps, round+b)
			if err != nil {
				return p, err
			}
			caseT = caseT.plus(costs[0])
			if len(costs) > 1 {
				bareT = bareT.plus(costs[1])
			}
		}
		ratio = append(ratio, perRun(caseT.wall, p.Cases)/perRun(bareT.wall, bares))
		cpuRatio = append(cpuRatio, perRun(caseT.cpu, p.Cases)/max(perRun(bareT.cpu, bares), 1))
		var bare2, late, early cost
		for i := range reps {
			costs, err := interleaved([]func() error{bare, kill(g.Len() - 2), kill(2)}, round+i)
			if err != nil {
				return p, err
			}
			bare2, late, early = bare2.plus(costs[0]), late.plus(costs[1]), early.plus(costs[2])
		}
		lateRatio = append(lateRatio, float64(late.wall)/float64(bare2.wall))
		earlyRatio = append(earlyRatio, float64(early.wall)/float64(bare2.wall))
		bareAll, caseAll, lateAll, earlyAll = bareAll.plus(bareT).plus(bare2), caseAll.plus(caseT), lateAll.plus(late), earlyAll.plus(early)
		bareN, lateN = bareN+bares+reps, lateN+reps
	}
	if err := rn.Err(); err != nil {
		return p, err
	}
	p.BareNs, p.CaseNs = int64(bareAll.wall)/int64(bareN), int64(caseAll.wall)/int64(p.Cases*rounds)
	p.LateCaseNs, p.EarlyCaseNs = int64(lateAll.wall)/int64(lateN), int64(earlyAll.wall)/int64(lateN)
	p.Ratio, p.CPURatio, p.LateRatio, p.EarlyRatio = spread(ratio), spread(cpuRatio), spread(lateRatio), spread(earlyRatio)
	return p, nil
}

// interleaved runs steps one after the other, starting with the one turn names (turn modulo
// their number) and going round, and returns what each cost, in the order of steps.
func interleaved(steps []func() error, turn int) ([]cost, error) {
	costs := make([]cost, len(steps))
	for i := range steps {
		j := (turn + i) % len(steps)
		c, err := measured(steps[j])
		if err != nil {
			return nil, err
		}
		costs[j] = c
	}
	return costs, nil
}

// perRun returns d over n runs, in nanoseconds.
func perRun(d time.Duration, n int) float64 { return float64(d) / float64(n) }

// printScaling prints the synthetic agents' rows.
func printScaling(w io.Writer, points []benchPoint) {
	if len(points) == 0 {
		return
	}
	fmt.Fprintf(w, "synthetic agent, an exhaustive kill campaign (a case per beat), beside bare runs, %d rounds interleaved:\n", points[0].Rounds)
	fmt.Fprintf(w, "  %8s %10s %10s %22s %22s %10s %22s %10s %22s\n", "beats", "bare run", "case", "ratio min/median/max", "CPU min/median/max",
		"late crash", "ratio min/median/max", "early", "ratio min/median/max")
	for _, p := range points {
		fmt.Fprintf(w, "  %8d %10s %10s %22s %22s %10s %22s %10s %22s\n", p.Beats, round100us(p.BareNs), round100us(p.CaseNs), p.Ratio, p.CPURatio,
			round100us(p.LateCaseNs), p.LateRatio, round100us(p.EarlyCaseNs), p.EarlyRatio)
	}
}

// round100us returns ns as a duration rounded to a microsecond below 1 ms and to 100 µs above.
func round100us(ns int64) time.Duration {
	d := time.Duration(ns)
	if d < time.Millisecond {
		return d.Round(time.Microsecond)
	}
	return d.Round(100 * time.Microsecond)
}
