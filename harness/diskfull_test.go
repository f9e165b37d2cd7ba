package harness_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/spf13/afero"
)

// onFull is what a target does when a write fails for a full disk.
type onFull int

const (
	failOnFull    onFull = iota // return the error: the supervisor restarts the process
	spinOnFull                  // write again at once
	waitOnFull                  // sleep, doubling the pause, and write again (at most 10 times)
	swallowOnFull               // carry on as if the write had landed
)

// records is a small target: it writes five records, each to a file of its own through a
// truncating create, an fsync of the file and of the directory, and a mark. It resumes by
// skipping the records already whole on the disk; a record a full disk cut short is written
// again. What it does on ENOSPC is its policy.
type records struct{ full onFull }

func (r records) Run(ctx context.Context, env *harness.Env) (any, error) {
	fsys := env.FS()
	for i := range 5 {
		name, body := fmt.Sprintf("r%d", i), fmt.Sprintf("record %d: %s\n", i, "some payload")
		if b, err := afero.ReadFile(fsys, name); err == nil && string(b) == body {
			continue
		}
		pause := time.Second
		for try := 1; ; try++ {
			err := r.write(fsys, name, body)
			if err == nil || !errors.Is(err, syscall.ENOSPC) {
				if err != nil {
					return nil, err
				}
				break
			}
			switch {
			case r.full == swallowOnFull:
			case r.full == spinOnFull:
				continue
			case r.full == waitOnFull && try < 10:
				if err := env.Sleep(ctx, pause); err != nil {
					return nil, err
				}
				pause = min(2*pause, time.Minute)
				continue
			default:
				return nil, err
			}
			break
		}
		env.Mark(name)
	}
	return "done", nil
}

func (records) write(fsys afero.Fs, name, body string) error {
	f, err := fsys.OpenFile(name, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Write([]byte(body)); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	dir, err := fsys.Open(".")
	if err != nil {
		return err
	}
	defer dir.Close()
	return dir.Sync()
}

func (records) State(fsys afero.Fs) (any, error) { return harness.Files(fsys) }

// diskfullCases runs every diskfull case of an exhaustive campaign (opts says how long the
// disk stays full) against target, and returns them.
func diskfullCases(t *testing.T, target harness.Target, opts campaign.Options) []*harness.Case {
	t.Helper()
	rn := newRunner(t, target, harness.Options{})
	opts.Faults = []faults.Kind{faults.DiskFull}
	cases := explore(t, rn, opts)
	if len(cases) != 5 {
		t.Fatalf("%d diskfull cases, want one per write: 5", len(cases))
	}
	return cases
}

// A full disk stays full across restarts: a harness that fails on ENOSPC and leaves the rest to
// its supervisor crash-loops, for the restarted process finds the disk as full, and is caught by
// completes. (When a restarted process found space again, every one of these cases passed.)
func TestDiskFullCrashLoopIsCaught(t *testing.T) {
	for _, c := range diskfullCases(t, records{failOnFull}, campaign.Options{}) {
		if want := "+1m"; c.Schedule[0].Dur != time.Minute {
			t.Fatalf("the campaign listed %s, want the disk full for %s (Options.DiskFullFor's default)", c.Schedule, want)
		}
		if !c.Breaks(oracle.Completes) || c.Verdict.Metrics.Restarts == 0 {
			t.Errorf("a crash loop on a full disk was not caught by completes after restarts:\n%s", c)
		}
	}
	// The same with the steps target, which appends to one log.
	rn := newRunner(t, steps{n: 4}, harness.Options{})
	for _, c := range explore(t, rn, campaign.Options{Faults: []faults.Kind{faults.DiskFull}}) {
		if !c.Breaks(oracle.Completes) {
			t.Errorf("%s", c)
		}
	}
}

// A harness that retries a write at once, again and again, spins: virtual time does not move
// while it does, so space never returns, and the run is caught as one that never ends.
func TestDiskFullSpinIsCaught(t *testing.T) {
	for _, c := range diskfullCases(t, records{spinOnFull}, campaign.Options{}) {
		if !c.Breaks(oracle.Completes) || c.Verdict.Metrics.Restarts != 0 {
			t.Errorf("a harness spinning on ENOSPC was not caught by completes, without a restart:\n%s", c)
		}
	}
}

// A harness that waits and retries, with a growing pause in virtual time, rides the full disk
// out and passes every case; a disk that never has space again fails it too, as it must any
// harness that needs to write.
func TestDiskFullWaitAndRetryPasses(t *testing.T) {
	for _, c := range diskfullCases(t, records{waitOnFull}, campaign.Options{}) {
		if c.Verdict.Outcome != oracle.Pass {
			t.Errorf("a harness that waits for space failed:\n%s", c)
		}
	}
	for _, c := range diskfullCases(t, records{waitOnFull}, campaign.Options{DiskFullFor: -1}) {
		if c.Schedule[0].Dur != 0 || !c.Breaks(oracle.Completes) {
			t.Errorf("with DiskFullFor < 0, %s: want a disk full for good, which no writer completes on:\n%s", c.Schedule, c)
		}
	}
}

// Shrinking keeps a full disk's duration for a liveness failure, which a disk full for good
// would cause in any harness, and shortens it instead; it drops it for a safety failure that
// shows as well without: a harness that swallows ENOSPC completes with records missing however
// long the disk stays full.
func TestShrinkingADiskFull(t *testing.T) {
	for _, tc := range []struct {
		target   records
		property string
		want     string
	}{
		{records{failOnFull}, oracle.Completes, "diskfull@0:0+1s"},
		{records{swallowOnFull}, oracle.SameState, "diskfull@0:0"},
	} {
		rn := newRunner(t, tc.target, harness.Options{})
		c := rn.Run(faults.Schedule{{Kind: faults.DiskFull, Beat: 9, Bytes: 7, Dur: 10 * time.Minute}})
		if !c.Breaks(tc.property) {
			t.Fatalf("%s", c)
		}
		if got := campaign.Shrink(rn, c, campaign.Options{}); got.String() != tc.want {
			t.Errorf("policy %d: shrunk to %s, want %s", tc.target.full, got, tc.want)
		}
	}
}

// Every worker shares the disk: in a fleet, the worker that did not fill it finds it full too.
func TestDiskFullIsEveryWorkers(t *testing.T) {
	var seen []string
	target := harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
		name := fmt.Sprintf("w%d", env.Worker())
		for i := range 3 {
			err := records{}.write(env.FS(), fmt.Sprintf("%s-%d", name, i), "0123456789")
			seen = append(seen, fmt.Sprintf("%s:%v", name, errors.Is(err, syscall.ENOSPC)))
			if err := env.Sleep(ctx, time.Second); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}}
	rn := newRunner(t, target, harness.Options{Replicas: 2})
	g, _ := rn.Golden(nil)
	first := -1
	for i := range g.Len() {
		if g.Beat(i).Admits(faults.DiskFull) {
			first = i
			break
		}
	}
	seen = nil
	rn.RunOnce(faults.Schedule{{Kind: faults.DiskFull, Beat: first, Bytes: 0}})
	full := map[string]bool{}
	for _, s := range seen {
		if s[len(s)-4:] == "true" {
			full[s[:2]] = true
		}
	}
	if !full["w0"] || !full["w1"] {
		t.Fatalf("writes after the disk filled: %v; want both workers refused", seen)
	}
}
