package sim_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
	"github.com/spf13/afero"
)

// turns is an agent that makes no progress marks: four turns, each a model call and a tool call
// under a key stable per step. resumes saves the number of turns done after each (a temporary
// file, fsynced, renamed) and starts from it; otherwise it starts again from zero each time,
// its keys replaying what was applied. every, if above 1, saves only after every that many
// turns, as a framework that checkpoints at its own pauses (the Agents SDK's RunState at an
// approval) resumes from several turns back.
type turns struct {
	resumes bool
	every   int
}

func (a turns) Tools() []harness.Tool {
	return []harness.Tool{{Name: "file", Contract: harness.IdempotentByKey}}
}

func (a turns) Run(ctx context.Context, env *harness.Env) (any, error) {
	fsys := env.FS()
	done := 0
	if b, err := afero.ReadFile(fsys, "done"); err == nil && a.resumes {
		done, _ = strconv.Atoi(string(b))
	}
	for i := done; i < 4; i++ {
		text, err := env.Model(ctx, harness.ModelCall{Purpose: fmt.Sprintf("turn %d", i), Reply: "file it"})
		if err != nil {
			return nil, err
		}
		if _, err := env.Call(ctx, harness.Call{Tool: "file", Key: fmt.Sprintf("step-%d", i), Args: map[string]any{"what": text, "step": i}}); err != nil {
			return nil, err
		}
		if a.every > 1 && (i+1)%a.every != 0 {
			continue // saved at the next pause
		}
		f, err := fsys.Create("done.tmp")
		if err != nil {
			return nil, err
		}
		if _, err := f.WriteString(strconv.Itoa(i + 1)); err != nil {
			return nil, err
		}
		if err := f.Sync(); err != nil {
			return nil, err
		}
		if err := f.Close(); err != nil {
			return nil, err
		}
		if err := fsys.Rename("done.tmp", "done"); err != nil {
			return nil, err
		}
	}
	return "filed", nil
}

// Without marks, work lost is the calls made again after a crash: the agent that starts over
// re-asks every turn before the crash and fails bounded-work-lost, with the figures measured;
// the one that resumes passes at every kill, whether it saved after every turn (it re-asks at
// most the turn in flight) or only after every second one (it re-asks up to two turns, counted
// as work lost), once it has saved something to resume from.
func TestWorkLostWithoutMarks(t *testing.T) {
	for _, a := range []turns{{}, {resumes: true}, {resumes: true, every: 2}} {
		resumes := a.resumes
		rn := newRunner(t, a, sim.Options{})
		g, err := rn.Golden(nil)
		if err != nil {
			t.Fatal(err)
		}
		saved := 0 // the beat of its first save: before it, a restart has nothing to resume from
		for k := range g.Len() {
			if strings.Contains(g.Beat(k).Label(), "-> done") {
				saved = k
				break
			}
		}
		failed := 0
		for k := range g.Len() {
			c := rn.Run(kill(k))
			m := c.Verdict.Metrics
			if m.WorkLostUnmeasured {
				t.Fatalf("resumes=%v kill@%d: work lost not measured", resumes, k)
			}
			if resumes && (a.every < 2 || k > saved) { // a kill at the rename comes before it
				if c.Verdict.Outcome != oracle.Pass || m.WorkLostBeats > 3*max(a.every, 1) {
					t.Errorf("kill@%d of the resuming agent %+v: %s, work lost %d beats", k, a, c, m.WorkLostBeats)
				}
				continue
			}
			if resumes {
				continue // crashed before its first save, in its second turn: it starts over
			}
			if c.Verdict.Outcome == oracle.Fail {
				failed++
				v := c.Verdict.Violations
				if len(v) != 1 || v[0].Property != oracle.BoundedWorkLost || !strings.Contains(v[0].Detail, `model call "turn 0"`) || m.WorkLostBeats < 3 {
					t.Errorf("kill@%d of the agent starting over: %+v, work lost %d beats", k, v, m.WorkLostBeats)
				}
			}
		}
		// Starting over is within the bound while the crash is in the first turn, past it once
		// the run has asked the model its second.
		if !resumes && failed == 0 {
			t.Errorf("no kill failed the agent that starts over")
		}
	}
}
