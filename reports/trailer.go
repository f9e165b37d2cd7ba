package reports

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"regexp"
	"strconv"
)

// This file holds what makes a report verifiable: the trailer that ends report.json, the last
// field of its object, holding the number of its cases and the SHA-256 of every byte before it.
// A report cut short has no trailer at its end; a report with a byte changed has a checksum
// that does not match. Either is refused before anything in it is judged.

// ErrDamaged is wrapped by the error of reading a report that is not whole as chaoskit wrote it:
// cut short (it does not end with its trailer) or altered (its checksum or its count of cases
// does not match its trailer).
var ErrDamaged = errors.New("truncated or altered")

// Trailer is the last field of a report file, "trailer": what a reader checks the file against.
type Trailer struct {
	// Cases is how many cases the report holds.
	Cases int `json:"cases"`
	// SHA256 is the SHA-256, in lower-case hex, of every byte of the file before the line
	// that holds the trailer, that line's indent included.
	SHA256 string `json:"sha256"`
}

// trailerKey starts the line of the trailer: the last field of the top-level object, whose
// fields alone sit at an indent of two spaces.
const trailerKey = `  "trailer": `

// trailerLine matches the end of a report file from the start of its trailer's line: the
// trailer, as writeTrailer writes it, and the end of the report's object.
var trailerLine = regexp.MustCompile(`^  "trailer": \{"cases": (0|[1-9][0-9]{0,17}), "sha256": "([0-9a-f]{64})"\}\n\}\n$`)

// trailerRoom is more than the length of the end of a report that trailerLine matches.
const trailerRoom = 256

// writeTrailer writes the line of the trailer of a report of n cases whose bytes before it
// have the digest sum, and the end of the report's object.
func writeTrailer(w io.Writer, n int, sum []byte) error {
	_, err := fmt.Fprintf(w, "%s{\"cases\": %d, \"sha256\": %q}\n}\n", trailerKey, n, hex.EncodeToString(sum))
	return err
}

// splitTrailer finds the trailer at the end of end, the last bytes of a report file, and returns
// where its line starts in end and what it holds.
func splitTrailer(end []byte) (int, Trailer, error) {
	at := bytes.LastIndex(end, []byte("\n"+trailerKey))
	if at < 0 {
		return 0, Trailer{}, damaged("it does not end with the trailer chaoskit writes after the cases (is it cut short?)")
	}
	at++
	m := trailerLine.FindSubmatch(end[at:])
	if m == nil {
		return 0, Trailer{}, damaged("its trailer is not the last thing in it, or is malformed")
	}
	n, err := strconv.Atoi(string(m[1]))
	if err != nil {
		return 0, Trailer{}, damaged("its trailer's count of cases is out of range")
	}
	return at, Trailer{Cases: n, SHA256: string(m[2])}, nil
}

// check returns an error unless sum, the digest of the bytes before the trailer, is the one
// the trailer holds.
func (t Trailer) check(sum []byte) error {
	if got := hex.EncodeToString(sum); got != t.SHA256 {
		return damaged(fmt.Sprintf("the SHA-256 of its content is %s…, its trailer says %s…", got[:12], t.SHA256[:12]))
	}
	return nil
}

func damaged(why string) error { return fmt.Errorf("%w: %s", ErrDamaged, why) }

// Verify checks that the report file at path is whole and unaltered: that it ends with its
// trailer and that the SHA-256 of every byte before the trailer is the one the trailer holds. It
// reads the file once and parses none of it but the trailer, so it is quick whatever the
// number of cases (a report of 600 MB takes about as long as sha256sum). It returns the trailer,
// or an error naming the file that wraps ErrDamaged when the file is cut short or altered.
// OpenReport, Load, LoadHead and LoadStream verify a report with it before reading any of it.
func Verify(path string) (Trailer, error) {
	f, err := os.Open(path)
	if err != nil {
		return Trailer{}, fmt.Errorf("verifying report: %w", err)
	}
	defer f.Close()
	t, err := verifyFile(f)
	if err != nil {
		return Trailer{}, fmt.Errorf("report %s: %w", path, err)
	}
	return t, nil
}

// verifyFile is Verify of an open file, read with ReadAt: its offset does not move.
func verifyFile(f *os.File) (Trailer, error) {
	fi, err := f.Stat()
	if err != nil {
		return Trailer{}, err
	}
	start := max(0, fi.Size()-trailerRoom)
	end := make([]byte, fi.Size()-start)
	if _, err := f.ReadAt(end, start); err != nil {
		return Trailer{}, err
	}
	at, t, err := splitTrailer(end)
	if err != nil {
		return Trailer{}, err
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, start+int64(at))); err != nil {
		return Trailer{}, err
	}
	return t, t.check(h.Sum(nil))
}

// hashingReader passes on what it reads, hashing all of it but the last trailerRoom bytes read
// so far: once the read reaches the end of a report, those hold its trailer, and the hash the
// bytes before them.
type hashingReader struct {
	r    io.Reader
	h    hash.Hash
	last []byte // the last bytes read, not hashed yet
}

func newHashingReader(r io.Reader) *hashingReader {
	return &hashingReader{r: r, h: sha256.New(), last: make([]byte, 0, 2*trailerRoom)}
}

func (hr *hashingReader) Read(p []byte) (int, error) {
	n, err := hr.r.Read(p)
	b := p[:n]
	if over := len(hr.last) + len(b) - trailerRoom; over > 0 { // hash what falls out of the window
		from := min(over, len(hr.last))
		hr.h.Write(hr.last[:from])
		hr.last = append(hr.last[:0], hr.last[from:]...)
		hr.h.Write(b[:over-from])
		b = b[over-from:]
	}
	hr.last = append(hr.last, b...)
	return n, err
}

// trailer returns the trailer at the end of what was read, having checked the digest of the
// bytes before it. It is for once the reading has reached the end.
func (hr *hashingReader) trailer() (Trailer, error) {
	at, t, err := splitTrailer(hr.last)
	if err != nil {
		return Trailer{}, err
	}
	hr.h.Write(hr.last[:at])
	return t, t.check(hr.h.Sum(nil))
}
