package campaign

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/chaoskit/chaoskit/reports"
	"github.com/spf13/afero"
)

// The journal, DIR/cases.jsonl, is what makes a campaign resumable. Its first line is a header,
// the campaign's parameters; every later line is one finished case, a reports.Case as JSON,
// appended and fsynced as the case finishes. The header is written through a temporary file and
// a rename, so a journal either is missing or starts with a whole header; an append is fsynced
// before the next, so only the last line can be torn by a crash, and a torn or garbage last line
// is ignored (and cut off before the next append). A malformed line anywhere else is an error.

// JournalName is the journal's file name in a report directory.
const JournalName = "cases.jsonl"

// journalSchema names the version of the journal's format.
const journalSchema = "chaoskit.journal/v1"

// JournalPath returns the path of the journal of the report directory dir.
func JournalPath(dir string) string { return filepath.Join(dir, JournalName) }

// Header is the first line of a journal: the campaign's parameters, as the report records
// them.
type Header struct {
	Journal string          `json:"journal"` // journalSchema
	Seed    uint64          `json:"seed"`
	Options reports.Options `json:"options"`
}

// journal appends cases to a journal file.
type journal struct {
	f    afero.File
	path string
	err  error // the first failed append: later ones are not attempted
}

// WriteJournal writes a whole journal at path, atomically: the header, then cases. It returns
// the journal's size.
func WriteJournal(fsys afero.Fs, path string, h Header, cases []reports.Case) (size int64, err error) {
	h.Journal = journalSchema
	var buf bytes.Buffer
	for _, v := range append([]any{h}, casesAsAny(cases)...) {
		b, err := json.Marshal(v)
		if err != nil {
			return 0, fmt.Errorf("encoding journal %s: %w", path, err)
		}
		buf.Write(append(b, '\n'))
	}
	return int64(buf.Len()), reports.WriteAtomic(fsys, path, buf.Bytes())
}

func casesAsAny(cases []reports.Case) []any {
	out := make([]any, len(cases))
	for i := range cases {
		out[i] = &cases[i]
	}
	return out
}

// startJournal starts a journal at path, replacing any, with the header h, and opens it for
// appending.
func startJournal(fsys afero.Fs, path string, h Header) (*journal, error) {
	size, err := WriteJournal(fsys, path, h, nil)
	if err != nil {
		return nil, err
	}
	return openJournal(fsys, path, size)
}

// openJournal opens the journal at path for appending after its first size bytes, its intact
// part, cutting off anything after them (a torn last line) first.
func openJournal(fsys afero.Fs, path string, size int64) (*journal, error) {
	f, err := fsys.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, fmt.Errorf("opening journal: %w", err)
	}
	j := &journal{f: f, path: path}
	fi, err := f.Stat()
	if err == nil && fi.Size() != size {
		err = f.Truncate(size)
		if err == nil {
			err = f.Sync()
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("cutting the torn end off journal %s: %w", path, err)
	}
	return j, nil
}

// append appends cases to the journal in one write, a line each, and fsyncs it. After a failure
// it appends nothing more, so that a partly written line stays the journal's last, which reading
// it ignores.
func (j *journal) append(cases ...*reports.Case) error {
	if j.err != nil {
		return j.err
	}
	var buf []byte
	var err error
	for _, c := range cases {
		var b []byte
		if b, err = json.Marshal(c); err != nil {
			break
		}
		buf = append(append(buf, b...), '\n')
	}
	if err == nil {
		_, err = j.f.Write(buf)
	}
	if err == nil {
		err = j.f.Sync()
	}
	if err != nil {
		j.err = fmt.Errorf("journaling %d cases to %s: %w", len(cases), j.path, err)
	}
	return j.err
}

func (j *journal) close() error { return j.f.Close() }

// journalWriter journals cases from a goroutine of its own, so that a campaign's workers do not
// wait on fsync: each time, it writes every case queued during the previous fsync in one append
// and fsyncs them together (group commit). Every case is still appended and fsynced as it
// finishes, within one fsync's time.
type journalWriter struct {
	j     *journal
	queue chan *reports.Case
	done  chan struct{}
}

func newJournalWriter(j *journal) *journalWriter {
	w := &journalWriter{j: j, queue: make(chan *reports.Case, 1024), done: make(chan struct{})}
	go w.loop()
	return w
}

