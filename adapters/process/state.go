package process

import (
	"bufio"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/afero"
)

// stateTimeout bounds a state command.
const stateTimeout = time.Minute

// runState runs t.StateArgv on a copy of fsys and decodes the JSON it prints, with t.Ignore's
// paths removed. A state command must print the same for the same files (Target.StateArgv), so
// what it printed is remembered by the digest of the files it was run on, and a disk that holds
// the same files again (most cases end with the golden run's) is not shown to it twice; and
// an output that is one already decoded (the golden run's state, from other files) is not
// decoded again. See memo, which keeps digests for every disk and the documents themselves
// within a budget, so that a campaign's memory does not grow with its cases whatever the size
// of the state. The output goes to a file, not to memory, and is decoded from there when it
// must be, one large output at a time (stateDecoding).
func runState(t *Target, fsys afero.Fs) (any, error) {
	files, err := readTree(fsys)
	if err != nil {
		return nil, fmt.Errorf("reading the disk for the state command: %w", err)
	}
	command := strings.Join(t.StateArgv, "\x00") + "\x01" + t.Dir + "\x01" + strings.Join(t.Env, "\x00") + "\x01" + strings.Join(t.Ignore, "\x00")
	key := stateKey{command: command, files: files.digest()}
	if doc, ok := stateMemo.get(key); ok {
		return doc, nil
	}
	var doc any
	err = runStateCommand(t, files, func(out *os.File, size int64, digest [sha256.Size]byte) error {
		if d, ok := stateMemo.decoded(command, digest); ok {
			doc = d
			stateMemo.put(key, digest, int(size), d)
			return nil
		}
		if size > largeState { // decoding takes about twice the output: one such at a time
			stateDecoding.Lock()
			defer stateDecoding.Unlock()
		}
		d, err := decodeState(bufio.NewReader(out), size)
		if err != nil {
			head := make([]byte, headLen)
			n, _ := out.ReadAt(head, 0)
			return fmt.Errorf("state command %s printed no JSON (%w): %.120q", strings.Join(t.StateArgv, " "), err, head[:n])
		}
		if d, err = t.ignore(d); err != nil {
			return err
		}
		doc = d
		stateMemo.put(key, digest, int(size), d)
		return nil
	})
	return doc, err
}

// largeState is the size past which the output of state commands is decoded one at a time.
const largeState = 16 << 20

// stateDecoding is held while a large output of a state command is decoded.
var stateDecoding sync.Mutex

// headLen is how much of a state command's output an error quotes.
const headLen = 120

// decodeState decodes the one JSON value r holds, size bytes, numbers kept as written; nothing
// (an empty output) is null.
func decodeState(r io.Reader, size int64) (any, error) {
	if size == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(r)
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value")
	}
	return v, nil
}

