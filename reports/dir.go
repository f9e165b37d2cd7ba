package reports

import (
	"io"
	"path/filepath"
	"slices"

	"github.com/spf13/afero"
)

// dirFile is a file of a report directory, by the format it holds. write writes it from the
// report and, for the renderings, a view of it (nil for report.json, which needs none).
type dirFile struct {
	format, name string
	write        func(r *Report, v *view, w io.Writer) error
	view         bool
}

// dirFiles are the files of a report directory, the contract first.
var dirFiles = []dirFile{
	{"json", "report.json", func(r *Report, _ *view, w io.Writer) error { return r.WriteJSON(w) }, false},
	{"md", "summary.md", (*Report).markdown, true},
	{"junit", "junit.xml", (*Report).junit, true},
	{"html", "report.html", (*Report).html, true},
}

// viewShown is how many problem cases per target a view for every rendering keeps: the most
// any of them shows (each keeps the first ones, which a smaller view would keep too).
const viewShown = max(markdownCasesPerTarget, htmlCasesPerTarget)

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
	var v *view // read once, the first time a rendering needs it, for all of them
	for _, f := range dirFiles {
		if formats != nil && !slices.Contains(formats, f.format) {
			continue
		}
		path := filepath.Join(dir, f.name)
		if f.view && v == nil {
			var err error
			if v, err = r.view(viewShown); err != nil {
				if first == nil {
					first = err
				}
				continue
			}
		}
		err := WriteAtomicFunc(fsys, path, func(w io.Writer) error { return f.write(r, v, w) })
		if err == nil {
			written = append(written, path)
		} else if first == nil {
			first = err
		}
	}
	return written, first
}
