package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/chaoskit/chaoskit/adapters/process"
	"github.com/chaoskit/chaoskit/adapters/process/fusefs"
	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/reference"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/chaoskit/chaoskit/sim"
	"github.com/spf13/afero"
)

// benchReport is what chaoskit bench measures, as bench.json holds it. Every figure is a
// wall-clock measurement of this machine: the ratios, measured side by side in one loop, are
// what travels to another.
type benchReport struct {
	Machine      string         `json:"machine"`
	BareRunNs    int64          `json:"bare_run_ns"`              // one bare run of the reference agent
	CaseNs       int64          `json:"case_ns"`                  // one crash case of it, on average
	CaseVsBare   float64        `json:"case_vs_bare_ratio"`       // CaseNs / BareRunNs, measured in one loop
	Cases        int            `json:"cases"`                    // the crash cases averaged over
	CasesPerSec  float64        `json:"cases_per_sec"`            // an exhaustive campaign's throughput with Parallel cases at once
	CasesPerSec1 float64        `json:"cases_per_sec_parallel_1"` // with one case at a time
	Speedup      float64        `json:"speedup"`                  // CasesPerSec / CasesPerSec1
	Parallel     int            `json:"parallel"`                 // cases at once (--parallel)
	PeakRSSMb    float64        `json:"peak_rss_mb"`
	Scaling      []benchPoint   `json:"scaling"`
	Random       *benchRandom   `json:"random,omitempty"`
	Exec         []benchCommand `json:"exec,omitempty"`
	Share        []benchShare   `json:"share,omitempty"`
	Took         time.Duration  `json:"-"`
}

// benchRandom measures a random campaign's memory.
type benchRandom struct {
	Cases     int     `json:"cases"`
	Seconds   float64 `json:"seconds"`
	PeakRSSMb float64 `json:"peak_rss_mb"`
}

