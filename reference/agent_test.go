package reference_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/reference"
	"github.com/chaoskit/chaoskit/sim"
)

// tested is a runner of the reference agent with the campaign options it was made with.
type tested struct {
	*sim.Runner
	opts campaign.Options
}

// runner returns a runner of variant v doing task, for the campaign opts describes.
func runner(t testing.TB, v reference.Variant, task reference.Task, opts campaign.Options) *tested {
	t.Helper()
	opts.Name = reference.New(v, task).Name()
	rn, err := sim.NewRunner(func() harness.Target { return reference.New(v, task) }, opts.Options)
	if err != nil {
		t.Fatal(err)
	}
	return &tested{rn, opts}
}

// explore runs the campaign.
func (rn *tested) explore(t testing.TB) []*sim.Case {
	t.Helper()
	cases, err := campaign.Explore(context.Background(), rn.Runner, rn.opts)
	if err != nil {
		t.Fatal(err)
	}
	return cases
}

// golden returns the golden run with one worker.
func (rn *tested) golden() *sim.Golden {
	g, _ := rn.Golden(nil) // the runner recorded it
	return g
}

// The correct agent passes every case of an exhaustive run over kill, power, torn, diskfull and
// fsyncfail: every beat, every kind.
func TestCorrectAgentPassesEveryStorageCase(t *testing.T) {
	kinds := []faults.Kind{faults.Kill, faults.Power, faults.Torn, faults.DiskFull, faults.FsyncFail}
	rn := runner(t, reference.Correct, reference.Onboarding(), campaign.Options{Options: sim.Options{Seed: 1}, Faults: kinds})
	cases := rn.explore(t)
	perKind := map[faults.Kind]int{}
	for _, c := range cases {
		perKind[c.Schedule[0].Kind]++
		if c.Verdict.Outcome != oracle.Pass || c.Verdict.Detected != "" {
			t.Errorf("%s", c)
		}
	}
	for _, k := range kinds {
		if perKind[k] == 0 {
			t.Errorf("no %s case ran", k)
		}
	}
	t.Logf("%d cases over %d golden beats: %v", len(cases), rn.golden().Len(), perKind)
}

// Under corruption the correct agent never diverges silently: its checksums send it back to the
// last good record and its stable keys make the redone steps harmless. The steps it redoes
// because a flipped bit destroyed their record are excused from bounded-work-lost, for a kill
// at the same beat would not redo them.
func TestCorrectAgentSurvivesCorruption(t *testing.T) {
	rn := runner(t, reference.Correct, reference.Onboarding(), campaign.Options{Options: sim.Options{Seed: 3}, Faults: []faults.Kind{faults.Corrupt}})
	excused := 0
	for _, c := range rn.explore(t) {
		if c.Verdict.Outcome != oracle.Pass {
			t.Errorf("%s", c)
		}
		if slices.ContainsFunc(c.Verdict.NotChecked, func(n string) bool { return strings.Contains(n, "what the corruption destroyed") }) {
			excused++
		}
	}
	if excused == 0 {
		t.Error("no case went back past a record a flipped bit destroyed: the excuse is not exercised")
	}
}

// simplerSchedules returns s without each of its faults, and s with each fault one beat earlier.
func simplerSchedules(s faults.Schedule) []faults.Schedule {
	var out []faults.Schedule
	for i := range s {
		if len(s) > 1 {
			out = append(out, slices.Delete(slices.Clone(s), i, i+1))
		}
		if s[i].Beat > 0 && (i == 0 || s[i-1].Beat < s[i].Beat-1) {
			c := slices.Clone(s)
			c[i].Beat--
			out = append(out, c)
		}
	}
	return out
}

func TestVariantNames(t *testing.T) {
	seen := map[string]bool{}
	for _, info := range reference.Variants() {
		a := reference.New(info.Variant, reference.Onboarding())
		if seen[a.Name()] {
			t.Errorf("duplicate name %s", a.Name())
		}
		seen[a.Name()] = true
		if info.Variant != reference.Correct && (len(info.CaughtBy) == 0 || len(info.Exposes) == 0 || info.Source == "") {
			t.Errorf("%s: incomplete description %+v", info.Variant, info)
		}
	}
	if len(seen) < 9 {
		t.Errorf("%d agents, want the reference and at least 8 variants", len(seen))
	}
	if !strings.HasPrefix(reference.New(reference.NoFsync, reference.Onboarding()).Name(), "reference/") {
		t.Error("variant names start with reference/")
	}
}

// A kill leaves a log record in the page cache, and the restarted process appends after it; a
// power cut that keeps the later record and loses the earlier damages the log for good, unless
// recovery fsyncs what it builds on first, as the reference does. (TestDepthTwo, under -tags
// campaigns, runs every such pair.)
func TestRecoveryMakesDurableWhatItBuildsOn(t *testing.T) {
	s, err := faults.ParseSchedule("kill@113,power@118:subset")
	if err != nil {
		t.Fatal(err)
	}
	if c := runner(t, reference.TrustsCache, reference.Onboarding(), campaign.Options{Options: sim.Options{Seed: 1}}).Run(s); !c.Breaks(oracle.Completes) || !strings.Contains(c.String(), "damaged and sound records follow it") {
		t.Errorf("trusts-page-cache under %s:\n%s", s, c)
	}
	rn := runner(t, reference.Correct, reference.Onboarding(), campaign.Options{Options: sim.Options{Seed: 1}})
	for _, k := range []int{113, 6, 84} {
		for _, j := range rn.Recovery(k) {
			for _, mode := range []string{"", "subset"} {
				s := faults.Schedule{{Kind: faults.Kill, Beat: k}, {Kind: faults.Power, Beat: j, Mode: mode}}
				if c := rn.Run(s); c.Verdict.Outcome != oracle.Pass {
					t.Errorf("%s", c)
				}
			}
		}
	}
}
