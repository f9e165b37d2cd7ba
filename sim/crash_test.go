package sim_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
	"github.com/spf13/afero"
)

func TestSimpleTargetPassesEverything(t *testing.T) {
	rn := newRunner(t, steps{n: 4}, sim.Options{})
	g, _ := rn.Golden(nil)
	if got := strings.Join(g.Trace(), "|"); got != "fs.create log|fs.syncdir .|fs.write log +1B @0|fs.sync log|mark step a|fs.write log +1B @1|fs.sync log|mark step b|fs.write log +1B @2|fs.sync log|mark step c|fs.write log +1B @3|fs.sync log|mark step d" {
		t.Fatalf("golden trace: %s", got)
	}
	every := []faults.Fault{{Kind: faults.Kill}, {Kind: faults.Power}, {Kind: faults.FsyncFail}, {Kind: faults.DiskFull, Dur: time.Minute}}
	for _, s := range everyBeat(t, rn, every...) {
		if c := rn.Run(s); c.Verdict.Outcome != oracle.Pass {
			t.Errorf("%s", c)
		}
	}
}

// The same target keeps no checksums, so a write that tears into garbage becomes its state.
// Every write tears into garbage (Golden.Tearable), and none as a prefix: a 1-byte write keeps
// all of itself or nothing.
func TestTornGarbageCatchesAChecksumlessLog(t *testing.T) {
	rn := newRunner(t, steps{n: 4}, sim.Options{})
	g, _ := rn.Golden(nil)
	var cases []*sim.Case
	for k := range g.Len() {
		if !g.Beat(k).Admits(faults.Torn) {
			continue
		}
		if g.Tearable(k, "prefix") {
			t.Errorf("torn@%d tears %q as a prefix", k, g.Beat(k).Label())
		}
		if g.Tearable(k, "garbage") {
			cases = append(cases, rn.Run(faults.Schedule{{Kind: faults.Torn, Beat: k, Mode: "garbage"}}))
		}
	}
	if len(cases) != 4 {
		t.Fatalf("%d torn cases, want one garbage case per write (1-byte writes do not tear as a prefix)", len(cases))
	}
	for _, c := range cases {
		if c.Schedule[0].Mode != "garbage" || !c.Breaks(oracle.SameState) {
			t.Errorf("%s", c)
		}
	}
}

// A crash stops the process even if the target recovers panics, and nothing it writes after
// the crash (in a deferred call, say) reaches the disk.
func TestCrashCannotBeSwallowed(t *testing.T) {
	var wroteAfter atomic.Bool
	target := steps{n: 3, afterStep: nil}
	wrapped := harness.Func{
		RunFunc: func(ctx context.Context, env *harness.Env) (res any, err error) {
			defer func() {
				if p := recover(); p != nil { // a harness that recovers everything
					res, err = "recovered", nil
				}
			}()
			defer func() {
				f, err := env.FS().Create("after") // a deferred save: must not land from a crashed process
				if err == nil && env.Process() == 0 {
					wroteAfter.Store(true)
				}
				if err == nil {
					f.Close()
				}
			}()
			return target.Run(ctx, env)
		},
		StateFunc: func(fsys afero.Fs) (any, error) { return harness.Files(fsys) },
	}
	rn := newRunner(t, wrapped, sim.Options{NoDerive: true})
	for i := 0; i < 300; i++ { // the deferred call races the runner unless the crash waits for it
		wroteAfter.Store(false)
		c := rn.Run(kill(5))
		if wroteAfter.Load() {
			t.Fatalf("run %d: a deferred call of the crashed process wrote to the disk", i)
		}
		if c.Verdict.Outcome != oracle.Pass || c.Verdict.Metrics.Restarts != 1 || c.Result != "done" {
			t.Fatalf("restarts = %d, result %v: %s", c.Verdict.Metrics.Restarts, c.Result, c)
		}
	}
}

// A crash during recovery is just another beat: kill@3 then kill@6 lands in the restarted
// process, and the run still completes.
func TestCrashDuringRecovery(t *testing.T) {
	rn := newRunner(t, steps{n: 4}, sim.Options{})
	c := rn.Run(faults.Schedule{{Kind: faults.Kill, Beat: 3}, {Kind: faults.Power, Beat: 6}})
	if c.Verdict.Outcome != oracle.Pass || c.Verdict.Metrics.Restarts != 2 || len(c.Unfired) != 0 {
		t.Fatalf("%s (restarts %d, unfired %v)", c, c.Verdict.Metrics.Restarts, c.Unfired)
	}
}

// The process's random source is the same for the golden run and each case's first process,
// and new for each restart.
func TestRandIsPerProcess(t *testing.T) {
	var draws [][2]uint64
	target := harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
		draws = append(draws, [2]uint64{uint64(env.Process()), env.Rand().Uint64()})
		return steps{n: 2}.Run(ctx, env)
	}}
	rn := newRunner(t, target, sim.Options{Seed: 42, NoDerive: true})
	rn.Run(kill(3))
	// golden, golden again, the case's first process, its restart
	if len(draws) != 4 || draws[0] != draws[1] || draws[0] != draws[2] || draws[3][0] != 1 || draws[3][1] == draws[0][1] {
		t.Fatalf("draws %v", draws)
	}
}
