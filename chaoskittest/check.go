package chaoskittest

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/chaoskit/chaoskit/sim"
	"github.com/spf13/afero"
)

var (
	flagSchedule = flag.String("chaoskit.schedule", "", "chaoskit: run only this fault schedule, e.g. 'power@17' (replays a failure)")
	flagSeed     = flag.Uint64("chaoskit.seed", 0, "chaoskit: the seed, overriding Options.Seed")
	flagOut      = flag.String("chaoskit.out", "", "chaoskit: write each Check's report directory (report.json, summary.md, junit.xml, report.html) under this directory, in a subdirectory named for the test")
)

// maxReported is how many failing cases Check prints in full.
const maxReported = 3

// shortCases is how many cases Check runs at most under go test -short.
const shortCases = 50

// Check explores a target under faults from a go test and fails t for every case that does not
// pass, printing for each the schedule, the broken properties, the beats around the fault and
// the exact go test command that replays it. newTarget builds one instance of the target per
// process (harness.Fresh makes one from a template value).
//
// It runs the campaign opts describes, as the command line would: in Exhaustive mode (the
// default) every fault at every beat where it applies; in Random mode opts.Cases schedules drawn
// from opts.Seed, each failure shrunk to the smallest schedule that still fails, which is the
// one Check prints and replays. The same options give the same cases as `chaoskit run`, and a
// failure found by either replays in the other. Under go test -short it runs at most 50 cases,
// taken evenly across the campaign.
//
// With a *testing.T, each case is a parallel subtest named for its schedule, so that
// go test -run '^TestX$/^kill@4$' runs just that case and go test -v lists each (-run's parts
// are regular expressions: anchor them, for kill@1 would also match kill@10, and escape a
// schedule's + as \+, as in '^TestX$/^lease@7\+2h$'; -chaoskit.schedule, which the printed replay
// commands use, takes a schedule as it is written); a failing case
// reports one line, and the first few failures are printed in full when all have run.
//
// A fault kind (or family) that opts.Faults asks for and of which the campaign has no case at all
// fails the test, naming it, even if every case passed: nothing was decided about it (torn where
// every write fits in a sector and power is not asked for, callback-dup without an asynchronous
// tool); leave it out of opts.Faults. chaoskit run exits 3 for the same campaign.
//
// A deploy of a new version mid-run (upgrade@N, faults.Upgrade) takes the version deployed in
// opts.NextVersion; without one the campaign has no upgrade case. The deploy cancels the old
// version's context (harness.ErrTerminated, the Go equivalent of SIGTERM) and kills it once
// opts.Grace (30s of virtual time by default; sim.NoGrace for at once) has passed.
//
// -chaoskit.schedule='kill@4,power@9' runs just that schedule and -chaoskit.seed overrides
// opts.Seed. With -chaoskit.out=DIR it also writes the campaign's report directory, as chaoskit
// run does, to DIR/TEST (a subtest's slashes written __), for chaoskit gate to check in CI. The
// environment variables CHAOSKIT_SCHEDULE, CHAOSKIT_SEED and CHAOSKIT_OUT do the same as the
// flags, for go test ./..., whose packages without chaoskit do not know the flags. opts.Name
// defaults to the test's name.
func Check(t testing.TB, newTarget func() harness.Target, opts campaign.Options) {
	t.Helper()
	set, err := settings()
	if err != nil {
		t.Fatalf("chaoskit: %v", err)
	}
	if set.seeded {
		opts.Seed = set.seed
	}
	if opts.Name == "" {
		opts.Name = t.Name()
	}
	if opts.Repro == nil {
		opts.Repro = goTestCommand(t.Name(), opts.Seed, set.seeded)
	}
	repro := opts.Repro
	target := campaign.Target{Name: opts.Name, New: newTarget, Repro: func(_ uint64, s faults.Schedule) string { return repro(s) }}
	rn, err := campaign.NewRunner(context.Background(), target, opts)
	if err != nil {
		t.Fatalf("chaoskit: %v", err)
	}
	if set.schedule != nil {
		c := rn.Run(set.schedule)
		g, _ := rn.Golden(set.schedule)
		c.RequireAll(g.Len())
		if c.Verdict.Outcome != oracle.Pass {
			t.Errorf("chaoskit: %s", c)
		} else {
			t.Logf("chaoskit: %s", c)
		}
		return
	}
	full := opts
	if testing.Short() && (opts.Cases == 0 || opts.Cases > shortCases) {
		opts.Cases = shortCases
	}
	scheds, err := campaign.Schedules(rn, opts)
	if err != nil {
		t.Fatalf("chaoskit: %v", err)
	}
	if missing, err := campaign.NoCase(rn, full); err != nil {
		t.Fatalf("chaoskit: %v", err)
	} else if len(missing) > 0 {
		t.Errorf("chaoskit: %s: nothing was decided under %s: the campaign has no case of them (no beat of the golden run where they apply); leave them out of Options.Faults", opts.Name, missing)
	}
	start := time.Now()
	var cases []*sim.Case
	if tt, ok := t.(*testing.T); ok {
		cases = make([]*sim.Case, len(scheds))
		tt.Cleanup(func() {
			tt.Helper() // the summary lines name the caller of Check, not this file
			report(t, rn, opts, set.out, cases, time.Since(start))
		})
		var mu sync.Mutex
		for i, s := range scheds {
			tt.Run(s.String(), func(t *testing.T) {
				t.Helper()
				t.Parallel()
				c := campaign.Run(context.Background(), rn, []faults.Schedule{s}, nil, opts)[0]
				mu.Lock()
				cases[i] = c
				mu.Unlock()
				switch {
				case c.Verdict.Outcome == oracle.Pass && c.Verdict.Refused != "":
					t.Logf("chaoskit: %s under %s: %s; replay: %s", opts.Name, s, refusedNote(c), c.Repro)
				case c.Verdict.Outcome == oracle.Pass:
				case c.Shrunk != nil && c.Shrunk.String() != s.String():
					t.Errorf("chaoskit: %s under %s: %s; shrunk to %s; replay: %s", opts.Name, s, c.Verdict.Summary(), c.Shrunk, opts.Repro(c.Shrunk))
				default:
					t.Errorf("chaoskit: %s under %s: %s; replay: %s", opts.Name, s, c.Verdict.Summary(), c.Repro)
				}
			})
		}
		return
	}
	cases = campaign.Run(context.Background(), rn, scheds, nil, opts)
	report(t, rn, opts, set.out, cases, time.Since(start))
}

