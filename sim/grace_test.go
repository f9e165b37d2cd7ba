package sim_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
)

// stepApp runs graceSteps steps, each a charge (not idempotent) and then its checkpoint, a
// cursor file written and fsynced, then a pause of Pause. A kill between the charge and its
// checkpoint makes the next process charge again. Graceful handles a deploy's stop as a Go
// service handles SIGTERM (signal.NotifyContext): it finishes the step in flight, checkpoints and
// returns; otherwise it ignores it.
type stepApp struct {
	Graceful bool
	Pause    time.Duration
}

const graceSteps = 6

func (stepApp) Tools() []harness.Tool {
	return []harness.Tool{{Name: "charge", Contract: harness.NotIdempotent}}
}

func (stepApp) cursor(fsys afero.Fs) int {
	b, _ := afero.ReadFile(fsys, "cursor")
	var n int
	fmt.Sscan(string(b), &n)
	return n
}

func (a stepApp) State(fsys afero.Fs) (any, error) { return a.cursor(fsys), nil }

func (a stepApp) Run(ctx context.Context, env *harness.Env) (any, error) {
	work := context.Background() // what the step's calls run under: not cut short by a stop
	if a.Graceful {
		work = context.WithoutCancel(ctx)
	}
	for i := a.cursor(env.FS()); i < graceSteps; i++ {
		if a.Graceful && ctx.Err() != nil {
			return nil, context.Cause(ctx) // asked to stop between steps: the checkpoint is written
		}
		if _, err := env.Call(work, harness.Call{Tool: "charge", Args: map[string]int{"step": i}}); err != nil {
			return nil, err
		}
		if err := afero.WriteFile(env.FS(), "cursor.tmp", []byte(fmt.Sprint(i+1)), 0o644); err != nil {
			return nil, err
		}
		f, err := env.FS().OpenFile("cursor.tmp", 0, 0)
		if err != nil {
			return nil, err
		}
		f.Sync()
		f.Close()
		if err := env.FS().Rename("cursor.tmp", "cursor"); err != nil {
			return nil, err
		}
		env.Mark(fmt.Sprintf("step %d", i))
		if a.Pause > 0 {
			env.Sleep(work, a.Pause)
		}
	}
	return "done", nil
}

// deployAtCharge runs app, deployed again as its next version at the beat where the charge of
// its second step is applied (before the step's checkpoint), with grace as Options.Grace.
func deployAtCharge(t *testing.T, app stepApp, grace time.Duration) *sim.Case {
	t.Helper()
	rn, err := sim.NewRunner(func() harness.Target { return app }, sim.Options{
		Name: "steps", NextVersion: func() harness.Target { return app }, Grace: grace, KeepBeats: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	g, err := rn.Golden(nil)
	if err != nil {
		t.Fatal(err)
	}
	charges := 0
	for k := range g.Len() {
		if b := g.Beat(k); b.Kind == sim.BeatToolApplied {
			if charges++; charges == 2 {
				return rn.Run(faults.Schedule{{Kind: faults.Upgrade, Beat: k}})
			}
		}
	}
	t.Fatal("the golden run applied fewer than two charges")
	return nil
}

// notes returns the case's notes in beat order, one a line.
func notes(c *sim.Case) string {
	var b strings.Builder
	for i := range c.Beats {
		if n := c.Notes[i]; n != "" {
			fmt.Fprintf(&b, "%d: %s\n", i, n)
		}
	}
	return b.String()
}

// Killed at once (no grace), between its charge and its checkpoint, the harness charges again:
// that is what a deploy with a grace period spares a harness that stops well.
func TestDeployWithoutGraceDuplicatesTheStepInFlight(t *testing.T) {
	c := deployAtCharge(t, stepApp{Graceful: true}, sim.NoGrace)
	if c.Verdict.Outcome != oracle.Fail || !c.Verdict.Metrics.Duplicated {
		t.Errorf("want a duplicated charge, got %s", c)
	}
}

// Asked to stop (its context cancelled with harness.ErrTerminated), the harness finishes the
// step, checkpoints and returns; the next version resumes after it and charges nothing twice.
func TestDeployGraceLetsAHarnessThatStopsWellFinishItsStep(t *testing.T) {
	c := deployAtCharge(t, stepApp{Graceful: true}, 0) // the default grace period, 30s
	if c.Verdict.Outcome != oracle.Pass {
		t.Fatalf("want a pass, got %s", c)
	}
	ns := notes(c)
	for _, want := range []string{"asked to stop (its context cancelled, as by SIGTERM), killed if still running in 30s",
		"process 0 stopped within the deploy's grace period (failed: " + harness.ErrTerminated.Error() + ")", "process 1 completed"} {
		if !strings.Contains(ns, want) {
			t.Errorf("the notes do not say %q:\n%s", want, ns)
		}
	}
	fault := c.Beats[c.Schedule[0].Beat]
	after := 0 // beats process 0 made after the fault: the rest of its step
	for _, b := range c.Beats[c.Schedule[0].Beat+1:] {
		if b.Process == 0 {
			after++
		}
	}
	if fault.Process != 0 || after == 0 {
		t.Errorf("process 0 made %d beats after the fault, want its step's checkpoint:\n%s", after, ns)
	}
}

// A harness that ignores the stop runs on, its beats counted, until the grace period ends in
// virtual time; then it is killed as by SIGKILL, and the next version takes over.
func TestDeployGraceKillsAHarnessThatIgnoresTheStop(t *testing.T) {
	c := deployAtCharge(t, stepApp{Pause: 10 * time.Second}, 25*time.Second)
	ns := notes(c)
	if !strings.Contains(ns, "process 0 killed (SIGKILL): still running at the end of the 25s grace period of upgrade@") {
		t.Fatalf("want process 0 killed at the end of the grace period:\n%s\n%s", ns, c)
	}
	// It went on through three more checkpoints (those of the steps after the fault, 10s apart)
	// before the kill, in its third pause: the new version has the steps that remain.
	marks := map[int]int{}
	for _, b := range c.Beats[c.Schedule[0].Beat:] {
		if b.Kind == sim.BeatMark {
			marks[b.Process]++
		}
	}
	if marks[0] != 3 || marks[1] != graceSteps-4 {
		t.Errorf("marks after the fault by process: %v, want 3 by the old version, %d by the new:\n%s", marks, graceSteps-4, ns)
	}
	if c.Verdict.Outcome != oracle.Pass {
		t.Errorf("killed in a pause, after its checkpoint, it loses nothing: want a pass, got %s", c)
	}

}

// The same case twice gives the same beats, notes and verdict.
func TestDeployGraceIsDeterministic(t *testing.T) {
	for _, app := range []stepApp{{Graceful: true}, {Pause: 10 * time.Second}} {
		a, b := deployAtCharge(t, app, 25*time.Second), deployAtCharge(t, app, 25*time.Second)
		if a.String() != b.String() || notes(a) != notes(b) || len(a.Beats) != len(b.Beats) {
			t.Errorf("two runs differ:\n%s\n%s", a, b)
		}
	}
}

// A process that ends on its own within the grace period is neither crashed nor failed: the
// stranded metric, which counts failures of the new version's processes, stays false.
func TestDeployGraceExitIsNotAFailure(t *testing.T) {
	c := deployAtCharge(t, stepApp{Graceful: true}, 0)
	if m := c.Verdict.Metrics; m.Stranded || m.FailedProcesses != 0 || m.Restarts != 1 {
		t.Errorf("want one restart, no failed process, not stranded; got %+v", m)
	}
}
