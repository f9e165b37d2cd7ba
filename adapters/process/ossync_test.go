package process_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/adapters/process"
	"github.com/chaoskit/chaoskit/adapters/process/fusefs"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/internal/needs"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
)

// ossync returns the Python harness of testdata/ossync, which makes its checkpoint durable with
// os.sync() alone, on a FUSE disk; with --no-sync if broken.
func ossync(t *testing.T, broken bool) process.Target {
	needs.Err(t, fusefs.Available())
	tg := process.Target{Argv: pythonArgv(t, "testdata/ossync/harness.py"), StateArgv: pythonArgv(t, "testdata/ossync/harness.py", "--dump-state"),
		ToolList: []harness.Tool{{Name: "create_po", Contract: harness.IdempotentByKey, Latency: time.Second}}, Disk: process.FUSE}
	if broken {
		tg.Argv = append(tg.Argv, "--no-sync")
	}
	return tg
}

// A harness that makes its checkpoint durable with os.sync() instead of fsyncs is correct, and
// passes a power cut at every beat: the kernel does not forward sync(2) to a FUSE server, so
// chaoskit traps it (a seccomp user notification) and fsyncs the whole disk there, each fsync a
// beat. Without the os.sync() the same harness loses a checkpoint it had marked durable.
func TestOSSyncMakesTheDiskDurable(t *testing.T) {
	rn := exampleRunner(t, "ossync", ossync(t, false))
	g, _ := rn.Golden(nil)
	if trace := strings.Join(g.Trace(), "|"); !strings.Contains(trace, "fs.sync cp.json.tmp|fs.syncdir .|fs.rename cp.json.tmp -> cp.json|fs.sync cp.json|fs.syncdir .|mark order 0") {
		t.Fatalf("os.sync() made no fsync beats after the rename:\n%s", strings.Join(g.Trace(), "\n"))
	}
	if n, _ := passesEveryCase(t, rn, faults.Power); n == 0 {
		t.Fatal("no power case")
	}
	caught := 0
	for _, c := range explore(t, exampleRunner(t, "ossync --no-sync", ossync(t, true)), faults.Power) {
		if c.Verdict.Outcome == oracle.Fail {
			caught++
		}
	}
	if caught == 0 {
		t.Fatal("without os.sync() no power cut lost a checkpoint")
	}
}

// Where sync calls cannot be trapped (no seccomp user notifications), a harness that relies on
// them is refused with one line saying so, never failed silently under power cuts: its sync
// kills it with SIGSYS, explained.
func TestOSSyncRefusedWhereItCannotBeTrapped(t *testing.T) {
	defer process.FatalSyncs()()
	_, err := sim.NewRunner(harness.Fresh(ossync(t, false)), sim.Options{Name: "ossync"})
	if err == nil || !strings.Contains(err.Error(), "killed by SIGSYS: it called sync(2) or syncfs(2), which a FUSE server is never told of") ||
		strings.Contains(err.Error(), "\n") {
		t.Fatalf("err = %v", err)
	}
}
