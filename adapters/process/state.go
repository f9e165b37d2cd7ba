package process

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/afero"
)

// stateTimeout bounds a state command.
const stateTimeout = time.Minute

// runState runs t.StateArgv on a copy of fsys and decodes the JSON it prints. A state command
// must print the same for the same files (Target.StateArgv), so what it printed is kept, by
// the digest of the files it was run on, and a disk that holds the same files again (most cases
// end with the golden run's) is not shown to it twice.
func runState(t *Target, fsys afero.Fs) (any, error) {
	files, err := readTree(fsys)
	if err != nil {
		return nil, fmt.Errorf("reading the disk for the state command: %w", err)
	}
	key := stateKey{command: strings.Join(t.StateArgv, "\x00") + "\x01" + t.Dir + "\x01" + strings.Join(t.Env, "\x00"), files: files.digest()}
	out, ok := stateMemo.get(key)
	if !ok {
		if out, err = runStateCommand(t, files); err != nil {
			return nil, err
		}
		stateMemo.put(key, out)
	}
	doc, err := decode(out)
	if err != nil {
		return nil, fmt.Errorf("state command %s printed no JSON (%w): %.120q", strings.Join(t.StateArgv, " "), err, out)
	}
	return doc, nil
}

// runStateCommand runs t.StateArgv on a copy of files and returns what it printed.
func runStateCommand(t *Target, files tree) ([]byte, error) {
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
	if err := files.write(state); err != nil {
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
		return nil, c.out.quoted(fmt.Errorf("state command %s did not finish in %s", strings.Join(t.StateArgv, " "), stateTimeout))
	}
	if err := c.err(); err != nil {
		return nil, fmt.Errorf("state command %s: %w", strings.Join(t.StateArgv, " "), err)
	}
	return stdout.Bytes(), nil
}

// tree is the files and directories of a disk, in the order afero.Walk visits them.
type tree []treeEntry

type treeEntry struct {
	path string // slash-separated, without the leading /
	dir  bool
	perm fs.FileMode
	data []byte
}

// readTree reads every file and directory of fsys.
func readTree(fsys afero.Fs) (tree, error) {
	var t tree
	err := afero.Walk(fsys, "/", func(p string, fi fs.FileInfo, err error) error {
		if err != nil || p == "/" {
			return err
		}
		e := treeEntry{path: strings.TrimPrefix(p, "/"), dir: fi.IsDir(), perm: fi.Mode().Perm()}
		if !e.dir {
			if e.data, err = afero.ReadFile(fsys, p); err != nil {
				return err
			}
		}
		t = append(t, e)
		return nil
	})
	return t, err
}

// write makes the tree under the directory dir.
func (t tree) write(dir string) error {
	for _, e := range t {
		dst := filepath.Join(dir, filepath.FromSlash(e.path))
		if e.dir {
			if err := os.Mkdir(dst, e.perm|0o700); err != nil {
				return err
			}
		} else if err := os.WriteFile(dst, e.data, e.perm|0o600); err != nil {
			return err
		}
	}
	return nil
}

// digest returns the SHA-256 of the tree: every path, kind, permission and content.
func (t tree) digest() [sha256.Size]byte {
	h := sha256.New()
	for _, e := range t {
		kind := byte('f')
		if e.dir {
			kind = 'd'
		}
		fmt.Fprintf(h, "%c %o %d %s\x00", kind, e.perm, len(e.data), e.path)
		h.Write(e.data)
	}
	var d [sha256.Size]byte
	h.Sum(d[:0])
	return d
}

// stateKey names what a state command printed: the command and the digest of its files.
type stateKey struct {
	command string
	files   [sha256.Size]byte
}

// memo keeps what state commands printed, at most memoSize of them: when it is full, the oldest
// goes.
type memo struct {
	mu    sync.Mutex
	out   map[stateKey][]byte
	order []stateKey
}

const memoSize = 1024

var stateMemo = &memo{out: map[stateKey][]byte{}}

func (m *memo) get(k stateKey) ([]byte, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out, ok := m.out[k]
	return out, ok
}

func (m *memo) put(k stateKey, out []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.out[k]; ok {
		return
	}
	if len(m.order) == memoSize {
		delete(m.out, m.order[0])
		m.order = m.order[1:]
	}
	m.out[k] = out
	m.order = append(m.order, k)
}
