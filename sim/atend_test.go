package sim_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
	"github.com/spf13/afero"
)

// report does its steps durably, then writes its final result, report.json, and exits: with an
// fsync of the file and of its directory, or without, as a program that trusts the page cache
// once it is done does.
type report struct{ sync bool }

func (r report) Run(ctx context.Context, env *harness.Env) (any, error) {
	fsys := env.FS()
	if err := (steps{n: 3}).runSteps(env); err != nil {
		return nil, err
	}
	f, err := fsys.OpenFile("report.json", os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Write([]byte(`{"orders":3}`)); err != nil {
		return nil, err
	}
	if r.sync {
		if err := f.Sync(); err != nil {
			return nil, err
		}
		if err := syncDir(fsys); err != nil {
			return nil, err
		}
	}
	return "done", nil
}

func (report) State(fsys afero.Fs) (any, error) {
	b, err := afero.ReadFile(fsys, "report.json")
	if err != nil {
		return "no report: " + err.Error(), nil
	}
	return string(b), nil
}

// runSteps is steps' Run without its result.
func (s steps) runSteps(env *harness.Env) error {
	_, err := s.Run(context.Background(), env)
	return err
}

// A power cut after the run's end, once the last process has exited, loses the result it
// wrote without an fsync: nothing restarts a job that exited 0, and the state read back is what
// survived. A harness that fsyncs its result keeps it. A power cut scheduled at a beat past the
// end does not fire, and says how to write one after the end.
func TestPowerCutAfterTheEnd(t *testing.T) {
	end := faults.Schedule{{Kind: faults.Power, Beat: faults.End}}
	c := newRunner(t, report{}, sim.Options{}).Run(end)
	if !c.Breaks(oracle.SameState) || c.Verdict.Metrics.Restarts != 0 || len(c.Unfired) != 0 {
		t.Fatalf("a result written without an fsync: want same-state broken, with no restart:\n%s", c)
	}
	text := c.String()
	for _, want := range []string{"the end: every process has exited   <- power@end", "power@end after the last process exited: power lost"} {
		if !strings.Contains(text, want) {
			t.Errorf("the case does not say %q:\n%s", want, text)
		}
	}
	rn := newRunner(t, report{sync: true}, sim.Options{})
	if c := rn.Run(end); c.Verdict.Outcome != oracle.Pass {
		t.Errorf("a result fsynced with its directory: want a pass:\n%s", c)
	}
	for _, mode := range []string{"", "subset"} {
		if c := rn.Run(faults.Schedule{{Kind: faults.Power, Beat: faults.End, Mode: mode}}); c.Verdict.Outcome != oracle.Pass {
			t.Errorf("power@end:%s: want a pass:\n%s", mode, c)
		}
	}

	g, _ := rn.Golden(nil)
	past := rn.Run(faults.Schedule{{Kind: faults.Power, Beat: g.Len()}})
	if past.Verdict.Outcome != oracle.Unknown || !strings.Contains(past.Verdict.Reason, "to cut the power after the run's end, once its last process has exited, write power@end") {
		t.Errorf("power past the end: want unknown, saying how to write it after the end: %s", past.Verdict.Reason)
	}
}

// A fault after the end fires only if the run ends with its last process exiting on its own: a
// run that fails has no end to cut the power after, and the case says so.
func TestPowerAfterTheEndOfARunThatFailed(t *testing.T) {
	target := harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
		env.Mark("started")
		if env.Process() > 0 {
			return nil, os.ErrPermission
		}
		return nil, nil
	}}
	c := newRunner(t, target, sim.Options{RestartFailed: sim.RestartNever}).Run(faults.MustParseSchedule("kill@0,power@end"))
	if len(c.Unfired) != 1 || c.Unfired[0].Beat != faults.End {
		t.Fatalf("want power@end not fired:\n%s", c)
	}
	c.RequireAll(1)
	if !strings.Contains(c.Verdict.Reason, "power@end did not fire: the run did not end with its last process exiting on its own (it failed: permission denied)") {
		t.Errorf("the case does not say why power@end did not fire: %s", c.Verdict.Reason)
	}
}
