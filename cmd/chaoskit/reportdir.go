package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/chaoskit/chaoskit/reports"
	"github.com/spf13/afero"
)

// reportFile is a file of a report directory, written when its format is asked for.
type reportFile struct {
	format, name string
	write        func(r *reports.Report, w io.Writer) error
}

// reportFiles are the files of a report directory besides the journal, the contract first.
var reportFiles = []reportFile{
	{"json", "report.json", writeJSON},
	{"md", "summary.md", (*reports.Report).Markdown},
	{"junit", "junit.xml", (*reports.Report).JUnit},
	{"html", "report.html", (*reports.Report).HTML},
}

func writeJSON(r *reports.Report, w io.Writer) error {
	b, err := r.Marshal()
	if err == nil {
		_, err = w.Write(b)
	}
	return err
}

// textFormat is the format printed to stdout rather than written to a file.
const textFormat = "text"

// allFormats is the default of --format.
const allFormats = "text,json,md,junit,html"

// parseFormats parses the value of --format.
func parseFormats(list string) (map[string]bool, error) {
	known := []string{textFormat}
	for _, f := range reportFiles {
		known = append(known, f.format)
	}
	out := map[string]bool{}
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if !slices.Contains(known, f) {
			return nil, usagef("--format %q: unknown format %q (known: %s)", list, f, strings.Join(known, ", "))
		}
		out[f] = true
	}
	return out, nil
}

// writeReportDir writes the files of dir that formats asks for, each through a temporary file and
// a rename, and returns their paths. It writes every file it can and returns the first error.
func writeReportDir(fsys afero.Fs, dir string, rep *reports.Report, formats map[string]bool) ([]string, error) {
	var written []string
	var first error
	for _, f := range reportFiles {
		if !formats[f.format] {
			continue
		}
		path := filepath.Join(dir, f.name)
		var buf bytes.Buffer
		err := f.write(rep, &buf)
		if err != nil {
			err = fmt.Errorf("rendering %s: %w", path, err)
		} else {
			err = reports.WriteAtomic(aferoFS{fsys}, path, buf.Bytes())
		}
		if err == nil {
			written = append(written, path)
		} else if first == nil {
			first = err
		}
	}
	return written, first
}

// output is what a command that produces a report does with it: the formats to write and the
// gate to hold it to, as the flags --format and --gate give them.
type output struct {
	format, gate *string
}

func addOutputFlags(fs *flag.FlagSet) output {
	return output{
		format: fs.String("format", allFormats, "what to produce, of "+allFormats),
		gate:   fs.String("gate", "", "comparisons the summary must satisfy, e.g. 'duplicates==0,work_lost_beats_mean<=1'"),
	}
}

// check parses the flags against the campaign that the report is of, before it runs.
func (o output) check(opts reports.Options) (map[string]bool, gate, error) {
	formats, err := parseFormats(*o.format)
	if err != nil {
		return nil, nil, err
	}
	g, err := parseGate(*o.gate, opts)
	if err != nil {
		return nil, nil, usageError{err.Error()}
	}
	return formats, g, nil
}

// publish writes rep into dir in the given formats and, if text is one of them, prints it with
// summary. It returns the first error in writing a file; the journal, written as the cases
// finished, stays whatever happens.
func (c *cli) publish(rep *reports.Report, dir string, formats map[string]bool, summary func(w io.Writer, rep *reports.Report)) error {
	written, err := writeReportDir(c.fs, dir, rep, formats)
	if formats[textFormat] {
		summary(c.stdout, rep)
		fmt.Fprintf(c.stdout, "\n%d cases in %.1fs", len(rep.Cases), rep.DurationMs/1000)
		if len(written) > 0 {
			fmt.Fprintf(c.stdout, "; wrote %s", strings.Join(written, ", "))
		}
		fmt.Fprintln(c.stdout)
	}
	if err != nil {
		return fmt.Errorf("writing the report: %w (the cases are in %s)", err, journalPath(dir))
	}
	return nil
}

// judge returns the error the exit code follows: the gate's outcome when there is a gate (its
// failures printed to w), else the report's verdict.
func judge(rep *reports.Report, g gate, w io.Writer) error {
	if g != nil {
		return g.verdict(rep, w)
	}
	var s reports.Stats
	for i := range rep.Cases {
		s.Add(&rep.Cases[i])
	}
	switch {
	case s.Failed > 0:
		return exitError{exitFail, fmt.Sprintf("%d of %d cases failed", s.Failed, s.Cases)}
	case s.Unknown > 0:
		return exitError{exitUnknown, fmt.Sprintf("%d of %d cases could not be decided", s.Unknown, s.Cases)}
	}
	return nil
}
