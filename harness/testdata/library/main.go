// Command library imports every package of chaoskit that a program may use as a library, for
// TestLibraryLinksNoTestingCode: none of them may link testing or rapid, or register flags.
package main

import (
	"fmt"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/chaoskit/chaoskit/sim"
)

func main() {
	fmt.Println(campaign.Exhaustive, faults.Kill, harness.ReadOnly, oracle.Pass, sim.BeatFS, reports.Schema)
}
