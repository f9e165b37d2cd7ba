package oracle_test

import (
	"fmt"

	"github.com/chaoskit/chaoskit/oracle"
)

// A restart that resubmitted a purchase order with a new idempotency key: the oracle counts the
// effect by what it does, so the order applied twice is a duplicate.
func ExampleCheck() {
	golden := &oracle.Observation{Completed: true, Result: "PO-1", Beats: 6,
		Effects:   []oracle.Effect{{Tool: "create_po", Identity: `create_po {"amount":84000}`, Beat: 3}},
		Processes: []oracle.Process{{First: true}}}
	faulty := &oracle.Observation{Completed: true, Result: "PO-2", Beats: 11,
		Effects: []oracle.Effect{
			{Tool: "create_po", Identity: `create_po {"amount":84000}`, Beat: 3},
			{Tool: "create_po", Identity: `create_po {"amount":84000}`, Beat: 8, Process: 1},
		},
		Processes: []oracle.Process{{First: true, Crashed: true}, {}}}
	v := oracle.Check(golden, faulty, oracle.Options{})
	fmt.Println(v.Outcome, v.Metrics.Duplicates)
	for _, viol := range v.Violations {
		fmt.Printf("%s: %s\n", viol.Property, viol.Detail)
	}
	// Output:
	// fail 1
	// no-duplicate-effects: create_po {"amount":84000} applied 2× (golden 1×) by the calls sent at beat 3 (process 0), beat 8 (process 1)
	// same-result: the result differs from the golden run's (-golden +faulty):
	// (value): -"PO-1" +"PO-2"
}