// report prints what a Check's cases came to: the first few failures in full (shrunk, in
// random mode), what was not checked, and a count; and writes the report directory when asked.
// Cases not run (a subtest -run left out) are nil.
func report(t testing.TB, rn *sim.Runner, opts campaign.Options, out string, cases []*sim.Case, took time.Duration) {
	t.Helper()
	ran := slices.DeleteFunc(slices.Clone(cases), func(c *sim.Case) bool { return c == nil })
	if out != "" && len(ran) > 0 {
		dir, err := writeReport(out, t.Name(), rn, opts, ran, took)
		if err != nil {
			t.Errorf("chaoskit: -chaoskit.out: %v", err)
		} else {
			t.Logf("chaoskit: wrote the report directory %s", dir)
		}
	}
	bad, refused, shown, same := 0, 0, 0, 0
	_, subtests := t.(*testing.T) // each case's subtest has logged its refusal
	notes := map[string]bool{}
	seen := map[string]bool{} // the failures' smallest schedules, and whether one was shown
	for _, c := range ran {
		for _, n := range c.Verdict.NotChecked {
			notes[n] = true
		}
		if c.Verdict.Outcome == oracle.Pass {
			if c.Verdict.Refused != "" {
				if refused++; !subtests && refused <= maxReported {
					t.Logf("chaoskit: %s under %s: %s; replay: %s", opts.Name, c.Schedule, refusedNote(c), c.Repro)
				}
			}
			continue
		}
		bad++
		smallest := c.Schedule
		if c.Shrunk != nil {
			smallest = c.Shrunk
		}
		// Random schedules often shrink to the same one: each is shown once.
		if was, ok := seen[smallest.String()]; ok {
			if was {
				same++
			}
			continue
		}
		seen[smallest.String()] = shown < maxReported
		if shown < maxReported {
			shown++
			if smallest.String() != c.Schedule.String() {
				c = rn.Run(smallest) // the smallest failing schedule is the one to read and replay
			}
			t.Errorf("chaoskit: %s", c)
		}
	}
	if more := bad - shown; more > 0 {
		line := fmt.Sprintf("chaoskit: ... and %d more of %d cases did not pass", more, len(ran))
		if same > 0 {
			line += fmt.Sprintf(" (%d of them shrank to a failure shown above)", same)
		}
		t.Errorf("%s", line)
	}
	for _, n := range slices.Sorted(maps.Keys(notes)) {
		t.Logf("chaoskit: not checked in some cases: %s", n)
	}
	g, _ := rn.Golden(nil)
	line := fmt.Sprintf("chaoskit: %s: %d cases over %d golden beats, %d did not pass", opts.Name, len(ran), g.Len(), bad)
	if refused > 0 {
		line += fmt.Sprintf(", %d passed by refusing to go on", refused)
	}
	t.Logf("%s", line)
}