func runBench(c *cli, args []string) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	out := fs.String("out", "", "write bench.json to this directory too")
	beatsList := fs.String("lengths", "10,100,1000,10000", "the synthetic agents' lengths, in beats, with commas")
	parallel := fs.Int("parallel", runtime.GOMAXPROCS(0), "cases at once, for the throughput")
	workers := fs.Int("workers", 0, "deprecated: the old name of --parallel")
	random := fs.Int("random", 0, "first run a random campaign of this many cases over the synthetic agent of 100 beats, streaming its report, and report its peak memory")
	randomOnly := fs.Bool("random-only", false, "with --random, measure nothing else")
	ef := addExecFlags(fs)
	execOnly := fs.Bool("exec-only", false, "with --exec, measure only the command")
	execCases := fs.Int("exec-cases", 12, "with --exec, the crash cases of each fault kind measured, spread evenly over the golden run")
	execRounds := fs.Int("exec-rounds", 3, "with --exec, how many times every case is measured beside a bare run")
	syntheticRounds := fs.Int("synthetic-rounds", 3, "how many times every case of a synthetic agent is measured beside a bare run")
	shareRounds := fs.Int("share-rounds", 0, "also run the demo's campaign of single faults and, with --exec, the command's exhaustive campaign under kill, power and torn, with recoveries shared and without (--no-share), this many times each, interleaved")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if err := noPositional("bench", pos); err != nil {
		return err
	}
	var lengths []int
	for _, w := range strings.Split(*beatsList, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(w))
		if err != nil || n < 6 || n > 1_000_000 {
			return usagef("--lengths %q: want lengths from 6 to 1000000 beats, with commas", *beatsList)
		}
		lengths = append(lengths, n)
	}
	set := setFlags(fs)
	if err := c.renamed(set, "workers", workers, "parallel", parallel); err != nil {
		return err
	}
	if *parallel < 1 {
		return usagef("--parallel %d: want 1 or more", *parallel)
	}
	if *randomOnly && *random == 0 {
		return usagef("--random-only needs --random N")
	}
	if set["beats"] && !set["disk"] {
		*ef.disk = string(process.FUSE) // --beats is for the FUSE disk; the plain one is measured without it
	}
	commands, err := ef.commands(set)
	if err != nil {
		return err
	}
	if *execOnly && len(commands) == 0 {
		return usagef("--exec-only needs --exec COMMAND")
	}
	if *execCases < 1 || *execRounds < 1 {
		return usagef("--exec-cases %d --exec-rounds %d: want 1 or more of each", *execCases, *execRounds)
	}
	if *syntheticRounds < 1 {
		return usagef("--synthetic-rounds %d: want 1 or more", *syntheticRounds)
	}
	start := time.Now()
	r := &benchReport{Machine: fmt.Sprintf("%s/%s, %d CPUs, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version()), Parallel: *parallel}
	if *random > 0 { // first, so that its peak memory is its own
		if r.Random, err = benchRandomCampaign(c, *random, *parallel); err != nil {
			return err
		}
	}
	for _, cmd := range commands {
		if err := r.command(c, cmd, set["disk"], execBench{*execCases, *execRounds, *parallel}); err != nil {
			return err
		}
	}
	for _, cmd := range commands {
		if *shareRounds > 0 {
			m, err := shareCommand(c, cmd, *shareRounds, *parallel)
			if err != nil {
				return err
			}
			r.Share = append(r.Share, m)
		}
	}
	if *shareRounds > 0 && !*execOnly && !*randomOnly {
		m, err := shareDemo(c, *shareRounds, *parallel)
		if err != nil {
			return err
		}
		r.Share = append(r.Share, m)
	}
	if *randomOnly || *execOnly {
		lengths = nil
	} else if err := r.reference(c); err != nil {
		return err
	}
	for _, n := range lengths {
		p, err := benchSynthetic(c.ctx, n, *syntheticRounds)
		if err != nil {
			return err
		}
		r.Scaling = append(r.Scaling, p)
		fmt.Fprintf(c.stderr, "chaoskit: bench: %d beats done\n", n)
	}
	r.PeakRSSMb = peakRSSMb()
	r.Took = time.Since(start)
	r.print(c)
	if *out != "" {
		b, _ := json.MarshalIndent(r, "", "  ")
		if err := mkdirAll(c.fs, *out); err != nil {
			return err
		}
		if err := reports.WriteAtomic(c.fs, filepath.Join(*out, "bench.json"), append(b, '\n')); err != nil {
			return err
		}
	}
	return nil
}

func mkdirAll(fsys afero.Fs, dir string) error {
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}

// reference measures the reference agent: a bare run against a crash case, side by side, and
// an exhaustive campaign's throughput with one case at a time and with r.Parallel at once.
func (r *benchReport) reference(c *cli) error {
	newAgent := func() harness.Target { return reference.New(reference.Correct, reference.Onboarding()) }
	alone := campaign.Options{}
	alone.NoShare = true // a case's own cost, not a share of another's recovery
	rn, err := campaign.NewRunner(c.ctx, campaign.Target{Name: "reference", New: newAgent}, alone)
	if err != nil {
		return err
	}
	opts := campaign.Options{Faults: []faults.Kind{faults.Kill, faults.Power, faults.Torn}}
	scheds, err := campaign.Schedules(rn, opts)
	if err != nil {
		return err
	}
	var bare, cases time.Duration
	for i, s := range scheds { // one loop, alternating, so that the machine's mood weighs on both alike
		t0 := time.Now()
		if _, err := sim.RunBare(newAgent, afero.NewMemMapFs(), sim.Options{}); err != nil {
			return err
		}
		t1 := time.Now()
		rn.Run(s)
		bare, cases = bare+t1.Sub(t0), cases+time.Since(t1)
		r.Cases = i + 1
	}
	if err := rn.Err(); err != nil { // a signal: what was measured is not the whole
		return err
	}
	r.BareRunNs, r.CaseNs = int64(bare)/int64(r.Cases), int64(cases)/int64(r.Cases)
	r.CaseVsBare = round3(float64(cases) / float64(bare))
	throughput := func(parallel int) (float64, error) {
		o := opts
		o.Faults, o.Parallel = faults.StorageKinds(), parallel
		t0 := time.Now()
		done, err := campaign.Explore(c.ctx, rn, o)
		if err == nil {
			err = rn.Err()
		}
		return float64(len(done)) / time.Since(t0).Seconds(), err
	}
	if r.CasesPerSec1, err = throughput(1); err != nil {
		return err
	}
	if r.CasesPerSec, err = throughput(r.Parallel); err != nil {
		return err
	}
	r.CasesPerSec1, r.CasesPerSec = round3(r.CasesPerSec1), round3(r.CasesPerSec)
	r.Speedup = round3(r.CasesPerSec / r.CasesPerSec1)
	return nil
}

// benchRandomCampaign runs a random campaign of n cases over the synthetic agent of 100 beats
// with parallel cases at once, its journal and report (JSON, HTML) in a temporary directory, and
// measures its peak memory.
func benchRandomCampaign(c *cli, n, parallel int) (*benchRandom, error) {
	dir, err := afero.TempDir(c.fs, "", "chaoskit-bench-")
	if err != nil {
		return nil, err
	}
	defer c.fs.RemoveAll(dir)
	camp := &campaign.Campaign{
		Targets: []campaign.Target{{Name: "synthetic", New: reference.Synthetic(100)}},
		Options: campaign.Options{Faults: []faults.Kind{faults.Kill, faults.Power}, Mode: campaign.Random, Cases: n, Parallel: parallel},
	}
	t0 := time.Now()
	rep, err := camp.Run(c.ctx, campaign.RunOptions{FS: c.fs, Dir: dir})
	if err != nil {
		return nil, err
	}
	if _, err := reports.WriteDir(c.fs, dir, rep, []string{"json", "html"}); err != nil {
		return nil, err
	}
	return &benchRandom{Cases: n, Seconds: round3(time.Since(t0).Seconds()), PeakRSSMb: peakRSSMb()}, nil
}

// peakRSSMb returns the process's peak resident memory, in MiB.
func peakRSSMb() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return round3(float64(ru.Maxrss) / 1024)
}

