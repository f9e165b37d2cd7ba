package reports

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// This file reads and writes report.json a case at a time, so that a report of a million cases
// never needs them all in memory: WriteJSON writes what Marshal would, and a Reader reads it
// back, its head (everything but the cases) first, checking it against its trailer (trailer.go).

// casesKey is how the field of the cases starts in the indented encoding of a report: a field
// of the top-level object, which alone sits at an indent of two spaces.
const casesKey = "\n  \"cases\": "

// WriteJSON writes r as indented JSON with a trailing newline, its cases read one at a time
// (see Each): the same bytes as encoding/json's indented encoding of r with every case in
// Cases, and then, as the object's last field, its trailer (see Trailer), which holds the number
// of cases and the SHA-256 of every byte before it, so that a reader can tell a whole report
// from one cut short or altered. It returns the first error, of reading a case or of writing.
func (r *Report) WriteJSON(w io.Writer) error {
	head := *r
	head.Cases, head.Source = nil, nil
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(&head); err != nil {
		return fmt.Errorf("encoding report: %w", err)
	}
	b := buf.Bytes()
	at := bytes.Index(b, []byte(casesKey+"null"))
	if at < 0 {
		panic("reports: the encoding of a report has no cases field")
	}
	before, after := b[:at+len(casesKey)], b[at+len(casesKey)+len("null"):]
	after, ok := bytes.CutSuffix(after, []byte("\n}\n"))
	if !ok {
		panic("reports: the encoding of a report does not end its object on a line of its own")
	}
	out := bufio.NewWriterSize(w, 64<<10)
	sum := sha256.New()
	bw := io.MultiWriter(out, sum) // everything before the trailer, which holds its digest
	bw.Write(before)
	n := 0
	var line, indented bytes.Buffer
	err := r.Each(func(c *Case) error {
		line.Reset()
		indented.Reset()
		e := json.NewEncoder(&line)
		if err := e.Encode(c); err != nil {
			return fmt.Errorf("encoding case %s: %w", c.ID, err)
		}
		if err := json.Indent(&indented, bytes.TrimSuffix(line.Bytes(), []byte{'\n'}), "    ", "  "); err != nil {
			return fmt.Errorf("encoding case %s: %w", c.ID, err)
		}
		sep := ",\n    "
		if n == 0 {
			sep = "[\n    "
		}
		n++
		io.WriteString(bw, sep)
		_, err := bw.Write(indented.Bytes())
		return err
	})
	if err != nil {
		return err
	}
	switch {
	case n > 0:
		io.WriteString(bw, "\n  ]")
	case r.Source == nil && r.Cases != nil:
		io.WriteString(bw, "[]")
	default:
		io.WriteString(bw, "null")
	}
	bw.Write(after)
	io.WriteString(bw, ",\n")
	if err := writeTrailer(out, n, sum.Sum(nil)); err != nil {
		return err
	}
	return out.Flush()
}

// Reader reads a report case by case: Head is the report without its cases, and Next returns
// them one at a time. It reads the reports chaoskit writes, whose fields other than the cases'
// wall-clock time and the trailer come before the cases. Next returns io.EOF only once it has
// read the whole report and checked it against its trailer: the count of its cases and the
// SHA-256 of its bytes; a report cut short or altered is an error wrapping ErrDamaged instead.
type Reader struct {
	// Head is the report without its cases. Its DurationMs, which follows the cases, is set
	// once Next has returned io.EOF.
	Head *Report

	dec    *json.Decoder
	hashed *hashingReader
	closer io.Closer
	path   string
	array  bool // the cases are an array, not null
	cases  bool // the array of cases is still open
	closed bool // the report's object has been read to its end
	done   bool
	n      int // the cases read
}

// OpenReport opens the report at path for reading case by case, having verified the whole file
// against its trailer (see Verify): a report cut short or altered is refused before any of it
// is read, with an error wrapping ErrDamaged. Errors name the file.
func OpenReport(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("loading report: %w", err)
	}
	rd, err := NewReader(bufio.NewReaderSize(f, 64<<10))
	if err == nil || errors.Is(err, errMalformed) || errors.Is(err, ErrDamaged) {
		// Whether the head reads or not, a file that is not whole says so first; one that is
		// not a report of this schema at all says that.
		if _, verr := verifyFile(f); verr != nil {
			err = verr
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("loading report %s: %w", path, err)
	}
	rd.closer, rd.path = f, path
	return rd, nil
}

