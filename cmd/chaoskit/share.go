package main

import (
	"flag"
	"fmt"

	"github.com/chaoskit/chaoskit/sim"
)

// addShareFlag adds --no-share to a command that runs campaigns.
func addShareFlag(fset *flag.FlagSet) *bool {
	return fset.Bool("no-share", false, "run every case's recovery, even where another case's crash left the same disk, world and clock (the report is the same either way)")
}

// shareText says how many of a campaign's cases were decided from another case's recovery, and
// from how many crash states.
func shareText(t sim.Tally) string {
	if t.Shared == 0 {
		return "no case shared a recovery"
	}
	states := fmt.Sprintf("%d distinct crash states", t.States)
	if t.StatesAtMost {
		states = fmt.Sprintf("at most %d distinct crash states", t.States)
	}
	return fmt.Sprintf("%d decided from the recovery of another case with the same crash state, %s; --no-share runs each", t.Shared, states)
}
