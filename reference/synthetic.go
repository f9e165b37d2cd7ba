package reference

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/chaoskit/chaoskit/harness"
	"github.com/spf13/afero"
)

// Synthetic returns a constructor of a synthetic agent of about beats beats, for measuring
// chaoskit itself: it appends a 32-byte record to a log, fsyncs it and marks the step, beats/3
// times, resuming after the last whole record. Its state is the number of whole records. It does
// as little as an agent can besides its beats, so that what a case costs beyond a bare run is
// chaoskit's own.
func Synthetic(beats int) func() harness.Target {
	steps := max(1, beats/3)
	return func() harness.Target { return synthetic{steps: steps} }
}

// synthetic is the agent Synthetic makes.
type synthetic struct{ steps int }

// recordLen is the length of one of the synthetic agent's records.
const recordLen = 32

// Run appends the records the log lacks.
func (s synthetic) Run(ctx context.Context, env *harness.Env) (any, error) {
	fsys := env.FS()
	done := 0
	if fi, err := fsys.Stat("log"); err == nil {
		done = int(fi.Size()) / recordLen
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	f, err := fsys.OpenFile("log", os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if done == 0 {
		if err := syncDir(fsys, "."); err != nil {
			return nil, err
		}
	}
	var rec [recordLen]byte
	for i := done; i < s.steps; i++ {
		copy(rec[:], fmt.Sprintf("%031d\n", i))
		if _, err := f.WriteAt(rec[:], int64(i*recordLen)); err != nil {
			return nil, err
		}
		if err := f.Sync(); err != nil {
			return nil, err
		}
		env.Mark(stepLabels.label(i))
	}
	return s.steps, nil
}

// State returns the number of whole records the log holds.
func (s synthetic) State(fsys afero.Fs) (any, error) {
	fi, err := fsys.Stat("log")
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return nil, err
	}
	return int(fi.Size()) / recordLen, nil
}

func syncDir(fsys afero.Fs, name string) error {
	d, err := fsys.Open(name)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// labels caches the marks' labels, so that a run does not format one per step.
type labels struct{ cache []string }

var stepLabels labels

func (l *labels) label(i int) string {
	if i < len(l.cache) {
		return l.cache[i]
	}
	return fmt.Sprint("step ", i)
}

func init() {
	stepLabels.cache = make([]string, 4096)
	for i := range stepLabels.cache {
		stepLabels.cache[i] = fmt.Sprint("step ", i)
	}
}
