package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
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
	opts, err := parseTolerances(*tolerance)
	if err != nil {
		return err
	}
	rep, err := loadReport(pos[0])
	if err != nil {
		return err
	}
	var g gate
	if g, err = parseGate(*expr, campaignOptions(rep)); err != nil {
		return usageError{err.Error()}
	}
	var failed []string
	if *baseline != "" {
		old, err := loadReport(*baseline)
		if err != nil {
			return err
		}
		regressions := reports.Compare(old, rep, opts)
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
		if err := g.verdict(rep, c.stdout); err != nil {
			failed = append(failed, err.Error())
		}
	}
	if len(failed) > 0 {
		return exitError{exitFail, strings.Join(failed, "; ")}
	}
	return nil
}

// parseTolerances parses the value of --tolerance: comma-separated NAME=AMOUNT, where NAME is
// one of reports.RegressionMetrics, a property, or * for every other, and AMOUNT is an absolute
// amount (2, 0.5) or a percentage of the baseline's value (10%).
func parseTolerances(list string) (reports.CompareOptions, error) {
	var opts reports.CompareOptions
	if strings.TrimSpace(list) == "" {
		return opts, nil
	}
	opts.Tolerances = map[string]reports.Tolerance{}
	for _, item := range strings.Split(list, ",") {
		name, amount, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			return opts, usagef("--tolerance %q: %q is not NAME=AMOUNT", list, item)
		}
		if name != "*" && !slices.Contains(reports.RegressionMetrics(), name) && !slices.Contains(properties, name) {
			return opts, usagef("--tolerance %q: unknown metric %q (known: %s; a property: %s; or * for the rest)", list, name,
				strings.Join(reports.RegressionMetrics(), ", "), strings.Join(properties, ", "))
		}
		pct, rel := strings.CutSuffix(amount, "%")
		x, err := strconv.ParseFloat(pct, 64)
		if err != nil || !(x >= 0 && x <= 1e12) { // NaN fails too
			return opts, usagef("--tolerance %q: %s's amount %q is not a number of 0 or more, or a percentage such as 10%%", list, name, amount)
		}
		t := reports.Tolerance{Abs: x}
		if rel {
			t = reports.Tolerance{Rel: x / 100}
		}
		if name == "*" {
			opts.Default = t
		} else {
			opts.Tolerances[name] = t
		}
	}
	return opts, nil
}

// loadReport loads a report from a report.json, or from a report directory.
func loadReport(path string) (*reports.Report, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, "report.json")
	}
	return reports.Load(path)
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
