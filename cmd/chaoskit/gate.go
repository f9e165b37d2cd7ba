package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/chaoskit/chaoskit/reports"
)

func runGate(c *cli, args []string) error {
	fs := flag.NewFlagSet("gate", flag.ContinueOnError)
	baseline := fs.String("baseline", "", "the report to compare with (a report.json or its directory)")
	tolerance := fs.String("tolerance", "", "how much worse than the baseline each metric may get, e.g. 'work_lost_beats_mean=0.5,failed=10%'")
	expr := fs.String("gate", "", "comparisons the report's summary must satisfy, as run's --gate")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) != 1:
		return usagef("gate takes one report (a report.json or its directory), got %d arguments", len(pos))
	case *tolerance != "" && *baseline == "":
		return usagef("--tolerance applies to a comparison with --baseline, which is missing")
	case *baseline == "" && *expr == "":
		return usagef("gate needs --baseline OLD.json, --gate EXPR, or both")
	}
	opts, err := reports.ParseTolerances(*tolerance)
	if err != nil {
		return usagef("--tolerance: %v", err)
	}
	rep, err := loadSummary(pos[0])
	if err != nil {
		return err
	}
	g, err := parseGate(*expr, campaignOptions(rep))
	if err != nil {
		return err
	}
	var failed []string
	if *baseline != "" {
		old, err := loadSummary(*baseline)
		if err != nil {
			return err
		}
		if d := old.OtherCampaign(rep); d != "" {
			return usagef("--baseline %s is a report of another campaign (%s): their figures do not compare", *baseline, d)
		}
		before, err := summarized(old)
		if err != nil {
			return err
		}
		now, err := summarized(rep)
		if err != nil {
			return err
		}
		regressions := reports.Compare(before, now, opts)
		for _, r := range regressions {
			fmt.Fprintf(c.stdout, "regression: %s\n", r)
		}
		if len(regressions) > 0 {
			failed = append(failed, fmt.Sprintf("%d regressions against %s", len(regressions), *baseline))
		} else {
			fmt.Fprintf(c.stdout, "no regression against %s\n", *baseline)
		}
	}
	if g != nil {
		if err := gateVerdict(g, rep, c.stdout); errors.As(err, new(usageError)) {
			return err
		} else if err != nil {
			failed = append(failed, err.Error())
		}
	}
	if len(failed) > 0 {
		return exitError{exitFail, strings.Join(failed, "; ")}
	}
	return nil
}

// loadReport loads a report from a report.json, or from a report directory, with every case.
func loadReport(path string) (*reports.Report, error) {
	return reports.Load(reportFile(path))
}

// reportFile returns the report.json of a report directory, or path itself if it is not one.
func reportFile(path string) string {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return filepath.Join(path, "report.json")
	}
	return path
}

// loadSummary loads a report from a report.json, or from a report directory, without its cases:
// its summary, options, seed and provenance, all that a gate needs. Its cases are read from the
// file, one at a time, only if something asks for them (see reports.LoadStream).
func loadSummary(path string) (*reports.Report, error) {
	return reports.LoadStream(reportFile(path))
}

// summarized returns rep if it has a summary, else a copy of it summarised from its cases, read
// one at a time, for reports.Compare to compare: a report of chaoskit's always has one.
func summarized(rep *reports.Report) (*reports.Report, error) {
	if len(rep.Summary.Targets) > 0 {
		return rep, nil
	}
	s := *rep
	if err := s.Summarize(nil); err != nil {
		return nil, err
	}
	return &s, nil
}

// campaignOptions returns the options of the campaign rep is of, with its targets taken from its
// summary if its options do not list them.
func campaignOptions(rep *reports.Report) reports.Options {
	o := rep.Options
	if len(o.Targets) == 0 {
		for _, t := range rep.Summary.Targets {
			o.Targets = append(o.Targets, t.Target)
		}
	}
	return o
}

// parseGate parses the value of --gate for a campaign of the given options; a malformed gate is
// a usage error.
func parseGate(text string, opts reports.Options) (reports.Gate, error) {
	g, err := reports.ParseGate(text, opts)
	if err != nil {
		return nil, usagef("--%v", err)
	}
	return g, nil
}

// gateVerdict prints the outcome of gate g over rep to w, one line per failed comparison, and
// returns the exit error it calls for: nil if it held.
func gateVerdict(g reports.Gate, rep *reports.Report, w io.Writer) error {
	checked, failures := g.Check(rep)
	if checked == 0 {
		why := "no target or fault kind of the report matches its selectors"
		if len(rep.Summary.Targets) == 0 {
			why = "the report has no cases"
		}
		return usagef("the gate %s compared nothing: %s", g, why)
	}
	for _, f := range failures {
		fmt.Fprintf(w, "gate failed: %s\n", f)
	}
	if len(failures) > 0 {
		return exitError{exitFail, fmt.Sprintf("the gate failed %d of %s", len(failures), reports.Count(checked, "comparison"))}
	}
	fmt.Fprintf(w, "gate held: %s\n", reports.Count(checked, "comparison"))
	return nil
}
