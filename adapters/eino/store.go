package eino

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/cloudwego/eino/compose"
	"github.com/spf13/afero"
)

// ErrDamaged is wrapped by the error of a read that finds a checkpoint or a done record whose
// checksum does not match: a durable byte changed. The store stops loudly rather than resume
// from it.
var ErrDamaged = errors.New("eino checkpoint store: record damaged (checksum mismatch)")

// Store is a compose.CheckPointStore on an afero.Fs (a chaoskit process's env.FS()), durable
// across power loss: Set writes the checkpoint to a temporary file, fsyncs it, renames it over
// the previous one and fsyncs the directory, so that a crash at any point leaves either the
// old checkpoint or the new one, whole. Each record carries a sequence number and a CRC-32C, so a
// damaged record is an error (wrapping ErrDamaged), never a silent resume from garbage.
//
// Eino calls Set only when a run stops at an interrupt (compose.WithInterruptAfterNodes or
// an interrupt raised by a node), never after an ordinary node and never on success: see
// Checkpointing, and Graph, which records the run's output when it succeeds.
type Store struct {
	fsys afero.Fs
	dir  string
	// mark, if set, is called after each record is durable (chaoskit's env.Mark).
	mark func(label string)
}

var _ compose.CheckPointStore = (*Store)(nil)

// NewStore returns a store keeping its records in dir on fsys. mark, if not nil, is called
// with a label unique to each checkpoint ("checkpoint run-1 #3") right after it is durable: pass
// env.Mark, so that chaoskit measures the work a crash loses from the checkpoints.
func NewStore(fsys afero.Fs, dir string, mark func(label string)) *Store {
	if dir == "" {
		dir = "."
	}
	return &Store{fsys: fsys, dir: dir, mark: mark}
}

// record is a stored checkpoint or done record: a header line, then the payload.
//
//	chaoskit-eino v1 seq=3 len=1122 crc32c=1a2b3c4d\n<payload>
type record struct {
	seq     int
	payload []byte
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

const magic = "chaoskit-eino v1"

func (r record) encode() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s seq=%d len=%d crc32c=%08x\n", magic, r.seq, len(r.payload), crc32.Checksum(r.payload, castagnoli))
	b.Write(r.payload)
	return b.Bytes()
}

func decode(name string, b []byte) (record, error) {
	damaged := func(why string) (record, error) {
		return record{}, fmt.Errorf("%s: %s: %w", name, why, ErrDamaged)
	}
	nl := bytes.IndexByte(b, '\n')
	if nl < 0 {
		return damaged("no header")
	}
	var seq, n int
	var sum uint32
	if _, err := fmt.Sscanf(string(b[:nl]), magic+" seq=%d len=%d crc32c=%08x", &seq, &n, &sum); err != nil {
		return damaged("malformed header")
	}
	payload := b[nl+1:]
	if len(payload) != n {
		return damaged(fmt.Sprintf("%d bytes, the header says %d", len(payload), n))
	}
	if crc32.Checksum(payload, castagnoli) != sum {
		return damaged("checksum mismatch")
	}
	return record{seq: seq, payload: payload}, nil
}

// fileName maps a checkpoint id to a file name: ids made of letters, digits, '-', '_' and '.'
// are kept as they are, others are escaped.
func fileName(id string) string {
	var b strings.Builder
	for _, c := range []byte(id) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.' && b.Len() > 0:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02x", c)
		}
	}
	return b.String()
}

func (s *Store) path(id, suffix string) string {
	return path.Join(s.dir, fileName(id)+suffix)
}

// read reads the record at p; found is false if there is none.
func (s *Store) read(p string) (r record, found bool, err error) {
	b, err := afero.ReadFile(s.fsys, p)
	if errors.Is(err, fs.ErrNotExist) {
		return record{}, false, nil
	}
	if err != nil {
		return record{}, false, fmt.Errorf("eino checkpoint store: reading %s: %w", p, err)
	}
	r, err = decode(p, b)
	return r, err == nil, err
}

// write makes b the content of p durably: a temporary file written and fsynced, renamed over p,
// then the directory fsynced.
func (s *Store) write(p string, b []byte) error {
	if err := s.mkdir(s.dir); err != nil {
		return err
	}
	tmp := p + ".tmp"
	f, err := s.fsys.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("eino checkpoint store: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("eino checkpoint store: writing %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("eino checkpoint store: fsync of %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("eino checkpoint store: closing %s: %w", tmp, err)
	}
	if err := s.fsys.Rename(tmp, p); err != nil {
		return fmt.Errorf("eino checkpoint store: %w", err)
	}
	return s.syncDir(s.dir)
}

// syncDir fsyncs a directory, which makes the entries created in it (and renamed into it)
// durable.
func (s *Store) syncDir(dir string) error {
	d, err := s.fsys.Open(dir)
	if err != nil {
		return fmt.Errorf("eino checkpoint store: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("eino checkpoint store: fsync of directory %s: %w", dir, err)
	}
	return nil
}

// mkdir makes dir and its missing parents durably: each directory it creates is made durable
// by an fsync of its parent, without which a power loss can take the new directory away, and
// every checkpoint in it.
func (s *Store) mkdir(dir string) error {
	if _, err := s.fsys.Stat(dir); err == nil {
		return nil
	}
	parent := path.Dir(dir)
	if parent != dir {
		if err := s.mkdir(parent); err != nil {
			return err
		}
	}
	if err := s.fsys.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("eino checkpoint store: %w", err)
	}
	return s.syncDir(parent)
}

// Get returns the checkpoint saved under id. A damaged checkpoint is an error wrapping
// ErrDamaged.
func (s *Store) Get(_ context.Context, id string) ([]byte, bool, error) {
	r, found, err := s.read(s.path(id, ""))
	return r.payload, found, err
}

// Set saves the checkpoint under id, durably, then marks it.
func (s *Store) Set(_ context.Context, id string, checkpoint []byte) error {
	p := s.path(id, "")
	prev, _, err := s.read(p)
	if err != nil {
		return err
	}
	r := record{seq: prev.seq + 1, payload: checkpoint}
	if err := s.write(p, r.encode()); err != nil {
		return err
	}
	if s.mark != nil {
		s.mark(fmt.Sprintf("checkpoint %s #%d", id, r.seq))
	}
	return nil
}

// Seq returns the sequence number of the checkpoint saved under id: how many checkpoints the
// run has saved, 0 if none.
func (s *Store) Seq(id string) (int, error) {
	r, _, err := s.read(s.path(id, ""))
	return r.seq, err
}

// SetDone records, durably, that the run id finished with output (encoded as JSON), then marks
// it ("done run-1"). Eino leaves the last interrupt's checkpoint in place when a run succeeds,
// so that invoking the same id again would run the nodes after it again: a harness must keep
// its own record that the run is over.
func (s *Store) SetDone(id string, output any) error {
	b, err := json.Marshal(output)
	if err != nil {
		return fmt.Errorf("eino checkpoint store: encoding the output of %s: %w", id, err)
	}
	if err := s.write(s.path(id, ".done"), record{seq: 1, payload: b}.encode()); err != nil {
		return err
	}
	if s.mark != nil {
		s.mark("done " + id)
	}
	return nil
}

// Done returns the output SetDone recorded for run id, as JSON.
func (s *Store) Done(id string) (output json.RawMessage, found bool, err error) {
	r, found, err := s.read(s.path(id, ".done"))
	return r.payload, found, err
}

// String names the store for messages.
func (s *Store) String() string {
	return "eino checkpoint store in " + strconv.Quote(s.dir)
}