func round3(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }

func (r *benchReport) print(c *cli) {
	w := c.stdout
	fmt.Fprintf(w, "machine: %s; parallel %d\n", r.Machine, r.Parallel)
	for _, e := range r.Exec {
		e.print(w, r.Parallel)
	}
	for _, m := range r.Share {
		m.print(w)
	}
	if r.Cases > 0 { // not measured with --random-only
		r.printCosts(w)
	}
	if r.Random != nil {
		fmt.Fprintf(w, "\nrandom campaign of %d cases (synthetic agent of 100 beats, kill and power): %.1fs, peak memory %.0f MiB\n", r.Random.Cases, r.Random.Seconds, r.Random.PeakRSSMb)
	}
	fmt.Fprintf(w, "\npeak memory %.0f MiB; took %s\n", r.PeakRSSMb, r.Took.Round(100*time.Millisecond))
}

// printCosts prints what a case costs against a bare run, and how that grows.
func (r *benchReport) printCosts(w io.Writer) {
	fmt.Fprintf(w, "\nreference agent, %d crash cases (kill, power, torn at every beat):\n", r.Cases)
	fmt.Fprintf(w, "  bare run %s, case %s: a case costs %.3f bare runs (measured side by side)\n", time.Duration(r.BareRunNs), time.Duration(r.CaseNs), r.CaseVsBare)
	fmt.Fprintf(w, "  exhaustive campaign: %.0f cases/s with %d at once, %.0f one at a time: a speed-up of %.2f\n\n", r.CasesPerSec, r.Parallel, r.CasesPerSec1, r.Speedup)
	printScaling(w, r.Scaling)
}

// benchCommand measures a command as a target, on one disk: what a crash case of each fault kind
// costs against a bare run of the same command, and a campaign's throughput.
type benchCommand struct {
	Command string           `json:"command"`
	Disk    string           `json:"disk"`
	Beats   int              `json:"golden_beats"`
	Faults  []benchCrashCase `json:"faults"`
	// A campaign of the measured cases of every fault kind, one case at a time and Parallel at once.
	Cases      int     `json:"campaign_cases"`
	Seconds1   float64 `json:"campaign_seconds_parallel_1"`
	SecondsN   float64 `json:"campaign_seconds"`
	CPU1       float64 `json:"campaign_cpu_seconds_parallel_1"` // chaoskit's, its helpers' and the commands'
	CPUN       float64 `json:"campaign_cpu_seconds"`
	Speedup    float64 `json:"speedup"`             // Seconds1 / SecondsN
	Saturation float64 `json:"cpu_per_wall_second"` // CPUN / SecondsN: how many CPUs the cases at once kept busy
}

// benchCrashCase compares crash cases of one fault kind, spread evenly over the beats where it
// applies, with bare runs of the same command, each run beside the other in one loop, rounds
// times over.
type benchCrashCase struct {
	Fault  string `json:"fault"`
	Cases  int    `json:"cases"`   // per round
	Rounds int    `json:"rounds"`  // of every case beside a bare run
	BareNs int64  `json:"bare_ns"` // a bare run on the same disk, on average
	CaseNs int64  `json:"case_ns"`
	// Per round, the cases' total time over the bare runs': wall-clock and CPU.
	Ratio    benchSpread `json:"case_vs_bare_ratio"`
	CPURatio benchSpread `json:"case_vs_bare_cpu_ratio"`
	// On a FUSE disk, the same against bare runs on a plain disk.
	PlainRatio    *benchSpread `json:"case_vs_plain_bare_ratio,omitempty"`
	PlainCPURatio *benchSpread `json:"case_vs_plain_bare_cpu_ratio,omitempty"`
}