// refusedNote says that case c passed by refusing to go on, and what such a pass may hide.
func refusedNote(c *sim.Case) string {
	return "passed as refused (" + c.Verdict.Refused + "); " + reports.RefusalCaveat
}

// setting is how chaoskit was asked to run, by its flags or its environment variables.
type setting struct {
	schedule faults.Schedule // nil: the campaign
	seed     uint64
	seeded   bool
	out      string
}

// settings reads the -chaoskit.* flags and, where a flag is not given, the CHAOSKIT_*
// environment variables.
func settings() (setting, error) {
	var s setting
	text, given := *flagSchedule, flagSet("chaoskit.schedule")
	if !given {
		text = os.Getenv("CHAOSKIT_SCHEDULE")
	}
	if text != "" {
		sched, err := faults.ParseSchedule(text)
		if err != nil {
			return s, fmt.Errorf("-chaoskit.schedule: %w", err)
		}
		s.schedule = sched
	}
	if flagSet("chaoskit.seed") {
		s.seed, s.seeded = *flagSeed, true
	} else if v := os.Getenv("CHAOSKIT_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return s, fmt.Errorf("CHAOSKIT_SEED=%q: not a seed", v)
		}
		s.seed, s.seeded = n, true
	}
	s.out = *flagOut
	if !flagSet("chaoskit.out") {
		s.out = os.Getenv("CHAOSKIT_OUT")
	}
	return s, nil
}

// writeReport writes the report directory of a Check's campaign under -chaoskit.out, in a
// subdirectory named for the test, and returns its path.
func writeReport(out, test string, rn *sim.Runner, opts campaign.Options, cases []*sim.Case, took time.Duration) (string, error) {
	c := &campaign.Campaign{Targets: []campaign.Target{{Name: opts.Name}}, Options: opts}
	var rcs []reports.Case
	for i, hc := range cases {
		rcs = append(rcs, campaign.ReportCase(hc, i))
	}
	g, _ := rn.Golden(nil)
	rep := c.Report(rcs, map[string]int{opts.Name: g.Len()})
	rep.DurationMs = float64(took.Microseconds()) / 1000
	dir := filepath.Join(out, strings.NewReplacer("/", "__", " ", "_").Replace(test))
	fsys := afero.NewOsFs()
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	_, err := reports.WriteDir(fsys, dir, rep, nil)
	return dir, err
}

// goTestCommand returns the Repro of the test named test: the go test command that runs just
// that test (from the module root, naming the package) with a schedule, and with the seed when
// it is not the code's zero, or when it came from -chaoskit.seed or CHAOSKIT_SEED (overridden),
// where the code's Options.Seed may be another.
func goTestCommand(test string, seed uint64, overridden bool) func(faults.Schedule) string {
	pkg := packageDir()
	run := testPattern(test)
	return func(s faults.Schedule) string {
		cmd := fmt.Sprintf("go test %s -run '%s' -chaoskit.schedule='%s'", pkg, run, s)
		if seed != 0 || overridden {
			cmd += fmt.Sprintf(" -chaoskit.seed=%d", seed)
		}
		return cmd
	}
}

// packageDir returns the directory of the package under test relative to its module's root,
// as go test names it ("./orders"), or "." if it cannot be told: go test runs a package's tests
// in its directory.
func packageDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			rel, err := filepath.Rel(dir, wd)
			if err != nil || rel == "." {
				return "."
			}
			return "./" + filepath.ToSlash(rel)
		}
		if filepath.Dir(dir) == dir {
			return "."
		}
	}
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
