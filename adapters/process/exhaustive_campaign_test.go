//go:build campaigns

package process_test

import (
	"testing"

	"github.com/chaoskit/chaoskit/adapters/process"
	"github.com/chaoskit/chaoskit/faults"
)

// The Burr example on a FUSE disk passes every case of the exhaustive campaign of kill and
// power (about 700 cases: every one of SQLite's file operations), not only a sample: a kill
// half-way through a new database's first commit leaves a hot journal whose rollback truncates
// the database to nothing, which a FUSE disk served by a helper must carry as it is.
func TestBurrOnFUSEPassesEveryKillAndPowerCase(t *testing.T) {
	tg := burr.onFUSEDisk(t, process.AllBeats)
	n, _ := passesEveryCase(t, exampleRunner(t, "burr on fuse", tg), faults.Kill, faults.Power)
	t.Logf("%d cases", n)
}
