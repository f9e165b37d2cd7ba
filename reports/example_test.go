package reports_test

import (
	"bytes"
	"fmt"
	"os"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/reports"

	"github.com/chaoskit/chaoskit/oracle"
)

// A campaign over two targets: one that survives every fault, and one that applies a tool call
// again after a crash.
func ExampleReport_Markdown() {
	repro := func(target, schedule string) string {
		return "chaoskit replay --target " + target + " --seed 7 --schedule '" + schedule + "'"
	}
	pass := func(target, schedule string, workLost int) reports.Case {
		return reports.Case{Target: target, ID: target + ":" + schedule, Schedule: faults.MustParseSchedule(schedule), Verdict: oracle.Pass,
			Metrics: oracle.Metrics{Restarts: 1, WorkLostBeats: workLost}, Repro: repro(target, schedule)}
	}
	r := &reports.Report{
		Schema:  reports.Schema,
		Seed:    7,
		Options: reports.Options{Mode: "exhaustive", Faults: []string{"kill", "power"}},
		Cases: []reports.Case{
			pass("agent", "kill@3", 1),
			pass("agent", "power@3", 2),
			pass("agent/act-then-save", "kill@3", 1),
			{
				Target: "agent/act-then-save", ID: "agent/act-then-save:kill@9", Schedule: faults.MustParseSchedule("kill@9"),
				Verdict: oracle.Fail,
				Violations: []oracle.Violation{
					{Property: "no-duplicate-effects", Detail: "create_po applied 2× (golden 1×) by the calls sent at beat 8 (process 0), beat 11 (process 1)"},
					{Property: "same-state", Detail: "the state differs from the golden run's (-golden +faulty):\n-  Orders: 1,\n+  Orders: 2,"},
				},
				Metrics:          oracle.Metrics{Restarts: 1, WorkLostBeats: 3, Duplicates: 1, StateMismatch: true},
				DuplicatesByTool: map[string]int{"create_po": 1},
				Repro:            repro("agent/act-then-save", "kill@9"),
			},
		},
	}
	r.Summarize(map[string]int{"agent": 12, "agent/act-then-save": 12})
	if err := r.Markdown(os.Stdout); err != nil {
		panic(err)
	}
	// Output:
	// # chaoskit report
	//
	// seed 7 · mode exhaustive · faults kill, power
	//
	// **4 cases over 2 targets: 3 passed (0 detected), 1 failed, 0 unknown**
	//
	// ## Targets
	//
	// | target | cases | passed | failed | unknown | detected | duplicates | lost effects | phantom effects | state mismatches | mean work lost (beats) | properties violated |
	// | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |
	// | agent | 2 | 2 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 1.50 | — |
	// | agent/act-then-save | 2 | 1 | 1 | 0 | 0 | 1 | 0 | 0 | 1 | 2.00 | no-duplicate-effects ×1, same-state ×1 |
	//
	// ## By fault kind
	//
	// | fault kind | cases | failed | unknown | detected | duplicates | lost effects | state mismatches | mean work lost (beats) |
	// | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
	// | kill | 3 | 1 | 0 | 0 | 1 | 0 | 1 | 1.67 |
	// | power | 1 | 0 | 0 | 0 | 0 | 0 | 0 | 2.00 |
	//
	// ## Failures
	//
	// ### agent/act-then-save: 1 failed
	//
	// - `kill@9` — no-duplicate-effects: create\_po applied 2× (golden 1×) by the calls sent at beat 8 (process 0), beat 11 (process 1) (+1 more)\
	//   replay: `chaoskit replay --target agent/act-then-save --seed 7 --schedule 'kill@9'`
}

// Two runs of one campaign write the same report but for their wall-clock fields (and the
// trailer, whose checksum covers them): Comparable leaves those out.
func ExampleComparable() {
	first := []byte(`{"schema": "chaoskit.report/v2", "seed": 1, "cases": [{"id": "t:kill@1", "duration_ms": 12.5}], "duration_ms": 40, "trailer": {"cases": 1, "sha256": "ab"}}`)
	second := []byte(`{"schema": "chaoskit.report/v2", "seed": 1, "cases": [{"id": "t:kill@1", "duration_ms": 9.1}], "duration_ms": 31, "trailer": {"cases": 1, "sha256": "cd"}}`)
	a, _ := reports.Comparable(first)
	b, _ := reports.Comparable(second)
	fmt.Println(bytes.Equal(a, b))
	fmt.Println(string(a))
	// Output:
	// true
	// {
	//   "cases": [
	//     {
	//       "id": "t:kill@1"
	//     }
	//   ],
	//   "schema": "chaoskit.report/v2",
	//   "seed": 1
	// }
}
