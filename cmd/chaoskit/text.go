package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/reports"
)

// printSummary prints the text form of a campaign's report: a row per target, then the first
// problems of each. It reads the report's cases once.
func printSummary(w io.Writer, rep *reports.Report) error {
	var problems []*reports.Case // the first few of each target, in run order
	shown := map[string]int{}
	why := map[string]map[string]string{} // target -> property not checked -> the first reason
	err := rep.Each(func(c *reports.Case) error {
		for _, n := range c.NotChecked {
			p, _, _ := strings.Cut(n, ":")
			if rest, ok := strings.CutPrefix(n, p+": "); ok && why[c.Target][p] == "" {
				if why[c.Target] == nil {
					why[c.Target] = map[string]string{}
				}
				why[c.Target][p] = rest
			}
		}
		if c.Verdict != oracle.Pass && shown[c.Target] < problemsShown {
			shown[c.Target]++
			problems = append(problems, c)
		}
		return nil
	})
	if err != nil {
		return err
	}
	printTable(w, rep, "target", targetVerdict)
	printNotChecked(w, rep, why)
	printDeploys(w, rep)
	printProblems(w, problems)
	return nil
}

// printNotChecked says, per target, which properties some cases could not check, and why (the
// first reason given, by target and property): a pass does not vouch for them there.
func printNotChecked(w io.Writer, rep *reports.Report, why map[string]map[string]string) {
	for _, t := range rep.Summary.Targets {
		for _, p := range slices.Sorted(maps.Keys(t.NotChecked)) {
			fmt.Fprintf(w, "note: %s: %s not checked in %d of %d cases: %s\n", t.Target, p, t.NotChecked[p], t.Cases, why[t.Target][p])
		}
	}
}

// printDeploys says, per target with cases of a deploy of a next version (upgrade), how many of
// them were stranded, duplicated and replanned (oracle.Stranded ...).
func printDeploys(w io.Writer, rep *reports.Report) {
	for _, t := range rep.Summary.Targets {
		n := 0
		for k, s := range t.ByFault {
			if info, _ := faults.Kind(k).Info(); info.NextVersion {
				n += s.Cases
			}
		}
		if n > 0 {
			fmt.Fprintf(w, "deploys: %s: %d of %s stranded, %d duplicated, %d replanned\n", t.Target, t.Stranded, reports.Count(n, "upgrade case"), t.Duplicated, t.Replanned)
		}
	}
}

// printTable prints a row per target of rep, under the heading what, with verdict(t) in the
// last column. "work lost" is the mean of golden beats done again per case ("unmeasured" for a
// target that makes no progress marks); "model calls" the model calls made again, in all,
// which is what work lost costs in tokens.
func printTable(w io.Writer, rep *reports.Report, what string, verdict func(t *reports.TargetSummary) string) {
	width := 28
	for _, t := range rep.Summary.Targets {
		width = max(width, len(t.Target))
	}
	fmt.Fprintf(w, "%-*s %6s %11s %11s %6s %9s %10s %12s  %s\n", width, what, "cases", "survived", "duplicates", "lost", "mismatch", "work lost", "model calls", "verdict")
	for i := range rep.Summary.Targets {
		t := &rep.Summary.Targets[i]
		lost := fmt.Sprintf("%.2f", t.WorkLostBeatsMean)
		if !t.WorkLostMeasured() {
			lost = "unmeasured" // no progress marks
		}
		fmt.Fprintf(w, "%-*s %6d %11s %11d %6d %9d %10s %12d  %s\n", width, t.Target, t.Cases,
			fmt.Sprintf("%d/%d", t.Passed, t.Cases), t.Duplicates, t.LostEffects, t.StateMismatches, lost, t.ModelCallsRemade, verdict(t))
	}
}

// targetVerdict sums up a target's cases: passed, or the properties violated and the cases
// left undecided; and how many of those that passed did so by stopping loudly on a fault they
// could not recover from (detected), which "survived" counts too.
func targetVerdict(t *reports.TargetSummary) string {
	noCase := ""
	if t.Detected > 0 {
		noCase = fmt.Sprintf("; %d detected (stopped loudly)", t.Detected)
	}
	if len(t.NoCase) > 0 {
		noCase += "; no case of " + strings.Join(t.NoCase, ", ")
	}
	if t.Failed+t.Unknown == 0 {
		return "passed" + noCase
	}
	var parts []string
	for _, p := range slices.Sorted(maps.Keys(t.Violations)) {
		parts = append(parts, fmt.Sprintf("%s ×%d", p, t.Violations[p]))
	}
	if t.Unknown > 0 {
		parts = append(parts, fmt.Sprintf("unknown ×%d", t.Unknown))
	}
	if t.Failed == 0 {
		return "UNDECIDED: " + strings.Join(parts, ", ") + noCase
	}
	return "FAILED: " + strings.Join(parts, ", ") + noCase
}

// problemsShown is how many failing or unknown cases the text summary shows per target.
const problemsShown = 3

// printProblems prints the first few failing or unknown cases of each target, each summed up on
// a line that cuts nothing short (reports.Case.Headline), with the command that replays it: for
// a failure a random campaign shrank, the shrunk schedule and its command, as the report's other
// forms show them (the headline is the case's own, whose beats are its schedule's).
func printProblems(w io.Writer, problems []*reports.Case) {
	for i, c := range problems {
		if i == 0 {
			fmt.Fprintln(w, "\nfirst problems:")
		}
		fmt.Fprintf(w, "  %s %s: %s\n", c.Target, c.Schedule, c.Headline())
		if c.ShrunkRepro != "" {
			fmt.Fprintf(w, "    shrunk to %s: %s\n", c.Shrunk, c.ShrunkRepro)
		} else {
			fmt.Fprintf(w, "    %s\n", c.Repro)
		}
	}
}
