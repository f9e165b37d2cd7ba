package campaign_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/chaoskit/chaoskit/sim"
	"github.com/spf13/afero"
)

// onFull is what a target does when a write fails for a full disk.
type onFull int

const (
	failOnFull    onFull = iota // return the error: the supervisor restarts the process
	spinOnFull                  // write again at once
	waitOnFull                  // sleep, doubling the pause, and write again (at most 10 times)
	swallowOnFull               // carry on as if the write had landed
	stopOnFull                  // end the process as if it had finished: exit status 0
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
			case r.full == stopOnFull:
				return "done", nil
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
	return reports.SyncDir(fsys, ".")
}

func (records) State(fsys afero.Fs) (any, error) { return harness.Files(fsys) }

// diskfullCases runs every diskfull case of an exhaustive campaign (opts says how long the
// disk stays full) against target, and returns them.
func diskfullCases(t *testing.T, target harness.Target, opts campaign.Options) []*sim.Case {
	t.Helper()
	rn := newRunner(t, itself(target), opts.Options)
	opts.Faults = []faults.Kind{faults.DiskFull}
	cases := explore(t, rn, opts)
	if len(cases) != 5 {
		t.Fatalf("%d diskfull cases, want one per write: 5", len(cases))
	}
	return cases
}

// A harness that fails on ENOSPC and leaves the rest to its supervisor, as most software does,
// passes: the supervisor restarts it after a back-off (Kubernetes' by default: 10s, 20s, 40s,
// ...), and once the minute is over a restarted process finds space again. The failed
// processes and the restarts show in the metrics, for a team that wants its harness to wait in
// the process (a gate on failed_processes). Under RestartNever the first failure is the run's
// end; on a disk full for good, the supervisor gives up once a process started after the fault
// fails as the one before it did.
func TestDiskFullFailAndRestartPasses(t *testing.T) {
	// sim's test of the same name runs its own steps target so, through every diskfull case.
	rn := newRunner(t, itself(records{failOnFull}), sim.Options{})
	cases := explore(t, rn, campaign.Options{Faults: []faults.Kind{faults.DiskFull}})
	failed := 0
	for _, c := range cases {
		if want := "+1m"; c.Schedule[0].Dur != time.Minute {
			t.Fatalf("the campaign listed %s, want the disk full for %s (Options.DiskFullFor's default)", c.Schedule, want)
		}
		m := c.Verdict.Metrics
		failed += m.FailedProcesses
		if c.Verdict.Outcome != oracle.Pass || m.Restarts != m.FailedProcesses {
			t.Errorf("a harness that exits on ENOSPC did not pass after its failed processes were restarted:\n%s\nmetrics %+v", c, m)
		}
	}
	if len(cases) == 0 || failed == 0 {
		t.Errorf("%T: %d diskfull cases, %d failed processes: the supervisor was not tested", records{failOnFull}, len(cases), failed)
	}
	for _, tc := range []struct {
		opts campaign.Options
		want string
	}{
		{campaign.Options{Options: sim.Options{RestartFailed: sim.RestartNever}}, "no space left on device"},
		{campaign.Options{DiskFullFor: -1}, "fails every time after every fault has ended"},
	} {
		for _, c := range diskfullCases(t, records{failOnFull}, tc.opts) {
			if !c.Breaks(oracle.Completes) || !strings.Contains(c.Verdict.Violations[0].Detail, tc.want) {
				t.Errorf("want completes broken, saying %q:\n%s", tc.want, c)
			}
		}
	}
}

