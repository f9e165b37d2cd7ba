package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/reports"
)

// syntheticID is the ID of the case of syntheticReport that replays: its middle one.
const syntheticID = "reference:kill@3"

// syntheticReport writes, to a report.json in a new directory, a report of n cases (n ≥ 2) of
// the reference target, each with a trace of a kilobyte or so, the middle one of which replays
// (syntheticID), and returns its path. The cases are made one at a time as they are written.
// With a shard ("I/N"), the report is that shard's, which holds the cases it holds of the n.
func syntheticReport(t *testing.T, n int, shard string) string {
	t.Helper()
	rep := &reports.Report{Schema: reports.Schema, Seed: 1,
		Options: reports.Options{Targets: []string{"reference"}, Mode: "random", Faults: []string{"kill"}, Cases: n, Shard: shard}}
	sh, err := reports.ParseShard(shard)
	if err != nil {
		t.Fatal(err)
	}
	rep.Source = func(fn func(*reports.Case) error) error {
		for i := range n {
			if !sh.Holds(i) {
				continue
			}
			schedule := fmt.Sprintf("kill@%d", 1000+i)
			if i == n/2 {
				schedule = "kill@3"
			}
			c := &reports.Case{Target: "reference", ID: "reference:" + schedule, Index: i, Schedule: schedule,
				Verdict: oracle.Pass, Repro: "chaoskit replay --target reference --schedule " + schedule}
			for b := range 16 {
				c.Trace = append(c.Trace, reports.TraceBeat{Beat: b, Label: strings.Repeat("x", 40)})
			}
			if err := fn(c); err != nil {
				return err
			}
		}
		return nil
	}
	if err := rep.Summarize(map[string]int{"reference": 159}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "report.json")
	if err := rep.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// gate and replay --case read a report's summary and no case (gate), or its cases one at a time
// up to the one replayed (replay): a report damaged in its cases after that one still gates and
// replays, and only a case that is not there reads through to the damage.
func TestGateAndReplayReadNoCaseTheyDoNotNeed(t *testing.T) {
	path := syntheticReport(t, 400, "")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	damaged := filepath.Join(t.TempDir(), "report.json")
	if err := os.WriteFile(damaged, []byte(strings.Replace(string(b), `"index": 300,`, `"index": "three hundred",`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, damaged} {
		if code, out, errOut := chaoskit(t, "gate", "--gate", "cases==400,failed==0", "--baseline", p, p); code != exitOK ||
			!strings.Contains(out, "no regression against") || !strings.Contains(out, "gate held: 4 comparisons") {
			t.Errorf("gate %s: exit %d\n%s%s", p, code, out, errOut)
		}
		if code, out, errOut := chaoskit(t, "replay", "--case", syntheticID, p); code == exitUsage || !strings.Contains(out, "verdict") {
			t.Errorf("replay --case %s: exit %d\n%s%s", p, code, out, errOut)
		}
	}
	code, _, errOut := chaoskit(t, "replay", "--case", "reference:kill@99999", damaged)
	if code != exitUsage || !strings.Contains(errOut, damaged+": malformed") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("replay --case of a case past the damage: exit %d, stderr %q", code, errOut)
	}
}

// liveHeap returns the bytes of the heap in use after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// sampled wraps rep's Source so that it raises *most to the live heap every 1,000 cases it
// reads.
func sampled(rep *reports.Report, most *uint64) {
	source, read := rep.Source, 0
	rep.Source = func(fn func(*reports.Case) error) error {
		return source(func(c *reports.Case) error {
			if read++; read%1000 == 0 {
				*most = max(*most, liveHeap())
			}
			return fn(c)
		})
	}
}

// flatInCases fails the test if the most live heap above its start that peak measures at a
// report of n cases grows by more than a few bytes a case from 2,000 cases to 20,000: holding
// the cases would take over a kilobyte each.
func flatInCases(t *testing.T, what string, peak func(n int) uint64) {
	t.Helper()
	small, large := 2000, 20000
	a, b := peak(small), peak(large)
	perCase := (float64(b) - float64(a)) / float64(large-small)
	t.Logf("%s: live heap %d KiB over the start at %d cases, %d KiB at %d: %.1f bytes per case", what, a>>10, small, b>>10, large, perCase)
	if perCase > 50 {
		t.Errorf("%s: the live heap grows by %.0f bytes per case; want none", what, perCase)
	}
}

// The shards chaoskit writes merge as they stream: their cases are in campaign order and their
// options list their targets.
func TestChaoskitShardsMergeAsTheyStream(t *testing.T) {
	dir := t.TempDir()
	var shards []*reports.Report
	for _, s := range []string{"1/2", "2/2"} {
		out := filepath.Join(dir, "shard"+s[:1])
		args := []string{"run", "--target", "reference/act-then-save,reference", "--faults", "kill", "--shard", s, "--format", "json", "--out", out}
		if code, _, errOut := chaoskit(t, args...); code != exitOK && code != exitFail {
			t.Fatalf("shard %s: exit %d: %s", s, code, errOut)
		}
		r, err := loadSummary(out)
		if err != nil {
			t.Fatal(err)
		}
		shards = append(shards, r)
	}
	if rep, err := reports.Merge(shards...); err != nil || rep.Source == nil {
		t.Fatalf("Merge: %v; streams %v", err, rep != nil && rep.Source != nil)
	}
}
