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
)

func main() {
	fmt.Println(campaign.Exhaustive, faults.Kill, harness.BeatFS, oracle.Pass, reports.Schema)
}