// benchSpread is the minimum, median and maximum of measured ratios.
type benchSpread struct {
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	Max    float64 `json:"max"`
}

func spread(xs []float64) benchSpread {
	if len(xs) == 0 {
		return benchSpread{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return benchSpread{round3(s[0]), round3(s[len(s)/2]), round3(s[len(s)-1])}
}

func (s benchSpread) String() string { return fmt.Sprintf("%.3f/%.3f/%.3f", s.Min, s.Median, s.Max) }

// counts writes a spread of whole numbers, as 323/326/328.
func (s benchSpread) counts() string { return fmt.Sprintf("%.0f/%.0f/%.0f", s.Min, s.Median, s.Max) }

// cpuNow returns the CPU time used so far by this process, the children it has waited for, and
// its helpers.
func cpuNow() time.Duration {
	var self, kids syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return tv(self.Utime) + tv(self.Stime) + tv(kids.Utime) + tv(kids.Stime) + process.HelperCPU()
}

// cost is the wall-clock and CPU time something took.
type cost struct{ wall, cpu time.Duration }

func (c cost) plus(d cost) cost { return cost{c.wall + d.wall, c.cpu + d.cpu} }

// measured runs f and returns what it cost.
func measured(f func() error) (cost, error) {
	t0, c0 := time.Now(), cpuNow()
	err := f()
	return cost{time.Since(t0), cpuNow() - c0}, err
}

// execBench says how much of a command bench measures.
type execBench struct {
	cases, rounds, parallel int
}

// command measures cmd on a plain disk and, if this machine can mount FUSE, on a FUSE disk
// (only on the disk --disk gave, if it was given).
func (r *benchReport) command(c *cli, cmd reports.Command, diskGiven bool, eb execBench) error {
	disks := []string{string(process.Plain), string(process.FUSE)}
	if diskGiven {
		disks = []string{cmd.Disk}
	} else if err := fusefs.Available(); err != nil {
		disks = disks[:1]
		fmt.Fprintf(c.stderr, "chaoskit: bench: %s on a plain disk only: %v\n", cmd.Name, err)
	}
	beats := cmd.Beats
	for _, disk := range disks {
		cmd.Disk, cmd.Beats = disk, beats
		if disk == string(process.Plain) {
			cmd.Beats = "" // on a plain disk only requests are beats anyway
		}
		m, err := benchOneCommand(c, cmd, eb)
		if err != nil {
			return err
		}
		r.Exec = append(r.Exec, m)
		fmt.Fprintf(c.stderr, "chaoskit: bench: %s on a %s disk done\n", cmd.Name, disk)
	}
	return nil
}

// benchOneCommand measures cmd on its disk: kill and, on a FUSE disk, power cases against bare
// runs, then a campaign of those cases one at a time and eb.parallel at once.
func benchOneCommand(c *cli, cmd reports.Command, eb execBench) (benchCommand, error) {
	m := benchCommand{Command: joinCommand(cmd.Argv), Disk: cmd.Disk}
	target, err := execTarget(cmd)
	if err != nil {
		return m, err
	}
	alone := campaign.Options{}
	alone.NoShare = true // a case's own cost, not a share of another's recovery
	rn, err := campaign.NewRunner(c.ctx, target, alone)
	if err != nil {
		return m, targetError(beatsAdvice(err, []campaign.Target{target}))
	}
	g, _ := rn.Golden(nil)
	m.Beats = g.Len()
	plain := cmd
	plain.Disk, plain.Beats = string(process.Plain), ""
	plainTarget, err := execTarget(plain)
	if err != nil {
		return m, err
	}
	bare := func(t campaign.Target) func() error { // on the disk chaoskit's cases use, with no beat
		return func() error {
			_, err := sim.RunBare(t.New, faults.NewDisk(faults.DiskOptions{}), sim.Options{})
			return err
		}
	}
	kinds := []faults.Kind{faults.Kill}
	if cmd.Disk == string(process.FUSE) {
		kinds = append(kinds, faults.Power)
	}
	for _, k := range kinds {
		opts := campaign.Options{Faults: []faults.Kind{k}, Cases: eb.cases}
		scheds, err := campaign.Schedules(rn, opts)
		if err != nil {
			return m, err
		}
		f := benchCrashCase{Fault: string(k), Cases: len(scheds), Rounds: eb.rounds}
		var bareAll, caseAll cost
		var ratios, cpuRatios, plainRatios, plainCPURatios []float64
		for round := range eb.rounds {
			var bareT, caseT, plainT cost
			for i, s := range scheds {
				steps := []func() error{bare(target), func() error {
					if c := rn.Run(s); c.Verdict.Outcome == oracle.Unknown {
						return fmt.Errorf("bench: %s under %s: %s", cmd.Name, s, c.Verdict.Reason)
					}
					return nil
				}}
				if cmd.Disk != string(process.Plain) {
					steps = append(steps, bare(plainTarget))
				}
				order := []int{0, 1, 2}[:len(steps)]
				if (round+i)%2 == 1 { // half the time the case first, so that neither gains from the other
					order[0], order[1] = 1, 0
				}
				var costs [3]cost
				for _, j := range order {
					if costs[j], err = measured(steps[j]); err != nil {
						return m, err
					}
				}
				bareT, caseT, plainT = bareT.plus(costs[0]), caseT.plus(costs[1]), plainT.plus(costs[2])
			}
			bareAll, caseAll = bareAll.plus(bareT), caseAll.plus(caseT)
			ratios = append(ratios, float64(caseT.wall)/float64(bareT.wall))
			cpuRatios = append(cpuRatios, float64(caseT.cpu)/float64(max(bareT.cpu, 1)))
			if plainT.wall > 0 {
				plainRatios = append(plainRatios, float64(caseT.wall)/float64(plainT.wall))
				plainCPURatios = append(plainCPURatios, float64(caseT.cpu)/float64(max(plainT.cpu, 1)))
			}
		}
		if n := int64(len(scheds) * eb.rounds); n > 0 {
			f.BareNs, f.CaseNs = int64(bareAll.wall)/n, int64(caseAll.wall)/n
		}
		f.Ratio, f.CPURatio = spread(ratios), spread(cpuRatios)
		if plainRatios != nil {
			pr, pc := spread(plainRatios), spread(plainCPURatios)
			f.PlainRatio, f.PlainCPURatio = &pr, &pc
		}
		m.Faults = append(m.Faults, f)
	}
	campaignOf := func(parallel int) (cost, int, error) {
		n := 0
		c, err := measured(func() error {
			done, err := campaign.Explore(c.ctx, rn, campaign.Options{Faults: kinds, Cases: eb.cases * len(kinds), Parallel: parallel})
			n = len(done)
			return err
		})
		return c, n, err
	}
	one, n, err := campaignOf(1)
	if err != nil {
		return m, err
	}
	many, _, err := campaignOf(eb.parallel)
	if err != nil {
		return m, err
	}
	m.Cases, m.Seconds1, m.SecondsN = n, round3(one.wall.Seconds()), round3(many.wall.Seconds())
	m.CPU1, m.CPUN = round3(one.cpu.Seconds()), round3(many.cpu.Seconds())
	m.Speedup, m.Saturation = round3(one.wall.Seconds()/many.wall.Seconds()), round3(many.cpu.Seconds()/many.wall.Seconds())
	return m, nil
}

func (m benchCommand) print(w io.Writer, parallel int) {
	fmt.Fprintf(w, "\n%s on a %s disk (%d golden beats): crash cases against bare runs of the same command, side by side\n", m.Command, m.Disk, m.Beats)
	fmt.Fprintf(w, "  %-6s %6s %7s %10s %10s %22s %22s\n", "fault", "cases", "rounds", "bare run", "case", "ratio min/median/max", "CPU min/median/max")
	for _, f := range m.Faults {
		fmt.Fprintf(w, "  %-6s %6d %7d %10s %10s %22s %22s\n", f.Fault, f.Cases, f.Rounds, time.Duration(f.BareNs).Round(100*time.Microsecond),
			time.Duration(f.CaseNs).Round(100*time.Microsecond), f.Ratio, f.CPURatio)
		if f.PlainRatio != nil {
			fmt.Fprintf(w, "  %-6s %6s %7s %10s %10s %22s %22s  against bare runs on a plain disk\n", "", "", "", "", "", *f.PlainRatio, *f.PlainCPURatio)
		}
	}
	fmt.Fprintf(w, "  a campaign of %d of those cases: %.1fs one at a time, %.1fs %d at once, a speed-up of %.2f; CPU %.1fs and %.1fs, %.2f CPUs busy\n",
		m.Cases, m.Seconds1, m.SecondsN, parallel, m.Speedup, m.CPU1, m.CPUN, m.Saturation)
}
