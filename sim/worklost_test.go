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
// its keys replaying what was applied.
type turns struct{ resumes bool }

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
// the one that resumes re-asks at most the turn in flight and passes, at every kill.
func TestWorkLostWithoutMarks(t *testing.T) {
	for _, resumes := range []bool{false, true} {
		rn := newRunner(t, turns{resumes: resumes}, sim.Options{})
		g, err := rn.Golden(nil)
		if err != nil {
			t.Fatal(err)
		}
		failed := 0
		for k := range g.Len() {
			c := rn.Run(kill(k))
			m := c.Verdict.Metrics
			if m.WorkLostUnmeasured {
				t.Fatalf("resumes=%v kill@%d: work lost not measured", resumes, k)
			}
			if resumes {
				if c.Verdict.Outcome != oracle.Pass || m.WorkLostBeats > 3 {
					t.Errorf("kill@%d of the resuming agent: %s, work lost %d beats", k, c, m.WorkLostBeats)
				}
				continue
			}
			if c.Verdict.Outcome == oracle.Fail {
				failed++
				v := c.Verdict.Violations
				if len(v) != 1 || v[0].Property != oracle.BoundedWorkLost || !strings.Contains(v[0].Detail, `model call "turn 0"`) || m.WorkLostBeats < 3 {
					t.Errorf("kill@%d of the agent starting over: %+v, work lost %d beats", k, v, m.WorkLostBeats)
				}
			}
		}
		// Starting over is within the bound while the crash is in the first turn or the second
		// (the first turn's calls and the one in flight), past it from the third.
		if !resumes && failed == 0 {
			t.Errorf("no kill failed the agent that starts over")
		}
	}
}