// runStateCommand runs t.StateArgv on a copy of files, its output going to a file, and calls
// use with that file, the output's size and its SHA-256, once the command has exited.
func runStateCommand(t *Target, files tree, use func(out *os.File, size int64, digest [sha256.Size]byte) error) error {
	root, err := root()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp(root, "s")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	state := filepath.Join(dir, "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		return err
	}
	if err := files.write(state); err != nil {
		return fmt.Errorf("copying the disk for the state command: %w", err)
	}
	out, err := os.Create(filepath.Join(dir, "out.json"))
	if err != nil {
		return err
	}
	defer out.Close()
	c, err := startChild(command{argv: t.StateArgv, dir: t.Dir, env: append(expandEnv(t.Env, []string{EnvStateDir + "=" + state}), EnvStateDir+"="+state),
		name: filepath.Base(dir), marker: newToken(), stdout: out})
	if err != nil {
		return fmt.Errorf("state command: %w", err)
	}
	select {
	case <-c.exited:
		c.kill() // what it left running
	case <-time.After(stateTimeout):
		c.kill()
		return c.out.quoted(fmt.Errorf("state command %s did not finish in %s", strings.Join(t.StateArgv, " "), stateTimeout))
	}
	if err := c.err(); err != nil {
		return fmt.Errorf("state command %s: %w", strings.Join(t.StateArgv, " "), err)
	}
	h := sha256.New()
	if _, err := out.Seek(0, io.SeekStart); err != nil {
		return err
	}
	size, err := io.Copy(h, out)
	if err != nil {
		return fmt.Errorf("reading what the state command printed: %w", err)
	}
	if _, err := out.Seek(0, io.SeekStart); err != nil {
		return err
	}
	var digest [sha256.Size]byte
	h.Sum(digest[:0])
	return use(out, size, digest)
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

// stateKey names what a state command printed: the command (with its ignored paths) and the
// digest of its files.
type stateKey struct {
	command string
	files   [sha256.Size]byte
}

// docKey names a state document: the command, and the digest of what it printed.
type docKey struct {
	command string
	out     [sha256.Size]byte
}

// memo remembers what state commands printed: for each of the last memoSize disks, the digest
// of the output, and the decoded documents themselves for the outputs that fit in docBudget
// bytes (the most recently used first), besides the first document of each command, which is
// the golden run's and which most cases end with, kept for good. A campaign's memory then does
// not grow with its cases, however large the state: a state command printing 4 MiB over 74
// cases took a campaign from 41 MB to 588 MB when every output was kept (docs/performance.md
// measures it). A document is shared by the cases that read it: the oracle only reads it.
type memo struct {
	mu     sync.Mutex
	outs   map[stateKey][sha256.Size]byte // a disk's output, by digest
	order  []stateKey
	docs   map[docKey]*memoDoc
	pinned map[string]bool // commands whose first document is kept
	recent []docKey        // the documents not pinned, least recently used first
	bytes  int             // the outputs of the documents in recent, in all
}

type memoDoc struct {
	doc    any
	size   int // the bytes of the output it was decoded from
	pinned bool
}

const (
	memoSize  = 1024
	docBudget = 16 << 20
)

var stateMemo = newMemo()

func newMemo() *memo {
	return &memo{outs: map[stateKey][sha256.Size]byte{}, docs: map[docKey]*memoDoc{}, pinned: map[string]bool{}}
}

// get returns the document the state command printed for the disk of k, if it is kept.
func (m *memo) get(k stateKey) (any, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out, ok := m.outs[k]
	if !ok {
		return nil, false
	}
	dk := docKey{k.command, out}
	d, ok := m.docs[dk]
	if !ok {
		return nil, false
	}
	if !d.pinned { // used: the most recent now
		m.recent = append(slices.DeleteFunc(m.recent, func(x docKey) bool { return x == dk }), dk)
	}
	return d.doc, true
}

// decoded returns the document a state command printed with the given digest, if it is kept.
func (m *memo) decoded(command string, out [sha256.Size]byte) (any, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.docs[docKey{command, out}]
	if !ok {
		return nil, false
	}
	return d.doc, true
}

// put remembers that the disk of k made the state command print size bytes of digest out,
// decoded as doc.
func (m *memo) put(k stateKey, out [sha256.Size]byte, size int, doc any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.outs[k]; !ok {
		if len(m.order) == memoSize {
			delete(m.outs, m.order[0])
			m.order = m.order[1:]
		}
		m.order = append(m.order, k)
	}
	m.outs[k] = out
	dk := docKey{k.command, out}
	if _, ok := m.docs[dk]; ok {
		return
	}
	if !m.pinned[k.command] { // the command's first: the golden run's
		m.pinned[k.command] = true
		m.docs[dk] = &memoDoc{doc: doc, size: size, pinned: true}
		return
	}
	if size > docBudget {
		return // printed again whenever it is needed, rather than kept
	}
	for m.bytes+size > docBudget && len(m.recent) > 0 {
		old := m.recent[0]
		m.recent = m.recent[1:]
		m.bytes -= m.docs[old].size
		delete(m.docs, old)
	}
	m.docs[dk] = &memoDoc{doc: doc, size: size}
	m.recent = append(m.recent, dk)
	m.bytes += size
}
