package campaign

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/spf13/afero"
)

// The journal, DIR/cases.jsonl, is what makes a campaign resumable. Its first line is a header,
// the campaign's parameters; every later line is one finished case, a reports.Case as JSON,
// appended and fsynced as the case finishes. The header is written through a temporary file and
// a rename, so a journal either is missing or starts with a whole header; an append is fsynced
// before the next, so only the last line can be torn by a crash, and a torn or garbage last line
// is ignored (and cut off before the next append). A malformed line anywhere else is an error.

// journalName is the journal's file name in a report directory.
const journalName = "cases.jsonl"

// journalSchema names the version of the journal's format.
const journalSchema = "chaoskit.journal/v1"

// JournalPath returns the path of the journal of the report directory dir.
func JournalPath(dir string) string { return filepath.Join(dir, journalName) }

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
	size int64 // its length: where the next line goes
	err  error // the first failed append: later ones are not attempted
}

// writeJournal writes a whole journal at path, atomically: the header, then cases. It returns
// the journal's size.
func writeJournal(fsys afero.Fs, path string, h Header, cases []reports.Case) (size int64, err error) {
	return WriteJournalFrom(fsys, path, h, (&reports.Report{Cases: cases}).Each)
}

// WriteJournalFrom is writeJournal of the cases each yields (as reports.Report.Each does),
// written one at a time: a journal of any size takes the memory of a case. It returns the
// journal's size, or the first error, of each or of writing, naming path.
func WriteJournalFrom(fsys afero.Fs, path string, h Header, each func(fn func(*reports.Case) error) error) (size int64, err error) {
	h.Journal = journalSchema
	err = reports.WriteAtomicFunc(fsys, path, func(w io.Writer) error {
		line := func(v any) error {
			b, err := json.Marshal(v)
			if err != nil {
				return fmt.Errorf("encoding the journal: %w", err)
			}
			n, err := w.Write(append(b, '\n'))
			size += int64(n)
			return err
		}
		if err := line(h); err != nil {
			return err
		}
		return each(func(c *reports.Case) error { return line(c) })
	})
	return size, err
}

// startJournal starts a journal at path, replacing any, with the header h, and opens it for
// appending.
func startJournal(fsys afero.Fs, path string, h Header) (*journal, error) {
	size, err := writeJournal(fsys, path, h, nil)
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
	j := &journal{f: f, path: path, size: size}
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
	_, err := j.appendAt(cases)
	return err
}

// appendAt is append, returning where each case's line starts; a line ends where the next one
// starts, or, for the last, at j.size.
func (j *journal) appendAt(cases []*reports.Case) ([]int64, error) {
	if j.err != nil {
		return nil, j.err
	}
	var buf []byte
	var err error
	at := make([]int64, len(cases))
	for i, c := range cases {
		var b []byte
		if b, err = json.Marshal(c); err != nil {
			break
		}
		at[i] = j.size + int64(len(buf))
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
		return nil, j.err
	}
	j.size += int64(len(buf))
	return at, nil
}

func (j *journal) close() error { return j.f.Close() }

// journalWriter journals cases from a goroutine of its own, so that a campaign's workers do not
// wait on fsync: each time, it writes every case queued during the previous fsync in one append
// and fsyncs them together (group commit). Every case is still appended and fsynced as it
// finishes, within one fsync's time. It remembers where each case went, not the case, so that
// the report can read the cases back; a case it could not journal (the disk full, say) it keeps
// in memory instead, for the report to hold all the same.
type journalWriter struct {
	j       *journal
	rank    map[string]int // the campaign's targets, by name
	queue   chan *reports.Case
	done    chan struct{}
	entries []entry        // the cases journaled
	kept    []reports.Case // the cases that could not be
}

func newJournalWriter(j *journal, rank map[string]int, cases int) *journalWriter {
	w := &journalWriter{j: j, rank: rank, queue: make(chan *reports.Case, 1024), done: make(chan struct{}),
		entries: make([]entry, 0, cases)} // sized once: a campaign of a million cases makes no garbage growing it
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
		at, err := w.j.appendAt(batch) // an error sticks to w.j, for close to return
		for i, c := range batch {
			if err != nil {
				w.kept = append(w.kept, *c)
				continue
			}
			end := w.j.size
			if i+1 < len(batch) {
				end = at[i+1]
			}
			w.entries = append(w.entries, newEntry(c, w.rankOf(c.Target), at[i], end-at[i]-1, fromRun))
		}
	}
}

// rankOf returns the rank of the named target, the order in which its cases come in a report.
func (w *journalWriter) rankOf(target string) int {
	r, ok := w.rank[target]
	if !ok {
		r = len(w.rank)
		w.rank[target] = r
	}
	return r
}

// close journals the cases still queued, closes the journal, and returns the first error in
// writing it.
func (w *journalWriter) close() error {
	close(w.queue)
	<-w.done
	return errors.Join(w.j.err, w.j.close())
}

// JournalState is what a journal holds: the campaign's parameters and where each case it
// journaled is, not the cases, so that a journal of a million cases is read in little memory.
type JournalState struct {
	Header  Header
	fs      afero.Fs
	path    string
	entries []entry // one per case, in campaign order (see sortEntries)
	size    int64   // the length of its intact part, after which a torn last line may follow
}

// Len returns the number of cases the journal holds.
func (st *JournalState) Len() int { return len(st.entries) }

// Each calls fn with each case of the journal in campaign order: by target, in the order of the
// header's targets, then by index. It stops at the first error, of fn or of reading the
// journal, and returns it.
func (st *JournalState) Each(fn func(*reports.Case) error) error {
	return eachCase(st.entries, [2]caseFile{{st.fs, st.path}}, nil, fn)
}

