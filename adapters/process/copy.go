package process

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/afero"
)

// copyIn writes the tree of src into the directory dir.
func copyIn(src afero.Fs, dir string) error {
	return afero.Walk(src, "/", func(p string, fi fs.FileInfo, err error) error {
		if err != nil || p == "/" {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(p, "/")))
		if fi.IsDir() {
			return os.Mkdir(dst, fi.Mode().Perm()|0o700)
		}
		b, err := afero.ReadFile(src, p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, fi.Mode().Perm()|0o600)
	})
}

// copyOut replaces the tree of dst with that of the directory dir, and fsyncs all of it: what a
// killed process wrote survives. Anything but regular files and directories (a symbolic link, a
// socket) is left out.
func copyOut(dir string, dst afero.Fs) error {
	top, err := afero.ReadDir(dst, "/")
	if err != nil {
		return err
	}
	for _, fi := range top {
		if err := dst.RemoveAll("/" + fi.Name()); err != nil {
			return err
		}
	}
	var dirs []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		name := "/" + filepath.ToSlash(rel)
		if rel == "." {
			dirs = append(dirs, "/")
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			dirs = append(dirs, name)
			return dst.Mkdir(name, info.Mode().Perm())
		case info.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return writeSynced(dst, name, b, info.Mode().Perm())
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("copying %s back to the disk: %w", dir, err)
	}
	for _, d := range dirs {
		if err := syncDir(dst, d); err != nil {
			return err
		}
	}
	return nil
}

func writeSynced(fsys afero.Fs, name string, b []byte, perm fs.FileMode) error {
	f, err := fsys.OpenFile(name, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func syncDir(fsys afero.Fs, name string) error {
	d, err := fsys.Open(name)
	if err != nil {
		return err
	}
	err = d.Sync()
	d.Close()
	return err
}

// stateTimeout bounds a state command.
const stateTimeout = time.Minute

// runState runs t.StateArgv on a copy of fsys and decodes the JSON it prints.
func runState(t *Target, fsys afero.Fs) (any, error) {
	root, err := root()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(root, "s")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	state := filepath.Join(dir, "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		return nil, err
	}
	if err := copyIn(fsys, state); err != nil {
		return nil, fmt.Errorf("copying the disk for the state command: %w", err)
	}
	var stdout bytes.Buffer
	c, err := startChild(command{argv: t.StateArgv, dir: t.Dir, env: append(append([]string(nil), t.Env...), EnvStateDir+"="+state),
		name: filepath.Base(dir), marker: newToken(), stdout: &stdout})
	if err != nil {
		return nil, fmt.Errorf("state command: %w", err)
	}
	select {
	case <-c.exited:
		c.kill() // what it left running
	case <-time.After(stateTimeout):
		c.kill()
		return nil, fmt.Errorf("state command %s did not finish in %s; its output ends: %q", strings.Join(t.StateArgv, " "), stateTimeout, c.out.String())
	}
	if err := c.err(); err != nil {
		return nil, fmt.Errorf("state command %s: %w", strings.Join(t.StateArgv, " "), err)
	}
	doc, err := decode(stdout.Bytes())
	if err != nil {
		return nil, fmt.Errorf("state command %s printed no JSON (%w): %.120q", strings.Join(t.StateArgv, " "), err, stdout.String())
	}
	return doc, nil
}
