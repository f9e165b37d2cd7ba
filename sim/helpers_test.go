package sim_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/sim"
	"github.com/spf13/afero"
)

// steps is a small target: it creates a log (fsyncing the directory, so the log survives a
// power loss) and appends "x" to it n times, fsyncing and marking each. It resumes from the
// log's length. The hooks let tests misbehave at chosen points.
type steps struct {
	n int
	// syncOnCreate fsyncs the directory only when the log did not exist, a recovery bug: a
	// process restarted after a kill between the creation and that fsync builds on a log whose
	// name is not durable.
	syncOnCreate bool
	onResume     func(env *harness.Env, done int) // called at start when the file is not empty
	afterStep    func(env *harness.Env, i int)
}

func (s steps) Run(ctx context.Context, env *harness.Env) (any, error) {
	fsys := env.FS()
	b, err := afero.ReadFile(fsys, "log")
	created := errors.Is(err, os.ErrNotExist)
	if len(b) > 0 && s.onResume != nil {
		s.onResume(env, len(b))
	}
	f, err := fsys.OpenFile("log", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if len(b) == 0 && !s.syncOnCreate || created {
		if err := syncDir(fsys); err != nil {
			return nil, err
		}
	}
	for i := len(b); i < s.n; i++ {
		if _, err := f.Write([]byte("x")); err != nil {
			return nil, err
		}
		if err := f.Sync(); err != nil {
			return nil, err
		}
		env.Mark("step " + string(rune('a'+i)))
		if s.afterStep != nil {
			s.afterStep(env, i)
		}
	}
	return "done", nil
}

func (s steps) State(fsys afero.Fs) (any, error) {
	b, err := afero.ReadFile(fsys, "log")
	return string(b), err
}

// newRunner returns a runner of target. Every process gets target itself: the test targets
// keep what they must in Run's own variables.
func newRunner(t *testing.T, target harness.Target, opts sim.Options) *sim.Runner {
	t.Helper()
	rn, err := sim.NewRunner(func() harness.Target { return target }, opts)
	if err != nil {
		t.Fatal(err)
	}
	return rn
}

func kill(beat int) faults.Schedule { return faults.Schedule{{Kind: faults.Kill, Beat: beat}} }
func golden(t *testing.T, target harness.Target, opts sim.Options) *sim.Case {
	t.Helper()
	return newRunner(t, target, opts).Run(nil)
}
func syncDir(fsys afero.Fs) error {
	d, err := fsys.Open(".")
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// everyBeat lists the single-fault cases of the given faults: each at every beat, where its kind
// fires, of the golden run a case of that kind is judged against, with the faults of one kind
// given in turn at each beat, as an exhaustive campaign lists them. A fault with no mode is given
// in each mode of its kind, at every such beat (a campaign lists a mode only where it leaves the
// disk otherwise than the plain fault); a diskfull leaves room for half the write.
func everyBeat(t testing.TB, rn *sim.Runner, fs ...faults.Fault) []faults.Schedule {
	t.Helper()
	var kinds []faults.Kind
	byKind := map[faults.Kind][]faults.Fault{}
	for _, f := range fs {
		if byKind[f.Kind] == nil {
			kinds = append(kinds, f.Kind)
		}
		byKind[f.Kind] = append(byKind[f.Kind], f)
	}
	var out []faults.Schedule
	for _, kind := range kinds {
		g, err := rn.Golden(faults.Schedule{{Kind: kind}})
		if err != nil {
			t.Fatal(err)
		}
		info, _ := kind.Info()
		for k := range g.Len() {
			b := g.Beat(k)
			if !b.Admits(kind) {
				continue
			}
			for _, f := range byKind[kind] {
				f.Beat = k
				if kind == faults.DiskFull {
					f.Bytes = int64(b.Op.Len / 2)
				}
				modes := []string{f.Mode}
				if f.Mode == "" && len(info.Modes) > 1 {
					modes = append(modes, info.Modes[1:]...)
				}
				for _, f.Mode = range modes {
					out = append(out, faults.Schedule{f})
				}
			}
		}
	}
	return out
}

// caseJSON is what case c came to, wall-clock time aside: its verdict, its beats and notes, its
// trace, what it returned and left, all in JSON.
func caseJSON(t interface{ Fatal(...any) }, c *sim.Case) string {
	v := *c
	v.Duration = 0
	b, err := json.Marshal(struct {
		*sim.Case
		Trace []sim.TraceBeat
	}{&v, c.Trace()})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
