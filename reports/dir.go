package reports

import (
	"io"
	"path/filepath"
	"slices"

	"github.com/spf13/afero"
)

// dirFile is a file of a report directory, by the format it holds.
type dirFile struct {
	format, name string
	write        func(r *Report, w io.Writer) error
}

// dirFiles are the files of a report directory, the contract first.
var dirFiles = []dirFile{
	{"json", "report.json", (*Report).WriteJSON},
	{"md", "summary.md", (*Report).Markdown},
	{"junit", "junit.xml", (*Report).JUnit},
	{"html", "report.html", (*Report).HTML},
}

// Formats lists the formats a report directory can hold, in the order WriteDir writes them:
// json (report.json), md (summary.md), junit (junit.xml) and html (report.html).
func Formats() []string {
	out := make([]string, len(dirFiles))
	for i, f := range dirFiles {
		out[i] = f.format
	}
	return out
}

// FileName returns the name of the file of a report directory that holds format (one of
// Formats), or "".
func FileName(format string) string {
	for _, f := range dirFiles {
		if f.format == format {
			return f.name
		}
	}
	return ""
}

// WriteDir writes r into the report directory dir on fsys, one file per format of formats (all
// of Formats when formats is nil; names not in Formats are ignored), each through WriteAtomic.
// It returns the paths written. It writes every file it can and returns the first error.
func WriteDir(fsys afero.Fs, dir string, r *Report, formats []string) ([]string, error) {
	var written []string
	var first error
	for _, f := range dirFiles {
		if formats != nil && !slices.Contains(formats, f.format) {
			continue
		}
		path := filepath.Join(dir, f.name)
		err := WriteAtomicFunc(fsys, path, func(w io.Writer) error { return f.write(r, w) })
		if err == nil {
			written = append(written, path)
		} else if first == nil {
			first = err
		}
	}
	return written, first
}
