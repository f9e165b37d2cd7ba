package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
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
func (o output) check(opts reports.Options) ([]string, reports.Gate, error) {
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
func (c *cli) publish(rep *reports.Report, dir string, formats []string, summary func(w io.Writer, rep *reports.Report) error) error {
	rep.Provenance = provenance(c.args)
	written, err := reports.WriteDir(c.fs, dir, rep, formats)
	if slices.Contains(formats, textFormat) {
		if serr := summary(c.stdout, rep); serr != nil && err == nil {
			err = serr
		}
		for _, n := range c.notes {
			fmt.Fprintf(c.stdout, "\nnote: %s", n)
		}
		total := totals(rep)
		fmt.Fprintf(c.stdout, "\n%d cases in %.1fs", total.Cases, rep.DurationMs/1000)
		if t := c.tally; t.Cases > 0 {
			fmt.Fprintf(c.stdout, " (%s for %s: %s)", reports.Count(t.Runs, "run"), reports.Count(t.Cases, "case"), shareText(t))
		}
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
func judge(rep *reports.Report, g reports.Gate, w io.Writer) error {
	if g != nil {
		return gateVerdict(g, rep, w)
	}
	s := totals(rep)
	switch {
	case s.Failed > 0:
		return exitError{exitFail, fmt.Sprintf("%d of %d cases failed", s.Failed, s.Cases)}
	case s.Unknown > 0:
		return exitError{exitUnknown, fmt.Sprintf("%d of %d cases could not be decided", s.Unknown, s.Cases)}
	}
	if gaps := noCase(rep); len(gaps) > 0 {
		return exitError{exitUnknown, "nothing was decided for " + strings.Join(gaps, "; ")}
	}
	return nil
}

// noCase lists, one entry per target, the fault kinds a campaign asked for of which the target
// has no case, with why: a campaign that checked nothing of a kind did not pass it.
func noCase(rep *reports.Report) []string {
	var targets []string
	without := map[string][]string{}
	for _, t := range rep.Summary.Targets {
		targets = append(targets, t.Target)
		without[t.Target] = t.NoCase
	}
	return undecided(rep.Options, targets, func(t string, k faults.Kind) bool {
		return slices.Contains(rep.Options.Faults, string(k)) && !slices.Contains(without[t], string(k))
	})
}

// undecided lists, one entry per target, what a campaign of options o asks for of which none is
// decided (campaign.Undecided), the target having cases of the kinds has says, with why.
func undecided(o reports.Options, targets []string, has func(target string, k faults.Kind) bool) []string {
	var out []string
	var kinds []faults.Kind
	for _, k := range o.Faults {
		kinds = append(kinds, faults.Kind(k))
	}
	whole := o.Mode == campaign.Exhaustive.String() && o.Cases == 0
	for _, t := range targets {
		has := func(k faults.Kind) bool { return has(t, k) }
		none := campaign.Undecided(kinds, has, whole)
		if len(none) == 0 {
			continue
		}
		why := "no beat of its golden run where they apply"
		if slices.Contains(none, string(faults.Torn)) && whole && !has(faults.Power) {
			why = "no beat of its golden run where they apply; torn is listed only where a tear would leave the disk otherwise than a plain power cut, and the campaign has no power case to stand for it"
		}
		if o.Mode == campaign.Exhaustive.String() && o.Cases > 0 {
			why += ", or --cases " + strconv.Itoa(o.Cases) + " left them out"
		} else if o.Mode == campaign.Random.String() {
			why += ", or none was drawn"
		}
		out = append(out, fmt.Sprintf("%s under %s: it has no case of them (%s)", t, strings.Join(none, ", "), why))
	}
	return out
}

// totals returns the verdicts of rep's cases, counted: from its summary, or from its cases if it
// has none.
func totals(rep *reports.Report) reports.Stats {
	var s reports.Stats
	for _, t := range rep.Summary.Targets {
		s.Cases += t.Cases
		s.Passed += t.Passed
		s.Failed += t.Failed
		s.Unknown += t.Unknown
	}
	if len(rep.Summary.Targets) == 0 {
		rep.Each(func(c *reports.Case) error {
			s.Add(c)
			return nil
		})
	}
	return s
}