// NewReader starts reading a report from rd, reading its head; see Reader.
func NewReader(rd io.Reader) (*Reader, error) {
	hashed := newHashingReader(rd)
	dec := json.NewDecoder(hashed)
	dec.DisallowUnknownFields()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, notReport(cmpErr(err, "not a JSON object"))
	}
	fields := map[string]json.RawMessage{}
	r := &Reader{dec: dec, hashed: hashed}
	for dec.More() {
		key, err := r.key()
		if err != nil {
			return nil, notReport(err)
		}
		if key == "cases" {
			r.cases = true
			break
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, notReport(err)
		}
		fields[key] = v
	}
	if !r.cases { // an object without cases, which chaoskit never writes: it ends here
		if _, err := dec.Token(); err != nil {
			return nil, notReport(err)
		}
		r.closed = true
	}
	var schema *string
	if raw, ok := fields["schema"]; ok {
		json.Unmarshal(raw, &schema)
	}
	switch {
	case schema == nil && r.cases:
		return nil, errors.New(`not a chaoskit report: no "schema" field before its cases`)
	case schema == nil:
		return nil, errors.New(`not a chaoskit report: no "schema" field`)
	case *schema == schemaV1:
		return nil, fmt.Errorf("report schema is %q; this chaoskit reads %q (a v1 report has no trailer to verify it by: run its campaign again)", *schema, Schema)
	case *schema != Schema:
		return nil, fmt.Errorf("report schema is %q; this chaoskit reads %q", *schema, Schema)
	}
	r.Head = &Report{}
	if err := decodeFields(fields, r.Head); err != nil {
		return nil, err
	}
	if r.cases {
		t, err := dec.Token()
		switch {
		case err != nil:
			return nil, malformed(err)
		case t == nil: // "cases": null
			r.cases = false
		case t != json.Delim('['):
			return nil, malformed(errors.New(`"cases" is not an array`))
		default:
			r.array = true
		}
	}
	if !r.cases {
		if err := r.tail(); err != io.EOF {
			return nil, err
		}
	}
	return r, nil
}

// key reads the key of the next field of an object.
func (r *Reader) key() (string, error) {
	t, err := r.dec.Token()
	if err != nil {
		return "", err
	}
	key, ok := t.(string)
	if !ok {
		return "", fmt.Errorf("unexpected %v", t)
	}
	return key, nil
}

// Next returns the next case, or io.EOF after the last one. Other errors name the file.
func (r *Reader) Next() (*Case, error) {
	c, err := r.next()
	if err != nil && err != io.EOF && r.path != "" {
		err = fmt.Errorf("loading report %s: %w", r.path, err)
	}
	return c, err
}

func (r *Reader) next() (*Case, error) {
	if !r.cases {
		if r.done {
			return nil, io.EOF
		}
		return nil, r.tail()
	}
	if !r.dec.More() {
		if _, err := r.dec.Token(); err != nil { // the closing bracket
			return nil, malformed(err)
		}
		r.cases = false
		return nil, r.tail()
	}
	c := &Case{}
	if err := r.dec.Decode(c); err != nil {
		return nil, malformed(err)
	}
	r.n++
	return c, nil
}

// tail reads the fields after the cases and the end of the report, and returns io.EOF if they
// are well formed.
func (r *Reader) tail() error {
	if r.done {
		return io.EOF
	}
	fields := map[string]json.RawMessage{}
	var keys []string
	for r.dec.More() {
		key, err := r.key()
		if err != nil {
			return malformed(err)
		}
		if key == "cases" {
			return malformed(errors.New(`"cases" given twice`))
		}
		var v json.RawMessage
		if err := r.dec.Decode(&v); err != nil {
			return malformed(err)
		}
		fields[key] = v
		keys = append(keys, key)
	}
	if !r.closed {
		if _, err := r.dec.Token(); err != nil { // the closing brace
			return malformed(err)
		}
	}
	if _, err := r.dec.Token(); err != io.EOF {
		return malformed(errors.New("data after the report"))
	}
	for i, key := range keys {
		switch {
		case key == "trailer" && i == len(keys)-1:
		case key == "trailer":
			return damaged("its trailer is not its last field")
		case key != "duration_ms": // chaoskit writes every other field before the cases
			return malformed(fmt.Errorf("%q after the cases: only duration_ms and the trailer may follow them", key))
		}
	}
	t, err := r.hashed.trailer()
	if err != nil {
		return err
	}
	if r.n != t.Cases {
		return damaged(fmt.Sprintf("it holds %s, its trailer says %d", Count(r.n, "case"), t.Cases))
	}
	if d, ok := fields["duration_ms"]; ok {
		if err := json.Unmarshal(d, &r.Head.DurationMs); err != nil {
			return malformed(fmt.Errorf("duration_ms: %w", err))
		}
	}
	r.done = true
	return io.EOF
}