// add queues c to be journaled.
func (w *journalWriter) add(c *reports.Case) { w.queue <- c }

func (w *journalWriter) loop() {
	defer close(w.done)
	for c := range w.queue {
		batch := []*reports.Case{c}
		for more := true; more; {
			select {
			case c, ok := <-w.queue:
				if more = ok; ok {
					batch = append(batch, c)
				}
			default:
				more = false
			}
		}
		w.j.append(batch...) // an error sticks to w.j, for close to return
	}
}

// close journals the cases still queued, closes the journal, and returns the first error in
// journaling.
func (w *journalWriter) close() error {
	close(w.queue)
	<-w.done
	return errors.Join(w.j.err, w.j.close())
}

// JournalState is what a journal holds: the campaign's parameters and the cases it journaled.
type JournalState struct {
	Header Header
	Cases  []reports.Case
	size   int64 // the length of its intact part, after which a torn last line may follow
}

// ReadJournal reads the journal at path. A missing journal is an error wrapping fs.ErrNotExist;
// a malformed one is a *JournalError naming the file and line. A torn or garbage last line (a
// crash mid-append) is ignored, and a case journaled twice counts once.
func ReadJournal(fsys afero.Fs, path string) (*JournalState, error) {
	b, err := afero.ReadFile(fsys, path)
	if err != nil {
		return nil, fmt.Errorf("reading journal: %w", err)
	}
	st := &JournalState{}
	seen := map[string]bool{}
	torn := 0 // the number of the first line that does not hold a case, if any
	for n := 1; len(b) > 0; n++ {
		line, rest, whole := bytes.Cut(b, []byte{'\n'})
		b = rest
		if n == 1 {
			if err := decodeHeader(line, whole, &st.Header); err != nil {
				return nil, &JournalError{Path: path, Line: 1, Err: err}
			}
			st.size = int64(len(line) + 1)
			continue
		}
		c, ok := decodeCase(line, whole)
		switch {
		case !ok && torn == 0:
			torn = n
		case ok && torn != 0:
			return nil, &JournalError{Path: path, Line: torn, Err: errors.New("not a case, yet cases follow it")}
		case ok:
			if !seen[c.ID] {
				st.Cases = append(st.Cases, c)
			}
			seen[c.ID] = true
			st.size += int64(len(line) + 1)
		}
	}
	if st.Header.Journal == "" {
		return nil, &JournalError{Path: path, Err: errors.New("empty")}
	}
	return st, nil
}

// decodeHeader decodes a journal's first line into h.
func decodeHeader(line []byte, whole bool, h *Header) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(h); err != nil || !whole || h.Journal == "" {
		return errors.New("not a chaoskit journal header")
	}
	if h.Journal != journalSchema {
		return fmt.Errorf("journal format is %q; this chaoskit reads %q", h.Journal, journalSchema)
	}
	return nil
}

// decodeCase decodes a journal line holding a case. A line holds a case only if it is whole
// (ends in a newline) and is exactly the encoding of the case it decodes to, so that a write
// torn with a garbage tail is not mistaken for a case.
func decodeCase(line []byte, whole bool) (reports.Case, bool) {
	var c reports.Case
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if !whole || dec.Decode(&c) != nil || dec.More() || c.ID == "" {
		return c, false
	}
	again, err := json.Marshal(&c)
	return c, err == nil && bytes.Equal(again, line)
}

// JournalError reports a journal that cannot be read: not a journal, of another format
// version, or damaged before its last line.
type JournalError struct {
	Path string
	Line int // the line at fault, from 1; 0 for the whole file
	Err  error
}

func (e *JournalError) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("journal %s: %v", e.Path, e.Err)
	}
	return fmt.Sprintf("journal %s line %d: %v", e.Path, e.Line, e.Err)
}

// Unwrap returns the cause.
func (e *JournalError) Unwrap() error { return e.Err }

// mkdirDurable creates dir and any missing parents, and fsyncs the directory holding each
// one it creates, so that a power loss cannot take the directory, and the journal in it, away.
func mkdirDurable(fsys afero.Fs, dir string) error {
	var missing []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := fsys.Stat(d); err == nil {
			break
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating the report directory: %w", err)
	}
	for _, d := range missing {
		if err := reports.SyncDir(fsys, filepath.Dir(d)); err != nil {
			return fmt.Errorf("creating the report directory %s: %w", dir, err)
		}
	}
	return nil
}
