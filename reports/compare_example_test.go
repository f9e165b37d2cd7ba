package reports_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/spf13/afero"

	"github.com/chaoskit/chaoskit/oracle"
)

// twoCases returns a report of two cases of one target, the second with the given duplicates.
func twoCases(dups int, shard string, cases ...int) *reports.Report {
	r := &reports.Report{Schema: reports.Schema, Seed: 7,
		Options: reports.Options{Targets: []string{"agent"}, Mode: "exhaustive", Faults: []string{"kill"}, Shard: shard}}
	for _, i := range cases {
		c := reports.Case{Target: "agent", ID: fmt.Sprintf("agent:kill@%d", i), Index: i, Schedule: faults.MustParseSchedule(fmt.Sprintf("kill@%d", i)),
			Verdict: oracle.Pass, Violations: []oracle.Violation{}, Metrics: oracle.Metrics{WorkLostBeats: i}}
		if i == 1 && dups > 0 {
			c.Verdict, c.Duplicates = oracle.Fail, dups
			c.Violations = []oracle.Violation{{Property: "no-duplicate-effects", Detail: "create_po applied twice"}}
		}
		r.Cases = append(r.Cases, c)
	}
	r.Summarize(map[string]int{"agent": 12})
	return r
}

// A change that brings duplicates back is a regression, on the target's totals and on its
// fault kind's; a tolerance can allow some.
func ExampleCompare() {
	before, after := twoCases(0, "", 0, 1), twoCases(2, "", 0, 1)
	for _, g := range reports.Compare(before, after, reports.CompareOptions{}) {
		fmt.Println(g)
	}
	allow := reports.CompareOptions{Default: reports.Tolerance{Abs: 2}}
	fmt.Println(len(reports.Compare(before, after, allow)), "regressions with a tolerance of 2")
	// Output:
	// agent: failed 0 → 1 (allowed 0)
	// agent: duplicates 0 → 2 (allowed 0)
	// agent: no-duplicate-effects 0 → 1 (allowed 0)
	// agent [kill]: failed 0 → 1 (allowed 0)
	// agent [kill]: duplicates 0 → 2 (allowed 0)
	// agent [kill]: no-duplicate-effects 0 → 1 (allowed 0)
	// 0 regressions with a tolerance of 2
}

// The shards of a campaign merge into the report the whole campaign writes.
func ExampleMerge() {
	whole := twoCases(1, "", 0, 1, 2)
	merged, err := reports.Merge(twoCases(1, "2/2", 1), twoCases(1, "1/2", 0, 2))
	if err != nil {
		panic(err)
	}
	a, _ := whole.Marshal()
	b, _ := merged.Marshal()
	fmt.Println(string(a) == string(b))
	_, err = reports.Merge(twoCases(1, "1/2", 0, 2))
	fmt.Println(err)
	// Output:
	// true
	// shard 2/2 is missing
}

func ExampleParseShard() {
	s, err := reports.ParseShard("2/3")
	fmt.Println(s, err, s.Holds(1), s.Holds(2), s.Holds(4))
	_, err = reports.ParseShard("4/3")
	fmt.Println(err)
	// Output:
	// 2/3 <nil> true false true
	// shard "4/3": want I/N with 1 ≤ I ≤ N, like 1/4
}

func ExampleStats_Value() {
	r := twoCases(3, "", 0, 1, 2)
	s := r.Summary.Targets[0].Stats
	for _, name := range []string{"cases", "duplicates", "work_lost_beats_mean", "no-duplicate-effects"} {
		v, ok := s.Value(name)
		fmt.Println(name, v, ok)
	}
	fmt.Println(reports.StatFields()[:3])
	// Output:
	// cases 3 true
	// duplicates 3 true
	// work_lost_beats_mean 1 true
	// no-duplicate-effects 0 false
	// [cases passed failed]
}

func ExampleRegressionMetrics() {
	fmt.Println(reports.RegressionMetrics())
	// Output:
	// [failed unknown duplicates lost_effects phantom_effects state_mismatches work_lost_beats_mean work_lost_beats_max resume_beats_mean model_calls_remade failed_processes refused]
}

// WriteAtomic replaces a file whole or not at all, through a temporary file and a rename.
func ExampleWriteAtomic() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "summary.md")
	for _, text := range []string{"# old\n", "# new\n"} {
		if err := reports.WriteAtomic(afero.NewOsFs(), path, []byte(text)); err != nil {
			panic(err)
		}
	}
	b, _ := os.ReadFile(path)
	entries, _ := os.ReadDir(dir)
	fmt.Printf("%q, %d file\n", b, len(entries))
	// Output:
	// "# new\n", 1 file
}

// SortCases puts cases in campaign order, whatever order they finished in.
func ExampleReport_SortCases() {
	r := twoCases(0, "", 2, 0, 1)
	r.SortCases()
	for _, c := range r.Cases {
		fmt.Print(c.ID, " ")
	}
	fmt.Println()
	// Output:
	// agent:kill@0 agent:kill@1 agent:kill@2
}

// A file created in a directory survives a power loss once the directory is synced.
func ExampleSyncDir() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "cases.jsonl"), []byte("{}\n"), 0o644)
	fmt.Println(reports.SyncDir(afero.NewOsFs(), dir))
	fmt.Println(reports.SyncDir(afero.NewOsFs(), filepath.Join(dir, "missing")) != nil)
	// Output:
	// <nil>
	// true
}

func ExampleStatFields() {
	fmt.Println(reports.StatFields())
	// Output:
	// [cases passed failed unknown detected unfired refused duplicates lost_effects phantom_effects state_mismatches work_lost_beats_mean work_lost_beats_max resume_beats_mean restarts failed_processes model_calls_remade stranded duplicated replanned]
}