// decodeFields decodes the fields of a report's object into r, refusing unknown ones.
func decodeFields(fields map[string]json.RawMessage, r *Report) error {
	b, err := json.Marshal(fields)
	if err != nil {
		return malformed(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(r); err != nil {
		return malformed(err)
	}
	return nil
}

// notReport is the error of reading what is not a report's head, or, when the reading met the end
// of the input first, of a report cut short.
func notReport(err error) error {
	if cut(err) {
		return damaged("it ends before its trailer")
	}
	return fmt.Errorf("not a chaoskit report: %w", err)
}

// cut reports whether err is of meeting the end of the input in the middle of a report.
func cut(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) }

// errMalformed is wrapped by the error of a report that is not well formed.
var errMalformed = errors.New("malformed " + Schema + " report")

func malformed(err error) error {
	if cut(err) {
		return damaged("it ends before its trailer")
	}
	return fmt.Errorf("%w: %w", errMalformed, err)
}

// cmpErr returns err, or an error saying what when err is nil.
func cmpErr(err error, what string) error {
	if err != nil {
		return err
	}
	return errors.New(what)
}

// Close closes the file the Reader reads, if it opened one.
func (r *Reader) Close() error {
	if r.closer == nil {
		return nil
	}
	return r.closer.Close()
}

// Load reads a report, refusing other schema versions and malformed files with an error that
// names the file. It holds every case in memory: LoadHead and OpenReport read a large report
// without.
func Load(path string) (*Report, error) {
	rd, err := OpenReport(path)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return rd.all()
}

// LoadHead reads a report without its cases: its schema, provenance, seed, options and summary,
// all that a gate or a comparison needs. It reads no further than the start of the cases, so it
// is quick whatever their number; the report's DurationMs is left 0.
func LoadHead(path string) (*Report, error) {
	rd, err := OpenReport(path)
	if err != nil {
		return nil, err
	}
	rd.Close()
	return rd.Head, nil
}

// LoadStream reads the report at path as LoadHead does, and sets its Source to read the cases
// from the file one at a time whenever they are asked for (see Each), so that the report takes
// the same memory whatever the number of its cases. Its summary is taken as written, not
// recomputed; its DurationMs, which follows the cases in the file, is 0 until they have been
// read through once. Errors, of reading the head or a case, name the file; a file changed between
// reads is read as it is then.
func LoadStream(path string) (*Report, error) {
	head, err := LoadHead(path)
	if err != nil {
		return nil, err
	}
	head.Source = func(fn func(*Case) error) error {
		rd, err := OpenReport(path)
		if err != nil {
			return err
		}
		defer rd.Close()
		for {
			c, err := rd.Next()
			if err == io.EOF {
				head.DurationMs = rd.Head.DurationMs
				return nil
			}
			if err != nil {
				return err
			}
			if err := fn(c); err != nil {
				return err
			}
		}
	}
	return head, nil
}

// Decode reads a report from rd; see Load.
func Decode(rd io.Reader) (*Report, error) {
	r, err := NewReader(rd)
	if err != nil {
		return nil, err
	}
	return r.all()
}

// all reads every case left into Head.Cases and returns Head.
func (r *Reader) all() (*Report, error) {
	if r.array {
		r.Head.Cases = []Case{}
	}
	for {
		c, err := r.Next()
		if err == io.EOF {
			return r.Head, nil
		}
		if err != nil {
			return nil, err
		}
		r.Head.Cases = append(r.Head.Cases, *c)
	}
}
