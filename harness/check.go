package harness

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/reports"
	"pgregory.net/rapid"
)

var (
	flagSchedule = flag.String("chaoskit.schedule", "", "chaoskit: run only this fault schedule, e.g. 'power@17' (replays a failure)")
	flagSeed     = flag.Uint64("chaoskit.seed", 0, "chaoskit: the seed, overriding Options.Seed")
)

// maxReported is how many failing cases Check prints in full.
const maxReported = 3

// Check explores target under faults from a go test and fails t for every case that does not
// pass, printing for each the schedule, the broken properties, the beats around the fault and
// the exact command that replays it.
//
// In Exhaustive mode (the default) it runs every case of the campaign. In Random mode it lets
// rapid draw schedules of up to Options.MaxFaults faults and shrink a failure to the smallest
// schedule that still fails; rapid's own seed then governs the draws (-rapid.seed), rapid's
// -rapid.checks the number of cases (Options.Cases, OnCase and Progress are not used), and its
// failure output ends with the shrunk case. Either way, -chaoskit.schedule='kill@4,power@9' runs
// just that schedule and -chaoskit.seed overrides Options.Seed. Options.Name defaults to the
// test's name.
func Check(t testing.TB, target Target, opts Options) {
	t.Helper()
	if flagSet("chaoskit.seed") {
		opts.Seed = *flagSeed
	}
	if opts.Name == "" {
		opts.Name = t.Name()
	}
	if opts.Repro == nil {
		run, seed := testPattern(t.Name()), opts.Seed
		opts.Repro = func(s faults.Schedule) string {
			cmd := fmt.Sprintf("go test -run '%s' -chaoskit.schedule='%s'", run, s)
			if seed != 0 {
				cmd += fmt.Sprintf(" -chaoskit.seed=%d", seed)
			}
			return cmd
		}
	}
	rn, err := NewRunner(target, opts)
	if err != nil {
		t.Fatalf("chaoskit: %v", err)
	}
	if *flagSchedule != "" {
		s, err := faults.ParseSchedule(*flagSchedule)
		if err != nil {
			t.Fatalf("chaoskit: -chaoskit.schedule: %v", err)
		}
		c := rn.Run(s)
		if c.Verdict.Verdict != reports.Pass {
			t.Errorf("chaoskit: %s", c)
		} else {
			t.Logf("chaoskit: %s", c)
		}
		return
	}
	if rn.o.Mode == Random {
		rapid.Check(t, func(rt *rapid.T) {
			c := rn.Run(drawSchedule(rt, rn))
			if c.Verdict.Verdict != reports.Pass {
				rt.Fatalf("chaoskit: %s", c)
			}
		})
		return
	}
	cases := rn.Explore(context.Background())
	bad := 0
	notes := map[string]bool{}
	for _, c := range cases {
		for _, n := range c.Verdict.NotChecked {
			notes[n] = true
		}
		if c.Verdict.Verdict == reports.Pass {
			continue
		}
		if bad++; bad <= maxReported {
			t.Errorf("chaoskit: %s", c)
		}
	}
	if bad > maxReported {
		t.Errorf("chaoskit: ... and %d more of %d cases did not pass", bad-maxReported, len(cases))
	}
	for _, n := range slices.Sorted(maps.Keys(notes)) {
		t.Logf("chaoskit: not checked in some cases: %s", n)
	}
	t.Logf("chaoskit: %s: %d cases over %d golden beats, %d did not pass", opts.Name, len(cases), rn.GoldenBeats(), bad)
}

// flagSet reports whether a flag was given on the command line.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// testPattern returns a -run pattern that matches exactly the named test or subtest.
func testPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// drawSchedule lets rapid draw a schedule: up to MaxFaults faults of the campaign's kinds, at
// distinct beats reaching half again past the golden run. rapid shrinks it toward fewer faults,
// earlier beats, the first kind and zero arguments.
func drawSchedule(rt *rapid.T, rn *Runner) faults.Schedule {
	span := rn.GoldenBeats() + rn.GoldenBeats()/2 + 1
	n := rapid.IntRange(1, min(rn.o.MaxFaults, span)).Draw(rt, "faults")
	beats := rapid.SliceOfNDistinct(rapid.IntRange(0, span-1), n, n, func(b int) int { return b }).Draw(rt, "beats")
	slices.Sort(beats)
	s := make(faults.Schedule, n)
	for i, b := range beats {
		f := faults.Fault{Kind: rapid.SampledFrom(rn.o.Faults).Draw(rt, "kind"), Beat: b}
		info, _ := f.Kind.Info()
		switch info.Arg {
		case faults.BytesArg:
			f.Bytes = int64(rapid.IntRange(0, 1024).Draw(rt, "bytes"))
		case faults.ModeArg:
			if m := rapid.IntRange(0, len(info.Modes)-1).Draw(rt, "mode"); m > 0 {
				f.Mode = info.Modes[m]
			}
		case faults.DurationArg:
			f.Dur = rapid.SampledFrom(rn.o.LeasePauses).Draw(rt, "pause")
		case faults.WorkerArg:
			f.Worker = rapid.IntRange(0, rn.o.FleetReplicas).Draw(rt, "worker")
		}
		s[i] = f
	}
	rt.Logf("schedule: %s", s)
	return s
}

// CrashState returns the durable state the target would find on restarting after crash fault
// f (kill, power, torn or corrupt) at beat f.Beat of the golden run: what a restarted process
// reads, without running it. The target must implement Stater.
func (rn *Runner) CrashState(f faults.Fault) (any, error) {
	if rn.stater == nil {
		return nil, fmt.Errorf("%s does not implement harness.Stater", rn.o.Name)
	}
	if !isCrash(f.Kind) {
		return nil, fmt.Errorf("CrashState: %s is not a crash", f)
	}
	if f.Beat < 0 || f.Beat >= rn.GoldenBeats() {
		return nil, fmt.Errorf("CrashState: beat %d is outside the golden run's %d beats", f.Beat, rn.GoldenBeats())
	}
	if rn.o.Replicas != 1 {
		return nil, fmt.Errorf("CrashState: only with one worker (Options.Replicas is %d)", rn.o.Replicas)
	}
	r := newRun(rn.target, &rn.o, rn.tools, faults.Schedule{f}, 0, 0)
	rn.derive(r, rn.golden(1).r, f)
	return rn.stater.State(r.disk)
}
