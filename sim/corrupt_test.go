package sim_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
	"github.com/spf13/afero"
)

// forgetful keeps its progress durable (a file rewritten and fsynced at each step) but never
// reads it back: every process starts over from the first step. A kill late in the run shows it
// redoing durable work; so must a corruption at the same beat, which is a kill and a flipped bit.
type forgetful struct{}

func (forgetful) Run(ctx context.Context, env *harness.Env) (any, error) {
	for i := range 6 {
		if err := afero.WriteFile(env.FS(), "progress", []byte(strings.Repeat("x", i+1)), 0o644); err != nil {
			return nil, err
		}
		f, err := env.FS().Open("progress")
		if err != nil {
			return nil, err
		}
		err = f.Sync()
		f.Close()
		if err != nil {
			return nil, err
		}
		env.Mark("step " + string(rune('a'+i)))
	}
	return "done", nil
}

func (forgetful) State(fsys afero.Fs) (any, error) {
	b, err := afero.ReadFile(fsys, "progress")
	return string(b), err
}

// A corrupt fault used to skip bounded-work-lost for the whole case, so a harness that a kill
// shows redoing durable work passed under corrupt at the same beat. It is judged as the kill
// is, now, except for the work the flipped bit destroyed (see TestCorrectAgentSurvivesCorruption
// in package reference, whose agent goes back to its last good record).
func TestCorruptJudgesWorkLostAsAKillDoes(t *testing.T) {
	rn := newRunner(t, forgetful{}, sim.Options{})
	g, _ := rn.Golden(nil)
	late := g.Len() - 2
	if c := rn.Run(kill(late)); !c.Breaks(oracle.BoundedWorkLost) {
		t.Fatalf("kill@%d: want bounded-work-lost broken:\n%s", late, c)
	}
	c := rn.Run(faults.Schedule{{Kind: faults.Corrupt, Beat: late}})
	if !c.Breaks(oracle.BoundedWorkLost) {
		t.Fatalf("corrupt@%d: want bounded-work-lost broken, as under a kill there:\n%s", late, c)
	}
	if d := c.Verdict.Violations[0].Detail; !strings.Contains(d, "not the flipped bit's doing: with a kill in place of corrupt@") {
		t.Errorf("the violation does not say the kill loses the work too: %q", d)
	}
}
