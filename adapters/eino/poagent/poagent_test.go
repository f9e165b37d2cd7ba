package poagent_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/adapters/eino/poagent"
	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/chaoskittest"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/chaoskit/chaoskit/sim"
)

var (
	update   = flag.Bool("update", false, "rewrite testdata/findings.txt and testdata/findings-ext4-ordered.txt")
	variant  = flag.String("variant", "correct", "TestReplay: the variant")
	schedule = flag.String("schedule", "", "TestReplay: the schedule to replay, e.g. kill@25")
)

// kinds are the fault kinds the agent is explored under: every storage kind, every tool kind
// and every model kind.
var kinds = []faults.Kind{
	faults.Kill, faults.Power, faults.Torn, faults.DiskFull, faults.FsyncFail, faults.Corrupt,
	faults.ToolTransient, faults.ToolAmbiguous, faults.ToolTimeout,
	faults.ModelRateLimit, faults.ModelError, faults.ModelContext, faults.ModelHang,
}

// replay returns the command that replays a case of variant v.
func replay(v poagent.Variant) func(faults.Schedule) string {
	return func(s faults.Schedule) string {
		return fmt.Sprintf("(cd adapters/eino && go test ./poagent -run TestReplay -v -args -variant=%s -schedule=%s)", v, s)
	}
}

func target(v poagent.Variant) func() harness.Target { return harness.Fresh(poagent.New(v)) }

// The correct configuration (eino.Store, an interrupt after every node, keys from the run and
// the tool call id) passes every case of every storage, tool and model fault.
func TestCorrectPassesEveryFault(t *testing.T) {
	chaoskittest.Check(t, target(poagent.Correct), campaign.Options{Faults: kinds})
}

// The findings: every variant under every fault kind, summed up one row per variant and fault
// kind (testdata/findings.txt, rewritten with -update). The correct variant passes every case;
// every other is caught, by the property its mistake breaks.
func TestFindings(t *testing.T) {
	rep := findingsOf(t, faults.POSIX, kinds, "findings.txt")

	// Which property catches which mistake, and under which fault.
	caught := map[string]map[string]string{ // target → fault → property
		"eino/memory-store": {"kill": oracle.NoDuplicateEffects, "power": oracle.NoDuplicateEffects, "tool-ambiguous": oracle.NoDuplicateEffects, "model-error": oracle.NoDuplicateEffects},
		"eino/end-only":     {"kill": oracle.NoDuplicateEffects, "power": oracle.NoDuplicateEffects, "tool-ambiguous": oracle.NoDuplicateEffects},
		"eino/no-key":       {"kill": oracle.NoDuplicateEffects, "power": oracle.NoDuplicateEffects, "tool-ambiguous": oracle.NoDuplicateEffects},
		"eino/no-fsync":     {"kill": oracle.Completes, "power": oracle.BoundedWorkLost},
	}
	for _, ts := range rep.Summary.Targets {
		if ts.Target == "eino/correct" {
			if ts.Failed+ts.Unknown != 0 || ts.Cases == 0 {
				t.Errorf("the correct configuration: %d cases, %d failed, %d unknown", ts.Cases, ts.Failed, ts.Unknown)
			}
			continue
		}
		for fault, prop := range caught[ts.Target] {
			if ts.ByFault[fault].Violations[prop] == 0 {
				t.Errorf("%s is not caught by %s under %s", ts.Target, prop, fault)
			}
		}
	}
}

