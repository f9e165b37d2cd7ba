package sim_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
)

func TestPanickingRecoveryDoesNotComplete(t *testing.T) {
	target := steps{n: 3, onResume: func(env *harness.Env, done int) { panic("cannot read my own checkpoint") }}
	c := newRunner(t, target, sim.Options{}).Run(kill(4))
	if !c.Breaks(oracle.Completes) || !strings.Contains(c.Verdict.Violations[0].Detail, "panicked: cannot read my own checkpoint (at sim_test.TestPanickingRecoveryDoesNotComplete.func1 supervisor_test.go:") {
		t.Fatalf("%s", c)
	}
}

// A recovery that fails on its own, with every fault over, is not restarted forever: once two
// processes in a row have failed without progress, the supervisor gives up, whatever their
// errors say (here each names its process, as a pid or a time in a message would differ).
func TestFailingRecoveryStops(t *testing.T) {
	target := harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
		if env.Process() > 0 {
			return nil, fmt.Errorf("process %d refusing to resume", env.Process())
		}
		return steps{n: 2}.Run(ctx, env)
	}}
	c := newRunner(t, target, sim.Options{}).Run(kill(2))
	if !c.Breaks(oracle.Completes) || c.Verdict.Metrics.Restarts != 2 || !strings.Contains(c.Verdict.Violations[0].Detail, "fails every time after every fault has ended (processes 1 and 2 failed without progress)") {
		t.Fatalf("%s", c)
	}
}

// A harness that gives up on an error it could handle passes when a supervisor restarts it,
// as by default; under RestartNever its run ends there, failed. Either way the report counts
// the failed process.
func TestRestartPolicy(t *testing.T) {
	target := harness.Func{
		ToolList: []harness.Tool{{Name: "po", Contract: harness.IdempotentByKey}},
		RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
			if _, err := env.Call(ctx, harness.Call{Tool: "po", Key: "k", Args: 1}); err != nil {
				return nil, err // gives up on a transient error
			}
			env.Mark("filed")
			return "filed", nil
		},
	}
	transient := faults.Schedule{{Kind: faults.ToolTransient, Beat: 0}}
	for _, tc := range []struct {
		policy  int
		outcome oracle.Outcome
	}{{sim.RestartAlways, oracle.Pass}, {sim.RestartNever, oracle.Fail}, {1, oracle.Pass}} {
		c := newRunner(t, target, sim.Options{RestartFailed: tc.policy}).Run(transient)
		if c.Verdict.Outcome != tc.outcome || c.Verdict.Metrics.FailedProcesses != 1 {
			t.Errorf("policy %d: %s with %d failed processes, want %s with 1", tc.policy, c.Verdict.Outcome, c.Verdict.Metrics.FailedProcesses, tc.outcome)
		}
	}
}

// A harness that fails on ENOSPC and leaves the rest to its supervisor passes every diskfull case
// of a disk full for a minute: each failed process is restarted after the back-off, and once the
// minute is over a restarted process finds space again (campaign's test of the same name runs
// more harnesses, as a campaign lists their cases).
func TestDiskFullFailAndRestartPasses(t *testing.T) {
	rn := newRunner(t, steps{n: 4}, sim.Options{})
	cases, failed := 0, 0
	for _, s := range everyBeat(t, rn, faults.Fault{Kind: faults.DiskFull, Dur: time.Minute}) {
		c := rn.Run(s)
		cases++
		m := c.Verdict.Metrics
		failed += m.FailedProcesses
		if c.Verdict.Outcome != oracle.Pass || m.Restarts != m.FailedProcesses {
			t.Errorf("a harness that exits on ENOSPC did not pass after its failed processes were restarted:\n%s\nmetrics %+v", c, m)
		}
	}
	// (steps appends a byte at a time: after its first, the rest of the block takes them.)
	if cases == 0 || failed == 0 {
		t.Errorf("%d diskfull cases, %d failed processes: the supervisor was not tested", cases, failed)
	}
}

// The supervisor waits as Kubernetes does: restarts at 10s, 20s, 40s after each failure in a
// row, so that a disk full for a minute takes three failed processes before the fourth finds
// space; a constant back-off of 5s, systemd's RestartSec=5s, takes twelve. (steps fails on
// ENOSPC; its first write is beat 2.)
func TestRestartBackoff(t *testing.T) {
	full := faults.Schedule{{Kind: faults.DiskFull, Beat: 2, Bytes: 0, Dur: time.Minute}}
	for _, tc := range []struct {
		backoff sim.Backoff
		failed  int
	}{{sim.Backoff{}, 3}, {sim.Backoff{Initial: 5 * time.Second, Max: 5 * time.Second, Reset: time.Hour}, 12}} {
		var starts []time.Duration
		target := harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
			starts = append(starts, env.Now().Sub(faults.Epoch))
			return steps{n: 4}.Run(ctx, env)
		}}
		rn := newRunner(t, target, sim.Options{RestartBackoff: tc.backoff})
		starts = nil
		c := rn.Run(full)
		if c.Verdict.Outcome != oracle.Pass || c.Verdict.Metrics.FailedProcesses != tc.failed {
			t.Errorf("back-off %v: %d failed processes, want %d:\n%s", tc.backoff, c.Verdict.Metrics.FailedProcesses, tc.failed, c)
		}
		if tc.backoff == (sim.Backoff{}) && fmt.Sprint(starts) != "[0s 10s 30s 1m10s]" {
			t.Errorf("processes started at %v, want 10s, 20s and 40s apart", starts)
		}
	}
}
