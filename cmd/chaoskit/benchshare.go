package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/chaoskit/chaoskit/adapters/process"
	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/reference"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/chaoskit/chaoskit/sim"
)

// benchShare compares a whole campaign run with the recoveries of cases of one crash state
// shared and with every case running its own (--no-share), the two run one after the other,
// rounds times over, which of them first alternating.
type benchShare struct {
	Name   string `json:"name"`
	Cases  int    `json:"cases"`
	Rounds int    `json:"rounds"`
	// Per round, the runs of the target the campaign took, sharing and without: sharing, it
	// varies with the order in which cases of one crash state finish.
	RunsShared benchSpread `json:"runs_shared"`
	RunsAlone  benchSpread `json:"runs_alone"`
	// Per round, the crash states whose recovery the sharing campaign ran (sim.Tally.States).
	States benchSpread `json:"crash_states"`
	// Per round: cases decided per second of wall-clock time, and CPU seconds (chaoskit's, its
	// helpers' and the commands').
	CasesPerSecShared benchSpread `json:"cases_per_sec_shared"`
	CasesPerSecAlone  benchSpread `json:"cases_per_sec_alone"`
	CPUShared         benchSpread `json:"cpu_seconds_shared"`
	CPUAlone          benchSpread `json:"cpu_seconds_alone"`
	CPURatio          benchSpread `json:"cpu_alone_vs_shared_ratio"` // per round, the alone run's CPU over the shared one's
}

// measureShare runs the campaign camp builds with and without sharing, rounds times each.
func measureShare(c *cli, name string, rounds int, camp func(noShare bool) *campaign.Campaign) (benchShare, error) {
	m := benchShare{Name: name, Rounds: rounds}
	var rate, cpu, runs [2][]float64 // by noShare
	var states []float64
	var ratios []float64
	for round := range rounds {
		var costs [2]cost
		for i := range 2 {
			noShare := (round+i)%2 == 1 // half the rounds without sharing first
			var t sim.Tally
			k, err := measured(func() error {
				_, err := camp(noShare).Run(c.ctx, campaign.RunOptions{Tally: &t})
				return err
			})
			if err != nil {
				return m, err
			}
			j := 0
			if noShare {
				j = 1
			} else {
				states = append(states, float64(t.States))
			}
			m.Cases, costs[j] = t.Cases, k
			runs[j] = append(runs[j], float64(t.Runs))
			rate[j] = append(rate[j], float64(t.Cases)/k.wall.Seconds())
			cpu[j] = append(cpu[j], k.cpu.Seconds())
		}
		ratios = append(ratios, float64(costs[1].cpu)/float64(max(costs[0].cpu, 1)))
	}
	m.RunsShared, m.RunsAlone, m.States = spread(runs[0]), spread(runs[1]), spread(states)
	m.CasesPerSecShared, m.CasesPerSecAlone = spread(rate[0]), spread(rate[1])
	m.CPUShared, m.CPUAlone, m.CPURatio = spread(cpu[0]), spread(cpu[1]), spread(ratios)
	fmt.Fprintf(c.stderr, "chaoskit: bench: %s with and without sharing done\n", name)
	return m, nil
}

// shareCommand measures the exhaustive campaign of cmd under kill, power and torn on a FUSE
// disk (kill on a plain one), with and without sharing: the campaign chaoskit run --faults
// kill,power,torn runs, its seed included.
func shareCommand(c *cli, cmd reports.Command, rounds, parallel int) (benchShare, error) {
	target, err := execTarget(cmd)
	if err != nil {
		return benchShare{}, err
	}
	kinds := []faults.Kind{faults.Kill}
	if cmd.Disk == string(process.FUSE) {
		kinds = append(kinds, faults.Power, faults.Torn)
	}
	return measureShare(c, fmt.Sprintf("%s on a %s disk, %s", joinCommand(cmd.Argv), cmd.Disk, kindList(kinds)), rounds, func(noShare bool) *campaign.Campaign {
		camp := &campaign.Campaign{Targets: []campaign.Target{target}, Options: campaign.Options{Faults: kinds, Parallel: parallel}}
		camp.Options.NoShare, camp.Options.Seed = noShare, 1 // chaoskit run's: the seed draws power:subset's subsets
		return camp
	})
}

// shareDemo measures the demo's campaign of single faults (every fault kind; the reference agent
// and the variants a single fault exposes), with and without sharing.
func shareDemo(c *cli, rounds, parallel int) (benchShare, error) {
	var targets []campaign.Target
	for _, v := range reference.Variants() {
		if v.Depth < 2 {
			t, _ := lookupTarget(referenceName(v.Variant))
			targets = append(targets, t)
		}
	}
	return measureShare(c, "the demo's single faults", rounds, func(noShare bool) *campaign.Campaign {
		camp := &campaign.Campaign{Targets: targets, Options: campaign.Options{Faults: faults.AllKinds(), Parallel: parallel}}
		camp.Options.NoShare, camp.Options.Seed = noShare, 1
		return camp
	})
}

func (m benchShare) print(w io.Writer) {
	fmt.Fprintf(w, "\n%s: %d cases (%d rounds, interleaved)\n", m.Name, m.Cases, m.Rounds)
	fmt.Fprintf(w, "  runs of the target min/median/max: %s sharing recoveries (of %s crash states), %s without\n", m.RunsShared.counts(), m.States.counts(), m.RunsAlone.counts())
	fmt.Fprintf(w, "  cases a second min/median/max: %s sharing, %s without\n", m.CasesPerSecShared, m.CasesPerSecAlone)
	fmt.Fprintf(w, "  CPU seconds min/median/max:    %s sharing, %s without; without over sharing %s\n", m.CPUShared, m.CPUAlone, m.CPURatio)
}

// kindList writes fault kinds with commas, as --faults takes them.
func kindList(kinds []faults.Kind) string {
	s := make([]string, len(kinds))
	for i, k := range kinds {
		s[i] = string(k)
	}
	return strings.Join(s, ",")
}