// The same under ext4's persistence model (faults.Ext4Ordered), for the faults it changes, power
// and torn (testdata/findings-ext4-ordered.txt): the correct configuration passes; the mistakes
// with no disk in them are caught as under POSIX, and so is the store written without an fsync
// (ext4 keeps a checkpoint rewritten in place, truncated to zero, empty or partial).
func TestFindingsExt4Ordered(t *testing.T) {
	rep := findingsOf(t, faults.Ext4Ordered, []faults.Kind{faults.Power, faults.Torn}, "findings-ext4-ordered.txt")
	caught := map[string]string{"eino/memory-store": oracle.NoDuplicateEffects, "eino/end-only": oracle.NoDuplicateEffects,
		"eino/no-key": oracle.NoDuplicateEffects, "eino/no-fsync": oracle.BoundedWorkLost}
	for _, ts := range rep.Summary.Targets {
		if ts.Target == "eino/correct" {
			if ts.Failed+ts.Unknown != 0 || ts.Cases == 0 {
				t.Errorf("the correct configuration under ext4-ordered: %d cases, %d failed, %d unknown", ts.Cases, ts.Failed, ts.Unknown)
			}
			continue
		}
		if prop := caught[ts.Target]; ts.ByFault[string(faults.Power)].Violations[prop] == 0 {
			t.Errorf("%s is not caught by %s under power on ext4-ordered", ts.Target, prop)
		}
	}
}

// findingsOf runs every variant under kinds and model and compares the table of its findings with
// testdata/file (which -update rewrites). It returns the report.
func findingsOf(t *testing.T, model faults.FSModel, kinds []faults.Kind, file string) *reports.Report {
	t.Helper()
	c := campaign.Campaign{Options: campaign.Options{Faults: kinds}}
	c.Options.FSModel = model
	for _, v := range poagent.Variants {
		c.Targets = append(c.Targets, campaign.Target{Name: "eino/" + string(v), New: target(v),
			Repro: func(_ uint64, s faults.Schedule) string { return replay(v)(s) }})
	}
	rep, err := c.Run(context.Background(), campaign.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := findings(rep, kinds)
	t.Logf("\n%s", got)
	path := filepath.Join("testdata", file)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("the findings changed (go test ./poagent -run TestFindings -update rewrites them):\n%s", got)
	}
	return rep
}

// findings writes the report's summary as a table, one row per target and fault kind.
func findings(rep *reports.Report, kinds []faults.Kind) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-18s %-15s %5s %6s %4s %4s %8s %6s  %s\n", "configuration", "fault", "cases", "failed", "dup", "lost", "wl_mean", "remade", "verdict")
	for _, ts := range rep.Summary.Targets {
		for _, k := range kinds {
			s, ok := ts.ByFault[string(k)]
			if !ok {
				fmt.Fprintf(&b, "%-18s %-15s %5d %6s %4s %4s %8s %6s  %s\n", ts.Target, k, 0, "-", "-", "-", "-", "-", "no case: no beat where it applies")
				continue
			}
			fmt.Fprintf(&b, "%-18s %-15s %5d %6d %4d %4d %8.2f %6d  %s\n", ts.Target, k, s.Cases, s.Failed, s.Duplicates, s.LostEffects, s.WorkLostBeatsMean, s.ModelCallsRemade, verdict(s))
		}
	}
	return b.String()
}

func verdict(s reports.Stats) string {
	var parts []string
	if s.Failed == 0 && s.Unknown == 0 {
		parts = append(parts, "passes")
	} else {
		var props []string
		for p, n := range s.Violations {
			props = append(props, fmt.Sprintf("%s ×%d", p, n))
		}
		sort.Strings(props)
		if len(props) > 0 {
			parts = append(parts, "caught: "+strings.Join(props, ", "))
		}
	}
	if s.Unknown > 0 {
		parts = append(parts, fmt.Sprintf("unknown ×%d", s.Unknown))
	}
	if s.Detected > 0 {
		parts = append(parts, fmt.Sprintf("detected ×%d", s.Detected))
	}
	return strings.Join(parts, "; ")
}

// beat returns the first beat of the golden run whose label starts with prefix, after beat from.
func beat(t *testing.T, g *sim.Golden, from int, prefix string) int {
	t.Helper()
	for i := from; i < g.Len(); i++ {
		if strings.HasPrefix(g.Beat(i).Label(), prefix) {
			return i
		}
	}
	t.Fatalf("no beat %q after %d in %s", prefix, from, strings.Join(g.Trace(), "\n"))
	return -1
}

