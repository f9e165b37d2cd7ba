package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/reports"
)

// textFormat is the format printed to stdout rather than written to a file.
const textFormat = "text"

// allFormats is the default of --format.
var allFormats = strings.Join(append([]string{textFormat}, reports.Formats()...), ",")

// parseFormats parses the value of --format.
func parseFormats(list string) ([]string, error) {
	known := append([]string{textFormat}, reports.Formats()...)
	var out []string
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if !slices.Contains(known, f) {
			return nil, usagef("--format %q: unknown format %q (known: %s)", list, f, strings.Join(known, ", "))
		}
		out = append(out, f)
	}
	return out, nil
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
func (o output) check(opts reports.Options) ([]string, campaign.Gate, error) {
	formats, err := parseFormats(*o.format)
	if err != nil {
		return nil, nil, err
	}
	g, err := parseGate(*o.gate, opts)
	if err != nil {
		return nil, nil, err
	}
	return formats, g, nil
}

// publish writes rep into dir in the given formats and, if text is one of them, prints it with
// summary. It returns the first error in writing a file; the journal, written as the cases
// finished, stays whatever happens.
func (c *cli) publish(rep *reports.Report, dir string, formats []string, summary func(w io.Writer, rep *reports.Report)) error {
	rep.Provenance = campaign.Provenance(c.args)
	written, err := reports.WriteDir(c.fs, dir, rep, formats)
	if slices.Contains(formats, textFormat) {
		summary(c.stdout, rep)
		for _, n := range c.notes {
			fmt.Fprintf(c.stdout, "\nnote: %s", n)
		}
		fmt.Fprintf(c.stdout, "\n%d cases in %.1fs", len(rep.Cases), rep.DurationMs/1000)
		if len(written) > 0 {
			fmt.Fprintf(c.stdout, "; wrote %s", strings.Join(written, ", "))
		}
		fmt.Fprintln(c.stdout)
	}
	if err != nil {
		return fmt.Errorf("writing the report: %w (the cases are in %s)", err, campaign.JournalPath(dir))
	}
	return nil
}

// judge returns the error the exit code follows: the gate's outcome when there is a gate (its
// failures printed to w), else the report's verdict.
func judge(rep *reports.Report, g campaign.Gate, w io.Writer) error {
	if g != nil {
		return gateVerdict(g, rep, w)
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
