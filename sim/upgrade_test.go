package sim_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/spf13/afero"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
)

// loopApp is a Burr-style loop: four steps, each appending a line (not idempotent), its state a
// JSON document checkpointed after each step under the field Field. A version that renames the
// field migrates the old one when Migrates says so.
type loopApp struct {
	Field    string
	Migrates bool
}

const loopSteps = 4

func (loopApp) Tools() []harness.Tool {
	return []harness.Tool{{Name: "append_log", Contract: harness.NotIdempotent}}
}

func (a loopApp) read(fsys afero.Fs) (int, error) {
	b, err := afero.ReadFile(fsys, "state.json")
	if err != nil {
		return 0, nil // no checkpoint yet: a new run
	}
	var m map[string]int
	if err := json.Unmarshal(b, &m); err != nil {
		return 0, err
	}
	if n, ok := m[a.Field]; ok || !a.Migrates {
		return n, nil
	}
	return m["step"], nil // the old version's field
}

func (a loopApp) State(fsys afero.Fs) (any, error) { return a.read(fsys) }

func (a loopApp) Run(ctx context.Context, env *harness.Env) (any, error) {
	n, err := a.read(env.FS())
	if err != nil {
		return nil, err
	}
	for i := n; i < loopSteps; i++ {
		if _, err := env.Call(ctx, harness.Call{Tool: "append_log", Args: map[string]int{"line": i}}); err != nil {
			return nil, err
		}
		b, _ := json.Marshal(map[string]int{a.Field: i + 1})
		f, err := env.FS().Create("state.json.tmp")
		if err != nil {
			return nil, err
		}
		if _, err := f.Write(b); err != nil {
			return nil, err
		}
		if err := f.Sync(); err != nil {
			return nil, err
		}
		f.Close()
		if err := env.FS().Rename("state.json.tmp", "state.json"); err != nil {
			return nil, err
		}
		env.Mark("step")
	}
	return "done", nil
}

// upgradeAtSecondMark runs old, deployed as next right after its second step's checkpoint.
func upgradeAtSecondMark(t *testing.T, next loopApp) *sim.Case {
	t.Helper()
	rn, err := sim.NewRunner(func() harness.Target { return loopApp{Field: "step"} }, sim.Options{
		Name:        "loop",
		NextVersion: func() harness.Target { return next },
	})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := rn.Golden(nil)
	marks := 0
	for k := range g.Len() {
		if strings.HasPrefix(g.Beat(k).Label(), "mark") {
			if marks++; marks == 2 {
				return rn.Run(faults.Schedule{{Kind: faults.Upgrade, Beat: k + 1}})
			}
		}
	}
	t.Fatal("the golden run made fewer than two marks")
	return nil
}

// A new version that renames a state field and migrates the old one takes the run over.
func TestUpgradeRenamedFieldWithMigrationPasses(t *testing.T) {
	c := upgradeAtSecondMark(t, loopApp{Field: "cursor", Migrates: true})
	if c.Verdict.Outcome != oracle.Pass {
		t.Errorf("%s", c)
	}
}

// Without the migration it cannot read the checkpoint, starts over and appends the first
// lines again: stranded and duplicated.
func TestUpgradeRenamedFieldWithoutMigrationIsStrandedAndDuplicated(t *testing.T) {
	c := upgradeAtSecondMark(t, loopApp{Field: "cursor"})
	m := c.Verdict.Metrics
	if c.Verdict.Outcome != oracle.Fail || !m.Stranded || !m.Duplicated || m.Replanned {
		t.Errorf("want a failure, stranded and duplicated; got %+v\n%s", m, c)
	}
}

// Without a next version an upgrade fault cannot apply: the case is unknown, saying why.
func TestUpgradeWithoutNextVersionIsUnknown(t *testing.T) {
	rn, err := sim.NewRunner(func() harness.Target { return loopApp{Field: "step"} }, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := rn.Run(faults.Schedule{{Kind: faults.Upgrade, Beat: 3}})
	if c.Verdict.Outcome != oracle.Unknown || !strings.Contains(c.Verdict.Reason, "no next version") {
		t.Errorf("want unknown for want of a next version, got %s", c)
	}
}
