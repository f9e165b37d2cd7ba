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
func syntheticReport(t *testing.T, n int) string {
	t.Helper()
	rep := &reports.Report{Schema: reports.Schema, Seed: 1,
		Options: reports.Options{Targets: []string{"reference"}, Mode: "random", Faults: []string{"kill"}, Cases: n}}
	rep.Source = func(fn func(*reports.Case) error) error {
		for i := range n {
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
	path := syntheticReport(t, 400)
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

// What gate and replay --case hold of a report does not grow with its cases: the live heap after
// loading its summary, and while finding a case and once it is found, measured at two sizes of
// a synthetic report. Loading the cases would hold over a kilobyte a case.
func TestGateAndReplayMemoryIsFlatInCases(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a report of 20,000 cases")
	}
	live := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	peak := func(n int) uint64 {
		path := syntheticReport(t, n)
		base := live()
		rep, err := loadSummary(path)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Summary.Targets[0].Cases != n {
			t.Fatalf("summary of %d cases, want %d", rep.Summary.Targets[0].Cases, n)
		}
		most := live()
		source, read := rep.Source, 0
		rep.Source = func(fn func(*reports.Case) error) error {
			return source(func(c *reports.Case) error {
				if read++; read%1000 == 0 {
					most = max(most, live())
				}
				return fn(c)
			})
		}
		c, err := findCase(rep, syntheticID)
		if err != nil || c == nil || c.Index != n/2 {
			t.Fatalf("findCase: %+v, %v", c, err)
		}
		most = max(most, live())
		runtime.KeepAlive(rep)
		runtime.KeepAlive(c)
		return most - min(most, base)
	}
	small, large := 2000, 20000
	a, b := peak(small), peak(large)
	perCase := (float64(b) - float64(a)) / float64(large-small)
	t.Logf("live heap %d KiB over the base at %d cases, %d KiB at %d: %.1f bytes per case", a>>10, small, b>>10, large, perCase)
	if perCase > 50 {
		t.Errorf("the live heap grows by %.0f bytes per case; want none", perCase)
	}
}
