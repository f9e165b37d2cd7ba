package main

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/reference"
	"github.com/chaoskit/chaoskit/reports"
)

// runDemo runs the reference agent and each variant whose bug the fault kinds can expose under
// every one of them (by default every kind there is), writes the report directory in every
// format, and prints whether the agent passed and each variant was caught by a property that
// catches its bug.
func runDemo(c *cli, args []string) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	out := fs.String("out", "chaoskit-report", "directory to write the report to")
	seed := fs.Uint64("seed", 1, "the campaign's seed")
	faultList := fs.String("faults", "all", "the fault kinds, or families, with commas; variants whose bug none of them exposes are left out")
	noShare := addShareFlag(fs)
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if err := noPositional("demo", pos); err != nil {
		return err
	}
	kinds, err := faults.ParseKinds(*faultList)
	if err != nil {
		return usagef("--faults: %v", err)
	}
	// One campaign of single faults; and, for the variants whose bug takes a fault during a
	// recovery (VariantInfo.Depth), one of a kill followed by a power cut in the recovery, beside
	// the reference, in a report directory of its own.
	single := &campaign.Campaign{Options: campaign.Options{Faults: kinds, Mode: campaign.Exhaustive}}
	deep := &campaign.Campaign{Options: campaign.Options{Faults: []faults.Kind{faults.Kill, faults.Power}, Mode: campaign.Exhaustive, Depth: 2}}
	canDeep := slices.Contains(kinds, faults.Kill) && slices.Contains(kinds, faults.Power)
	var leftOut []string
	for _, v := range reference.Variants() {
		t, _ := lookupTarget(referenceName(v.Variant))
		exposed := slices.ContainsFunc(v.Exposes, func(k faults.Kind) bool { return slices.Contains(kinds, k) })
		switch {
		case v.Variant == reference.Correct:
			single.Targets = append(single.Targets, t)
			if canDeep {
				deep.Targets = append(deep.Targets, t)
			}
		case v.Depth >= 2 && canDeep:
			deep.Targets = append(deep.Targets, t)
		case v.Depth < 2 && exposed:
			single.Targets = append(single.Targets, t)
		default:
			leftOut = append(leftOut, string(v.Variant))
		}
	}
	ok := true
	for _, run := range []struct {
		camp  *campaign.Campaign
		dir   string
		title string
	}{
		{single, *out, ""},
		{deep, filepath.Join(*out, "depth-2"), "\na kill, then a power cut during the recovery (chaoskit run --depth 2 --faults kill,power):\n"},
	} {
		if len(run.camp.Targets) <= 1 && run.camp == deep {
			continue
		}
		run.camp.Options.Seed, run.camp.Options.NoShare = *seed, *noShare
		passed, err := c.demoCampaign(run.camp, run.dir, run.title)
		if err != nil {
			return err
		}
		ok = ok && passed
	}
	if !ok {
		return exitError{exitFail, "the reference agent failed a case or a variant went uncaught"}
	}
	tried := len(single.Targets) + len(deep.Targets) - 1
	if canDeep {
		tried-- // the reference ran in both
	}
	if len(leftOut) > 0 {
		fmt.Fprintf(c.stdout, "the reference agent passed every case and the %d variants tried were caught; %d were left out, which no fault kind of %s exposes: %s\n",
			tried, len(leftOut), *faultList, strings.Join(leftOut, ", "))
		return exitError{exitUnknown, fmt.Sprintf("%d of %d variants were not tried (demo --faults all tries them all)", len(leftOut), len(reference.Variants())-1)}
	}
	fmt.Fprintln(c.stdout, "the reference agent passed every case and every variant was caught")
	return nil
}

// demoCampaign runs one of the demo's campaigns into dir, writes its report directory in every
// format and prints its table under title, and reports whether the reference passed every case
// and each variant broke a property that catches its bug.
func (c *cli) demoCampaign(camp *campaign.Campaign, dir, title string) (bool, error) {
	rep, err := c.runCampaign(camp, dir, nil)
	if rep == nil {
		return false, err
	}
	infos := map[string]reference.VariantInfo{}
	for _, v := range reference.Variants() {
		infos[referenceName(v.Variant)] = v
	}
	for _, t := range camp.Targets { // the variants carry their bug on purpose: the pages say so
		if infos[t.Name].Variant != reference.Correct {
			rep.Options.ExpectFail = append(rep.Options.ExpectFail, t.Name)
		}
	}
	formats, _ := parseFormats(allFormats)
	ok := true
	if err := c.publish(rep, dir, formats, func(w io.Writer, rep *reports.Report) error {
		fmt.Fprint(w, title)
		printTable(w, rep, "agent", func(t *reports.TargetSummary) string {
			v, caught := demoVerdict(t, infos[t.Target])
			ok = ok && caught
			return v
		})
		return nil
	}); err != nil {
		return false, err
	}
	return ok, nil
}

// demoVerdict says whether the target of summary t, the reference agent or the variant info
// describes, did as it should: the agent passes every case, a variant breaks a property that
// catches its bug.
func demoVerdict(t *reports.TargetSummary, info reference.VariantInfo) (string, bool) {
	if info.Variant == reference.Correct {
		if t.Failed+t.Unknown > 0 {
			return fmt.Sprintf("FAILED %d cases", t.Failed+t.Unknown), false
		}
		return "passes every case", true
	}
	var by []string
	for _, p := range info.CaughtBy {
		if n := t.Violations[p]; n > 0 {
			by = append(by, fmt.Sprintf("%s ×%d", p, n))
		}
	}
	if len(by) == 0 {
		return "NOT CAUGHT", false
	}
	return "caught: " + strings.Join(by, ", "), true
}