// What a crash inside a node and between nodes does, with an interrupt after every node:
//   - inside the order node, after create_po was applied and before its reply: the restart
//     resumes from the checkpoint after decide and runs order again; the model's message comes
//     from the checkpoint, so the call has the same id and key, and the world answers with the
//     first reply: no duplicate, no model call made again, one beat of work lost;
//   - between order and report, before the checkpoint's rename: the same;
//   - after the rename, before the directory's fsync: a kill keeps the new checkpoint (the
//     restart goes on with report); a power loss takes the rename back (order runs again);
//   - the same crashes with EndOnly, whose first checkpoint is after order: the restart runs
//     the graph from the start, the model is asked again and makes up a new call id, and the
//     order goes out again under a new key.
func TestKillBetweenAndInsideNodes(t *testing.T) {
	type want struct {
		dup, remade, workLost int
	}
	for _, tc := range []struct {
		v      poagent.Variant
		fault  faults.Kind
		at     []string // the beat: the first label starting with at[0], then at[1] after it...
		expect want
	}{
		{poagent.Correct, faults.Kill, []string{"tool create_po", "tool create_po"}, want{0, 0, 1}},
		{poagent.Correct, faults.Kill, []string{"tool create_po", "fs.rename"}, want{0, 0, 5}},
		{poagent.Correct, faults.Kill, []string{"tool create_po", "fs.syncdir"}, want{0, 0, 6}},
		{poagent.Correct, faults.Power, []string{"tool create_po", "fs.syncdir"}, want{0, 0, 6}},
		{poagent.EndOnly, faults.Kill, []string{"tool create_po", "tool create_po"}, want{1, 2, 5}},
		{poagent.EndOnly, faults.Kill, []string{"tool create_po", "fs.rename"}, want{1, 2, 11}},
		{poagent.NoKey, faults.Kill, []string{"tool create_po", "tool create_po"}, want{1, 0, 1}},
	} {
		rn, err := sim.NewRunner(target(tc.v), sim.Options{Name: string(tc.v), Repro: replay(tc.v)})
		if err != nil {
			t.Fatal(err)
		}
		g, _ := rn.Golden(nil)
		k := 0
		for i, p := range tc.at {
			if i > 0 {
				k++
			}
			k = beat(t, g, k, p)
		}
		c := rn.Run(faults.Schedule{{Kind: tc.fault, Beat: k}})
		m := c.Verdict.Metrics
		got := want{m.Duplicates, m.ModelCallsRemade, m.WorkLostBeats}
		if got != tc.expect || m.Restarts != 1 {
			t.Errorf("%s %s@%d (%s): duplicates, model calls remade, work lost = %v, want %v\n%s", tc.v, tc.fault, k, g.Beat(k).Label(), got, tc.expect, c)
		}
	}
}

// TestReplay replays one case: go test ./poagent -run TestReplay -v -args -variant=no-key
// -schedule=kill@25 prints what happened, beat by beat around the fault.
func TestReplay(t *testing.T) {
	if *schedule == "" {
		t.Skip("give -args -variant=V -schedule=S")
	}
	v := poagent.Variant(*variant)
	if !slices.Contains(poagent.Variants, v) {
		t.Fatalf("no variant %q: %v", v, poagent.Variants)
	}
	s, err := faults.ParseSchedule(*schedule)
	if err != nil {
		t.Fatal(err)
	}
	rn, err := sim.NewRunner(target(v), sim.Options{Name: "eino/" + string(v), Repro: replay(v)})
	if err != nil {
		t.Fatal(err)
	}
	g, err := rn.Golden(s)
	if err != nil {
		t.Fatal(err)
	}
	c := rn.Run(s)
	c.RequireAll(g.Len())
	t.Logf("%s\nresult: %v", c, c.Result)
}
