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
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/spf13/afero"
)

var (
	flagSchedule = flag.String("chaoskit.schedule", "", "chaoskit: run only this fault schedule, e.g. 'power@17' (replays a failure)")
	flagSeed     = flag.Uint64("chaoskit.seed", 0, "chaoskit: the seed, overriding Options.Seed")
	flagOut      = flag.String("chaoskit.out", "", "chaoskit: write each Check's report directory (report.json, summary.md, junit.xml, report.html) under this directory, in a subdirectory named for the test")
)

// maxReported is how many failing cases Check prints in full.
const maxReported = 3

// Check explores a target under faults from a go test and fails t for every case that does not
// pass, printing for each the schedule, the broken properties, the beats around the fault and
// the exact go test command that replays it. newTarget builds one instance of the target per
// process (harness.Fresh makes one from a template value).
//
// It runs the campaign opts describes, as the command line would: in Exhaustive mode (the
// default) every fault at every beat where it applies; in Random mode opts.Cases schedules drawn
// from opts.Seed, each failure shrunk to the smallest schedule that still fails, which is the
// one Check prints and replays. The same options give the same cases as `chaoskit run`, and a
// failure found by either replays in the other. -chaoskit.schedule='kill@4,power@9' runs just
// that schedule and -chaoskit.seed overrides opts.Seed. With -chaoskit.out=DIR it also writes
// the campaign's report directory, as chaoskit run does, to DIR/TEST (a subtest's slashes
// written __), for chaoskit gate to check in CI. opts.Name defaults to the test's name.
func Check(t testing.TB, newTarget func() harness.Target, opts campaign.Options) {
	t.Helper()
	if flagSet("chaoskit.seed") {
		opts.Seed = *flagSeed
	}
	if opts.Name == "" {
		opts.Name = t.Name()
	}
	if opts.Repro == nil {
		opts.Repro = goTestCommand(t.Name(), opts.Seed)
	}
	rn, err := harness.NewRunner(newTarget, opts.Options)
	if err != nil {
		t.Fatalf("chaoskit: %v", err)
	}
	if *flagSchedule != "" {
		s, err := faults.ParseSchedule(*flagSchedule)
		if err != nil {
			t.Fatalf("chaoskit: -chaoskit.schedule: %v", err)
		}
		c := rn.Run(s)
		g, _ := rn.Golden(s)
		c.RequireAll(g.Len())
		if c.Verdict.Outcome != oracle.Pass {
			t.Errorf("chaoskit: %s", c)
		} else {
			t.Logf("chaoskit: %s", c)
		}
		return
	}
	start := time.Now()
	cases, err := campaign.Explore(context.Background(), rn, opts)
	if err != nil {
		t.Fatalf("chaoskit: %v", err)
	}
	if *flagOut != "" {
		dir, err := writeReport(t.Name(), rn, opts, cases, time.Since(start))
		if err != nil {
			t.Errorf("chaoskit: -chaoskit.out: %v", err)
		} else {
			t.Logf("chaoskit: wrote the report directory %s", dir)
		}
	}
	bad := 0
	notes := map[string]bool{}
	for _, c := range cases {
		for _, n := range c.Verdict.NotChecked {
			notes[n] = true
		}
		if c.Verdict.Outcome == oracle.Pass {
			continue
		}
		if bad++; bad <= maxReported {
			if c.Shrunk != nil && c.Shrunk.String() != c.Schedule.String() {
				c = rn.Run(c.Shrunk) // the smallest failing schedule is the one to read and replay
			}
			t.Errorf("chaoskit: %s", c)
		}
	}
	if bad > maxReported {
		t.Errorf("chaoskit: ... and %d more of %d cases did not pass", bad-maxReported, len(cases))
	}
	for _, n := range slices.Sorted(maps.Keys(notes)) {
		t.Logf("chaoskit: not checked in some cases: %s", n)
	}
	g, _ := rn.Golden(nil)
	t.Logf("chaoskit: %s: %d cases over %d golden beats, %d did not pass", opts.Name, len(cases), g.Len(), bad)
}

// writeReport writes the report directory of a Check's campaign under -chaoskit.out, in a
// subdirectory named for the test, and returns its path.
func writeReport(test string, rn *harness.Runner, opts campaign.Options, cases []*harness.Case, took time.Duration) (string, error) {
	c := &campaign.Campaign{Targets: []campaign.Target{{Name: opts.Name}}, Options: opts}
	var rcs []reports.Case
	for i, hc := range cases {
		rcs = append(rcs, campaign.Report(hc, i))
	}
	g, _ := rn.Golden(nil)
	rep := c.Report(rcs, map[string]int{opts.Name: g.Len()})
	rep.DurationMs = float64(took.Microseconds()) / 1000
	dir := filepath.Join(*flagOut, strings.NewReplacer("/", "__", " ", "_").Replace(test))
	fsys := afero.NewOsFs()
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	_, err := reports.WriteDir(fsys, dir, rep, nil)
	return dir, err
}

// goTestCommand returns the Repro of the test named test: the go test command that runs just
// that test (from the module root, naming the package) with a schedule.
func goTestCommand(test string, seed uint64) func(faults.Schedule) string {
	pkg := packageDir()
	run := testPattern(test)
	return func(s faults.Schedule) string {
		cmd := fmt.Sprintf("go test %s -run '%s' -chaoskit.schedule='%s'", pkg, run, s)
		if seed != 0 {
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
