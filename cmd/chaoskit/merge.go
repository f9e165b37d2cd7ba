package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/reports"
)

func runMerge(c *cli, args []string) error {
	fs := flag.NewFlagSet("merge", flag.ContinueOnError)
	out := fs.String("out", "", "the directory to write the merged report to")
	outs := addOutputFlags(fs)
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	switch {
	case *out == "":
		return usagef("merge needs --out DIR")
	case len(pos) == 0:
		return usagef("merge needs the report directories of the shards (or their report.json files)")
	}
	var shards []*reports.Report
	for _, p := range pos {
		// The cases stay in the file, read as the merge needs them, unless the merged report is
		// to replace that file.
		load := loadSummary
		if sameDir(filepath.Dir(reportFile(p)), *out) {
			load = loadReport
		}
		r, err := load(p)
		if err != nil {
			return err
		}
		if len(shards) > 0 && shards[0].OtherCampaign(r) == "" {
			if d := shards[0].OtherCode(r); d != "" {
				return usagef("merge: shard %s (%s) ran other code than shard %s (%s): %s: merge the shards of one commit",
					r.Options.Shard, p, shards[0].Options.Shard, pos[0], d)
			}
		}
		shards = append(shards, r)
	}
	rep, err := reports.Merge(shards...)
	if err != nil {
		return fmt.Errorf("merging %d reports: %w", len(pos), err)
	}
	formats, g, err := outs.check(campaignOptions(rep))
	if err != nil {
		return err
	}
	if err := c.fs.MkdirAll(*out, 0o755); err != nil {
		return fmt.Errorf("creating the report directory: %w", err)
	}
	// The merged directory holds a whole journal too, as an unsharded run's does.
	if _, err := campaign.WriteJournalFrom(c.fs, campaign.JournalPath(*out), campaign.Header{Seed: rep.Seed, Options: rep.Options}, rep.Each); err != nil {
		return err
	}
	if err := c.publish(rep, *out, formats, printSummary); err != nil {
		return err
	}
	return judge(rep, g, c.stdout)
}

// sameDir reports whether the directories a and b both exist and are the same.
func sameDir(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}
