package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/faults"
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
			c := &reports.Case{Target: "reference", ID: "reference:" + schedule, Index: i, Schedule: faults.MustParseSchedule(schedule),
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

// damage writes, each into a directory of its own under dir, the report.json at path cut short at
// ten points (from its first byte to its last newline) and altered in one byte of its summary
// and one of its cases, each altered report still well formed, saying something else, and
// returns the report.json files written.
func damage(t *testing.T, path, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := len(b)
	var versions [][]byte
	for _, cut := range []int{1, n / 8, n / 4, 3 * n / 8, n / 2, 5 * n / 8, 3 * n / 4, 7 * n / 8, n - 40, n - 1} {
		versions = append(versions, b[:cut])
	}
	// The last digit of the first count of failures (in the summary), and the first duplicate
	// of a case: either changed, the report still reads, and says something else.
	failed := bytes.Index(b, []byte(`"failed": `)) + len(`"failed": `)
	for b[failed+1] >= '0' && b[failed+1] <= '9' {
		failed++
	}
	dup := bytes.Index(b, []byte(`"cases": [`))
	dup += bytes.Index(b[dup:], []byte(`"duplicates": 1`)) + len(`"duplicates": `)
	for _, at := range []int{failed, dup} {
		v := bytes.Clone(b)
		v[at] = '0' + (v[at]-'0'+1)%10
		if !json.Valid(v) {
			t.Fatalf("the report altered at byte %d is not JSON: a test of the checksum would prove nothing", at)
		}
		versions = append(versions, v)
	}
	var out []string
	for i, v := range versions {
		d := filepath.Join(dir, fmt.Sprint("damaged", i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(d, "report.json")
		if err := os.WriteFile(p, v, 0o644); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// A report cut short anywhere, or with one byte changed, is never judged: gate (the report, or
// either side of --baseline), merge (any of its shards) and replay --case refuse it, exit 2,
// with one line naming its file; merge writes nothing.
func TestDamagedReportsAreRefused(t *testing.T) {
	whole := campaignDir(t, actThenSave...)
	good := filepath.Join(whole.dir, "report.json")
	dir := t.TempDir()
	var shards []string
	for _, s := range []string{"1/2", "2/2"} {
		out := filepath.Join(dir, "shard"+s[:1])
		shards = append(shards, out)
		if code, _, errOut := chaoskit(t, append([]string{"run", "--shard", s, "--out", out, "--format", "json"}, actThenSave...)...); code != exitFail {
			t.Fatalf("shard %s: exit %d: %s", s, code, errOut)
		}
	}
	rep := loadDir(t, whole.dir)
	id := rep.Cases[len(rep.Cases)/2].ID
	refused := func(bad string, args ...string) {
		t.Helper()
		code, out, errOut := chaoskit(t, args...)
		if code != exitUsage || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, bad+": ") ||
			!strings.Contains(errOut, "truncated or altered") && !strings.Contains(errOut, "not a chaoskit report") {
			t.Errorf("chaoskit %q: exit %d, stderr %q; want exit 2 and one line naming %s\n%s", args, code, errOut, bad, out)
		}
	}
	for _, bad := range damage(t, good, filepath.Join(dir, "whole")) {
		refused(bad, "gate", "--gate", "failed==0", bad)
		refused(bad, "gate", "--gate", "failed==0", filepath.Dir(bad))
		refused(bad, "gate", "--baseline", bad, good)
		refused(bad, "gate", "--baseline", good, bad)
		refused(bad, "replay", "--case", id, bad)
	}
	for _, bad := range damage(t, filepath.Join(shards[1], "report.json"), filepath.Join(dir, "shard2")) {
		merged := filepath.Join(dir, "merged")
		refused(bad, "merge", "--out", merged, shards[0], filepath.Dir(bad))
		if _, err := os.Stat(merged); err == nil {
			t.Fatalf("merge of a damaged shard wrote %s", merged)
		}
	}
	// The undamaged ones are judged.
	if code, _, errOut := chaoskit(t, "gate", "--baseline", good, "--gate", "failed<=30", good); code != exitOK {
		t.Errorf("gate of the report whole: exit %d: %s", code, errOut)
	}
	if code, _, errOut := chaoskit(t, append([]string{"merge", "--out", filepath.Join(dir, "merged")}, shards...)...); code != exitFail {
		t.Errorf("merge of the shards whole: exit %d: %s", code, errOut)
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
