package process_test

import (
	"os"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/adapters/process"
	"github.com/chaoskit/chaoskit/adapters/process/fusefs"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/internal/needs"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
)

// onFUSE returns the test child in mode with its state directory mounted over the fault disk,
// or skips the test (fails it under CI=true) when this machine cannot mount.
func onFUSE(t *testing.T, mode string) process.Target {
	t.Helper()
	needs.Err(t, fusefs.Available())
	target := child(mode)
	target.Disk = process.FUSE
	return target
}

// noChaoskitMounts fails the test if a mount of this test process's campaigns is left: one
// under its TMPDIR (TestMain's directory); another chaoskit's, running beside, is not its.
func noChaoskitMounts(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[2] == "fuse.chaoskit" && strings.HasPrefix(f[1], os.TempDir()+"/") {
			t.Errorf("a mount is left: %s", line)
		}
	}
}

// On a FUSE disk every file operation of the command is a beat, and every storage fault
// applies to its real files: the correct child, which fsyncs its checkpoint and its directory,
// survives kill, power, torn, diskfull and fsyncfail at every beat. (It keeps no checksum, so a
// flipped bit, corrupt, would become its state: it is left out.)
func TestFUSEChildSurvivesEveryStorageFault(t *testing.T) {
	rn, err := newRunner(t, onFUSE(t, "correct"), sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer noChaoskitMounts(t)
	g, _ := rn.Golden(nil)
	trace := strings.Join(g.Trace(), "|")
	for _, want := range []string{"fs.create orders.json.tmp", "fs.sync orders.json.tmp", "fs.rename orders.json.tmp -> orders.json", "fs.syncdir ."} {
		if !strings.Contains(trace, want) {
			t.Errorf("the golden trace lacks %q:\n%s", want, trace)
		}
	}
	storage := []faults.Kind{faults.Kill, faults.Power, faults.Torn, faults.DiskFull, faults.FsyncFail}
	cases := explore(t, rn, storage...)
	kinds := map[faults.Kind]int{}
	for _, c := range cases {
		kinds[c.Schedule[0].Kind]++
		if c.Verdict.Outcome != oracle.Pass {
			t.Errorf("%s", c)
		}
	}
	for _, k := range storage {
		if kinds[k] == 0 && k != faults.Torn { // its writes are small, to files not yet durable: nothing to tear
			t.Errorf("no %s case", k)
		}
	}
	t.Logf("%d golden beats, %d cases: %v", g.Len(), len(cases), kinds)
}

// The child that never fsyncs passes every kill (the page cache survives a killed process)
// and is caught by a power loss, which takes its checkpoint away: the fault the plain disk
// cannot give.
func TestFUSEPowerCatchesAMissingFsync(t *testing.T) {
	rn, err := newRunner(t, onFUSE(t, "no-fsync"), sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer noChaoskitMounts(t)
	for _, c := range explore(t, rn, faults.Kill) {
		if c.Verdict.Outcome != oracle.Pass {
			t.Errorf("kill: %s", c)
		}
	}
	caught := 0
	for _, c := range explore(t, rn, faults.Power) {
		if c.Breaks(oracle.BoundedWorkLost) || c.Breaks(oracle.SameState) {
			caught++
		}
	}
	if caught == 0 {
		t.Fatal("no power loss caught the child that never fsyncs")
	}
}

// A write the command did not fsync is gone after a power loss and one it fsynced is there:
// the kernel hides nothing from the disk, and a restarted command reads what the disk kept.
func TestFUSEPowerKeepsOnlyWhatWasFsynced(t *testing.T) {
	target := onFUSE(t, "correct")
	target.Argv = []string{"sh", "-c", `cd "$CHAOSKIT_STATE_DIR" && if [ "$CHAOSKIT_PROCESS" = 0 ]; then
		printf kept > kept && sync kept . && printf lost > lost && exec "$0" -mode tour
	else
		ls | tr '\n' ' ' >&2; [ -f kept ] && [ ! -s lost ] && exec "$0" -mode tour
	fi`, childBin}
	target.StateArgv = nil
	rn, err := newRunner(t, target, sim.Options{Name: "sync"})
	if err != nil {
		t.Fatal(err)
	}
	defer noChaoskitMounts(t)
	g, _ := rn.Golden(nil)
	beat := -1
	for i, label := range g.Trace() {
		if strings.HasPrefix(label, "tool create_po") && beat < 0 {
			beat = i
		}
	}
	c := rn.Run(faults.Schedule{{Kind: faults.Power, Beat: beat}})
	if c.Verdict.Metrics.Restarts != 1 || c.Breaks(oracle.Completes) {
		t.Fatalf("%s", c)
	}
}
