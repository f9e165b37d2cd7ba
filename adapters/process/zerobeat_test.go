package process_test

import (
	"testing"

	"github.com/chaoskit/chaoskit/adapters/process"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
)

// A process that makes no beat and exits 0 (issue 17's "zero-beat exit", seen once in 153 FUSE
// diskfull cases) is a recovery that finds all the work durable: the process before it was
// crashed, or failed, after its last step's checkpoint (a kill at the final mark, a full disk
// after the last commit). It reads the checkpoint, which is no beat, sends done and exits. In
// random campaigns of kill and diskfull over the test child, Burr and Node on FUSE, every such
// process came after a crash at one of the last beats; none came from a start-up race (the mount
// and the socket are in place before the command starts). Here, on both disks and 20 times in a
// row, the recovery of a kill at the last mark makes no beat, completes with the golden result,
// and the case passes.
func TestRecoveryThatFindsTheWorkDoneMakesNoBeat(t *testing.T) {
	for _, disk := range []process.Disk{process.Plain, process.FUSE} {
		t.Run(string(disk), func(t *testing.T) {
			tg := child("correct")
			if disk == process.FUSE {
				tg = onFUSE(t, "correct")
			}
			rn, err := newRunner(t, tg, sim.Options{})
			if err != nil {
				t.Fatal(err)
			}
			g, _ := rn.Golden(nil)
			last := g.Len() - 1
			if b := g.Beat(last); b.Kind != sim.BeatMark {
				t.Fatalf("the golden run's last beat is %s, not the final mark", b.Label())
			}
			for range 20 {
				c := rn.Run(faults.Schedule{{Kind: faults.Kill, Beat: last}})
				m := c.Verdict.Metrics
				if c.Verdict.Outcome != oracle.Pass || m.Restarts != 1 || m.Beats != g.Len() {
					t.Fatalf("restarts %d, beats %d (golden %d): want one restart that made no beat and passed:\n%s", m.Restarts, m.Beats, g.Len(), c)
				}
			}
		})
	}
}

// A command's golden run is bounded at process.DefaultMaxBeats unless the campaign sets a bound:
// its every beat is a round trip, so the in-process default took a minute or two to refuse one
// that never ends.
func TestCommandsHaveALowerDefaultBound(t *testing.T) {
	for _, disk := range []process.Disk{process.Plain, process.FUSE} {
		for _, beats := range []process.Beats{"", process.CallBeats} {
			if disk == process.Plain && beats != "" {
				continue
			}
			if got := (process.Target{Argv: []string{"true"}, Disk: disk, Beats: beats}).Limits().MaxBeats; got != process.DefaultMaxBeats {
				t.Errorf("disk %s, beats %q: Limits().MaxBeats = %d, want %d", disk, beats, got, process.DefaultMaxBeats)
			}
		}
	}
	if process.DefaultMaxBeats >= sim.DefaultMaxBeats {
		t.Errorf("a command's default bound, %d, is not below the in-process one, %d", process.DefaultMaxBeats, sim.DefaultMaxBeats)
	}
}