// A harness that retries a write at once, again and again, spins: virtual time does not move
// while it does, so space never returns, and the run is caught as a livelock, in virtual
// terms: beats with the clock standing still and no mark, far more than the golden run made.
func TestDiskFullSpinIsCaught(t *testing.T) {
	for _, c := range diskfullCases(t, records{spinOnFull}, campaign.Options{}) {
		if !c.Breaks(oracle.Completes) || c.Verdict.Metrics.Restarts != 0 ||
			!strings.Contains(c.Verdict.Violations[0].Detail, "spins: 1026 beats in a row with the virtual clock standing still and no progress mark (the golden run's longest such stretch is 4): a livelock") {
			t.Errorf("a harness spinning on ENOSPC was not caught by completes as a livelock, without a restart:\n%s", c)
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

// Shrinking keeps a full disk's duration for a liveness failure (a harness spinning on ENOSPC),
// which a disk full for good would cause in any harness, and shortens it instead; it drops it for a safety failure that
// shows as well without: a harness that swallows ENOSPC completes with records missing however
// long the disk stays full.
func TestShrinkingADiskFull(t *testing.T) {
	for _, tc := range []struct {
		target   records
		property string
		want     string
	}{
		{records{spinOnFull}, oracle.Completes, "diskfull@1:0+1s"},
		{records{swallowOnFull}, oracle.SameState, "diskfull@1:0"},
	} {
		rn := newRunner(t, itself(tc.target), sim.Options{})
		c := rn.Run(faults.Schedule{{Kind: faults.DiskFull, Beat: 11, Bytes: 7, Dur: 10 * time.Minute}}) // the write of r2
		if !c.Breaks(tc.property) {
			t.Fatalf("%s", c)
		}
		if got := campaign.Shrink(rn, c, campaign.Options{}); got.String() != tc.want {
			t.Errorf("policy %d: shrunk to %s, want %s", tc.target.full, got, tc.want)
		}
	}
}

// checkpoint is a target that keeps its progress in one JSON checkpoint, rewritten after each of
// its five steps. inPlace truncates and rewrites the file itself; otherwise it writes a temporary
// file, fsyncs it and renames it over the checkpoint, fsyncing the directory. Either way it
// exits on an error, and on start it fails on a checkpoint it cannot read.
type checkpoint struct{ inPlace bool }

func (c checkpoint) Run(ctx context.Context, env *harness.Env) (any, error) {
	fsys := env.FS()
	done := 0
	if b, err := afero.ReadFile(fsys, "ckpt.json"); err == nil {
		if err := json.Unmarshal(b, &done); err != nil {
			return nil, fmt.Errorf("the checkpoint is not JSON: %w", err)
		}
	}
	for ; done < 5; done++ {
		if err := c.save(fsys, done+1); err != nil {
			return nil, err
		}
		env.Mark(fmt.Sprintf("step %d", done))
	}
	return "done", nil
}

func (c checkpoint) save(fsys afero.Fs, done int) error {
	body := fmt.Sprintf("%d%s", done, strings.Repeat(" ", 40)) // trailing space is JSON too
	name := "ckpt.json.tmp"
	if c.inPlace {
		name = "ckpt.json"
	}
	if err := (records{}).write(fsys, name, body); err != nil || c.inPlace {
		return err
	}
	if err := fsys.Rename(name, "ckpt.json"); err != nil {
		return err
	}
	return reports.SyncDir(fsys, ".")
}

func (checkpoint) State(fsys afero.Fs) (any, error) { return harness.Files(fsys) }

// What a full disk must still show, each with the property its bug breaks, while a harness that
// exits on ENOSPC and is restarted passes: a harness that swallows ENOSPC and marks the step
// done (state lost: same-state), one that spins on it (a livelock: completes), one that ends
// as if it had finished (same-state), one whose in-place checkpoint a half-landed write
// corrupts (it fails on it every time after the disk has space again: completes), and, with
// the supervisor told never to restart (--restart never), one that gives up on a 429 for good.
func TestDiskFullBugsStayCaught(t *testing.T) {
	full := campaign.Options{Faults: []faults.Kind{faults.DiskFull}}
	for _, tc := range []struct {
		name     string
		target   harness.Target
		opts     sim.Options
		property string // "" for a pass
		detail   string
	}{
		{"exits on ENOSPC", records{failOnFull}, sim.Options{}, "", ""},
		{"temporary file and rename, exits on ENOSPC", checkpoint{}, sim.Options{}, "", ""},
		{"swallows ENOSPC", records{swallowOnFull}, sim.Options{}, oracle.SameState, "state"},
		{"spins on ENOSPC", records{spinOnFull}, sim.Options{}, oracle.Completes, "spins: "},
		{"exits 0 on ENOSPC", records{stopOnFull}, sim.Options{}, oracle.SameState, "state"},
		{"checkpoint in place", checkpoint{inPlace: true}, sim.Options{}, oracle.Completes, "the checkpoint is not JSON: unexpected end of JSON input; the process fails every time after every fault has ended"},
	} {
		rn := newRunner(t, itself(tc.target), tc.opts)
		caught := 0
		cases := explore(t, rn, full)
		for _, c := range cases {
			switch {
			case tc.property == "" && c.Verdict.Outcome != oracle.Pass:
				t.Errorf("%s: %s", tc.name, c)
			case tc.property != "" && c.Breaks(tc.property):
				caught++
				if !strings.Contains(c.String(), tc.detail) {
					t.Errorf("%s: %s does not say %q:\n%s", tc.name, tc.property, tc.detail, c)
				}
			}
		}
		if tc.property != "" && caught == 0 {
			t.Errorf("%s: none of %d diskfull cases broke %s", tc.name, len(cases), tc.property)
		}
	}

	gaveUp := harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
		if _, err := env.Model(ctx, harness.ModelCall{Purpose: "plan", Reply: "ok"}); err != nil {
			return nil, err // a 429 is the end, as far as this harness goes
		}
		env.Mark("planned")
		return "planned", nil
	}}
	limited := faults.Schedule{{Kind: faults.ModelRateLimit, Beat: 0}}
	if c := newRunner(t, itself(gaveUp), (sim.Options{})).Run(limited); c.Verdict.Outcome != oracle.Pass {
		t.Errorf("restarted after a 429, the harness must pass:\n%s", c)
	}
	if c := newRunner(t, itself(gaveUp), (sim.Options{RestartFailed: sim.RestartNever})).Run(limited); !c.Breaks(oracle.Completes) || !strings.Contains(c.String(), "rate limit") {
		t.Errorf("under RestartNever, giving up on a 429 must break completes:\n%s", c)
	}
}