// entry says where one case of a campaign is: a line of a journal, or a case held in memory. It
// takes 24 bytes, so that the index of a million cases takes 24 MB.
type entry struct {
	off   int64  // where its line starts; for a case in memory, its position among them
	index int32  // its index in its target's campaign
	n     int32  // the length of its line, its newline left out
	hash  uint32 // of its ID
	rank  int16  // its target's rank
	from  uint8  // a journal read (fromJournal), the run's journal (fromRun) or memory
	fail  bool   // it failed
}

// Where an entry's case is.
const (
	fromJournal = iota // the journal resumed
	fromRun            // the journal this run appends to
	fromMemory         // held in memory
)

func newEntry(c *reports.Case, rank int, off, n int64, from uint8) entry {
	if c.Index > math.MaxInt32 || rank > math.MaxInt16 {
		panic(fmt.Sprintf("campaign: case %s: index %d or target rank %d beyond what a journal indexes", c.ID, c.Index, rank))
	}
	return entry{off: off, hash: idHash(c.ID), index: int32(c.Index), n: int32(n), rank: int16(rank), from: from, fail: c.Verdict == oracle.Fail}
}

// idHash is a 32-bit hash of a case's ID: enough to tell, but for one chance in four billion,
// that a journaled case is not the campaign's case at its index.
func idHash(id string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(id))
	return h.Sum32()
}

// sortEntries puts entries in campaign order: by target rank, then index, then where they are
// (the earlier line of a case journaled twice first).
func sortEntries(entries []entry) {
	slices.SortFunc(entries, func(a, b entry) int {
		return cmp.Or(cmp.Compare(a.rank, b.rank), cmp.Compare(a.index, b.index), cmp.Compare(a.from, b.from), cmp.Compare(a.off, b.off))
	})
}

// caseFile is a journal to read cases from.
type caseFile struct {
	fs   afero.Fs
	path string
}

// eachCase calls fn with the case of each entry, in order: read from the journal files (by where
// the entry is from) or taken from mem.
func eachCase(entries []entry, files [2]caseFile, mem []reports.Case, fn func(*reports.Case) error) error {
	var open [2]afero.File
	defer func() {
		for _, f := range open {
			if f != nil {
				f.Close()
			}
		}
	}()
	var buf []byte
	for _, e := range entries {
		if e.from == fromMemory {
			c := mem[e.off]
			if err := fn(&c); err != nil {
				return err
			}
			continue
		}
		cf := files[e.from]
		if open[e.from] == nil {
			f, err := cf.fs.Open(cf.path)
			if err != nil {
				return fmt.Errorf("reading the cases back from the journal: %w", err)
			}
			open[e.from] = f
		}
		buf = slices.Grow(buf[:0], int(e.n))[:e.n]
		if n, err := open[e.from].ReadAt(buf, e.off); n < len(buf) {
			return fmt.Errorf("reading the cases back from journal %s at byte %d: %w", cf.path, e.off, cmp.Or(err, io.ErrUnexpectedEOF))
		}
		c := &reports.Case{}
		if err := json.Unmarshal(buf, c); err != nil || c.Index != int(e.index) || idHash(c.ID) != e.hash {
			return &JournalError{Path: cf.path, Err: fmt.Errorf("the case at byte %d changed since it was journaled", e.off)}
		}
		if err := fn(c); err != nil {
			return err
		}
	}
	return nil
}

// ReadJournal reads the journal at path. A missing journal is an error wrapping fs.ErrNotExist;
// a malformed one is a *JournalError naming the file and line. A torn or garbage last line (a
// crash mid-append) is ignored, and a case journaled twice counts once.
func ReadJournal(fsys afero.Fs, path string) (*JournalState, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading journal: %w", err)
	}
	defer f.Close()
	st := &JournalState{fs: fsys, path: path}
	rank := map[string]int{}
	torn := 0 // the number of the first line that does not hold a case, if any
	rd := bufio.NewReaderSize(f, 64<<10)
	var off int64
	for n := 1; ; n++ {
		line, err := rd.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("reading journal: %w", err)
		}
		if len(line) == 0 {
			break
		}
		at := off
		off += int64(len(line))
		line, whole := bytes.CutSuffix(line, []byte{'\n'})
		if n == 1 {
			if err := decodeHeader(line, whole, &st.Header); err != nil {
				return nil, &JournalError{Path: path, Line: 1, Err: err}
			}
			st.size = int64(len(line) + 1)
			for i, t := range st.Header.Options.Targets {
				if _, ok := rank[t]; !ok {
					rank[t] = i
				}
			}
			continue
		}
		c, ok := decodeCase(line, whole)
		switch {
		case !ok && torn == 0:
			torn = n
		case ok && torn != 0:
			return nil, &JournalError{Path: path, Line: torn, Err: errors.New("not a case, yet cases follow it")}
		case ok:
			r, known := rank[c.Target]
			if !known {
				r = len(rank)
				rank[c.Target] = r
			}
			st.entries = append(st.entries, newEntry(&c, r, at, int64(len(line)), fromJournal))
			st.size += int64(len(line) + 1)
		}
	}
	if st.Header.Journal == "" {
		return nil, &JournalError{Path: path, Err: errors.New("empty")}
	}
	sortEntries(st.entries)
	st.entries = slices.CompactFunc(st.entries, func(a, b entry) bool {
		return a.rank == b.rank && a.index == b.index && a.hash == b.hash
	})
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
