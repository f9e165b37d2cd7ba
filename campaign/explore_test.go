package campaign_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/reference"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/chaoskit/chaoskit/sim"
	"github.com/spf13/afero"
)

// agent returns a constructor of the reference agent's variant v, on the onboarding task.
func agent(v reference.Variant) func() harness.Target {
	return func() harness.Target { return reference.New(v, reference.Onboarding()) }
}

func newRunner(t testing.TB, newTarget func() harness.Target, opts sim.Options) *sim.Runner {
	t.Helper()
	rn, err := sim.NewRunner(newTarget, opts)
	if err != nil {
		t.Fatal(err)
	}
	return rn
}

// itself is a constructor that hands every process target itself: the test targets keep what
// they must in Run's own variables.
func itself(target harness.Target) func() harness.Target {
	return func() harness.Target { return target }
}

func explore(t testing.TB, rn *sim.Runner, opts campaign.Options) []*sim.Case {
	t.Helper()
	cases, err := campaign.Explore(context.Background(), rn, opts)
	if err != nil {
		t.Fatal(err)
	}
	return cases
}

// reportJSON is a case as its report holds it, wall-clock time aside.
func reportJSON(t testing.TB, c *sim.Case) string {
	rc := campaign.ReportCase(c, 0)
	rc.DurationMs = 0
	b, err := json.Marshal(rc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Two campaigns with the same seed give the same cases; the number of workers changes nothing.
func TestCampaignsAreDeterministic(t *testing.T) {
	run := func(workers int) []string {
		o := campaign.Options{Mode: campaign.Random, Cases: 40, Parallel: workers}
		o.Seed = 11
		var out []string
		for _, c := range explore(t, newRunner(t, agent(reference.ActThenSave), o.Options), o) {
			out = append(out, reportJSON(t, c))
		}
		return out
	}
	one, four := run(1), run(4)
	if len(one) != 40 {
		t.Fatalf("%d cases, want 40", len(one))
	}
	for i := range one {
		if one[i] != four[i] {
			t.Fatalf("case %d differs between 1 and 4 workers:\n%s\n%s", i, one[i], four[i])
		}
	}
}

// orders keeps its progress where the most natural Go code keeps it: in a field of the
// struct. It files three purchase orders, marking each, and journals nothing.
type orders struct{ filed int }

func (o *orders) Tools() []harness.Tool {
	return []harness.Tool{{Name: "create_po", Contract: harness.NotIdempotent}}
}

func (o *orders) Run(ctx context.Context, env *harness.Env) (any, error) {
	for ; o.filed < 3; o.filed++ {
		if _, err := env.Call(ctx, harness.Call{Tool: "create_po", Args: o.filed}); err != nil {
			return nil, err
		}
		env.Mark(fmt.Sprintf("po %d filed", o.filed))
	}
	return o.filed, nil
}

// A target that keeps its progress in memory is judged, not refused: every process gets a new
// instance, so a kill takes the progress with it and the restart files the orders again, which
// no-duplicate-effects and bounded-work-lost catch. Its golden runs agree (each starts from a
// fresh instance), and cases run on several workers at once share nothing (go test -race).
func TestProgressInMemoryIsCaughtNotRefused(t *testing.T) {
	rn := newRunner(t, harness.Fresh(orders{}), sim.Options{Name: "orders"})
	cases := explore(t, rn, campaign.Options{Faults: []faults.Kind{faults.Kill}, Parallel: 4})
	caught, redone := 0, 0
	for _, c := range cases {
		if c.Verdict.Outcome == oracle.Pass {
			continue
		}
		if !c.Breaks(oracle.NoDuplicateEffects) {
			t.Errorf("caught by the wrong property: %s", c)
		}
		if c.Breaks(oracle.BoundedWorkLost) {
			redone++
		}
		caught++
	}
	// 9 golden beats (three calls of two beats, three marks): a kill after the first order was
	// applied (at beat 1 or later) makes the restart file it again; a kill at beat 0 loses
	// nothing. From the first mark on (beat 2, whose kill stops the mark), the restart also
	// redoes marked work.
	if len(cases) != 9 || caught != 8 || redone != 6 {
		t.Fatalf("%d of %d kills caught (%d redoing marked work), want 8 of 9 (6)", caught, len(cases), redone)
	}
}

// The command line and go test draw random schedules with one engine: the schedules of a Random
// campaign are Draw's, picked from a source seeded by Options.Seed, and a switch fault names
// its worker as often as not.
func TestOneRandomEngine(t *testing.T) {
	rn := newRunner(t, agent(reference.Correct), sim.Options{})
	o := campaign.Options{Mode: campaign.Random, Cases: 200, Faults: []faults.Kind{faults.Kill, faults.Switch, faults.DiskFull}}
	o.Seed = 3
	scheds, err := campaign.Schedules(rn, o)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := campaign.Schedules(rn, o)
	if !slices.EqualFunc(scheds, again, func(a, b faults.Schedule) bool { return a.String() == b.String() }) || len(scheds) != 200 {
		t.Fatalf("%d schedules, not the same twice", len(scheds))
	}
	named := 0
	for _, s := range scheds {
		for _, f := range s {
			if f.Kind == faults.Switch && f.Worker > 0 {
				named++
			}
		}
	}
	if named == 0 {
		t.Fatal("no switch fault names a worker")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	first, err := campaign.Draw(rn, o, func(n int, _ string) int { return rng.IntN(n) })
	if err == nil {
		err = first.Validate()
	}
	if err != nil || len(first) == 0 {
		t.Fatalf("Draw gave %q: %v", first, err)
	}
}

// Explore runs a whole campaign: here every power loss at every beat of the reference agent's
// variant that never fsyncs its directories, which loses its log's directory entry; and, at
// every beat where something not fsynced could survive, a power loss keeping a subset of it.
func ExampleExplore() {
	rn, err := sim.NewRunner(agent(reference.NoDirsync), sim.Options{Name: "no-dirsync"})
	if err != nil {
		fmt.Println(err)
		return
	}
	cases, err := campaign.Explore(context.Background(), rn, campaign.Options{Faults: []faults.Kind{faults.Power}})
	if err != nil {
		fmt.Println(err)
		return
	}
	failed := 0
	for _, c := range cases {
		if c.Failed() {
			failed++
		}
	}
	fmt.Printf("%d of %d power losses break a property\n", failed, len(cases))
	// Output:
	// 253 of 302 power losses break a property
}

// A campaign over several targets writes a report; its JSON is the same for the same targets,
// options and seed.
func ExampleCampaign_Run() {
	c := &campaign.Campaign{
		Targets: []campaign.Target{{Name: "reference/act-then-save", New: agent(reference.ActThenSave)}},
		Options: campaign.Options{Faults: []faults.Kind{faults.Kill}},
	}
	rep, err := c.Run(context.Background(), campaign.RunOptions{FS: afero.NewMemMapFs(), Dir: "report"})
	if err != nil {
		fmt.Println(err)
		return
	}
	t := rep.Summary.Targets[0]
	fmt.Printf("%s: %d cases, %d failed, %d duplicates\n", t.Target, t.Cases, t.Failed, t.Duplicates)
	// The report reads its cases back from the journal, one at a time.
	rep.Each(func(c *reports.Case) error {
		if c.Index == 0 {
			fmt.Println(c.Repro)
		}
		return nil
	})
	// Output:
	// reference/act-then-save: 144 cases, 12 failed, 12 duplicates
	// chaoskit replay --target reference/act-then-save --seed 0 --schedule 'kill@0'
}

// schedules lists the schedules of the campaign opts describes over rn's target.
func schedules(t testing.TB, rn *sim.Runner, opts campaign.Options) []faults.Schedule {
	t.Helper()
	s, err := campaign.Schedules(rn, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Faults that come after the run has ended are listed as unfired in the case's report, in their
// text form, not silently dropped (sim's TestUnfiredFaultsAreReported: the case lists them).
func TestReportCaseListsUnfiredFaults(t *testing.T) {
	rn := newRunner(t, agent(reference.Correct), sim.Options{})
	c := rn.Run(faults.Schedule{{Kind: faults.Kill, Beat: 1}, {Kind: faults.Power, Beat: 50000}})
	if got := campaign.ReportCase(c, 0).Unfired; len(got) != 1 || got[0].String() != "power@50000" {
		t.Fatalf("report unfired = %v", got)
	}
}
