package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"slices"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/reports"
)

// selection holds the flags of run with which a test runner (the pytest plugin, the node:test
// helper) drives a campaign: list its cases, run some of them, and have each as it finishes.
type selection struct {
	list   *bool
	only   multiFlag
	stream *bool
}

func addSelectionFlags(fs *flag.FlagSet) *selection {
	s := &selection{}
	s.list = fs.Bool("list", false, `print the campaign's cases, one JSON object a line ({"target","id","index","schedule"}), and run none`)
	fs.Var(&s.only, "only", "run only the case with this ID, as --list prints it (repeatable); the report holds those cases")
	s.stream = fs.Bool("stream", false, "print each case on stdout as it finishes, one JSON object a line as report.json holds it, instead of the text summary")
	return s
}

// check refuses what cannot go with the selection flags given; set holds the flags given.
func (s *selection) check(set map[string]bool) error {
	if *s.list {
		for _, name := range []string{"out", "format", "gate", "resume", "only", "stream"} {
			if set[name] {
				return usagef("--list runs no case and writes nothing: drop --%s", name)
			}
		}
	}
	if len(s.only) > 0 && set["resume"] {
		return usagef("--resume continues the whole campaign: drop --only")
	}
	return nil
}

// formats returns the formats to write: with --stream, the text summary gives way to the cases
// on stdout, and asking for both is a usage error.
func (s *selection) formats(formats []string, set map[string]bool) ([]string, error) {
	if !*s.stream || !slices.Contains(formats, textFormat) {
		return formats, nil
	}
	if set["format"] {
		return nil, usagef("--stream prints the cases on stdout, where the text summary would go: drop text from --format")
	}
	return slices.DeleteFunc(slices.Clone(formats), func(f string) bool { return f == textFormat }), nil
}

// options returns what the selection asks of the campaign's run: the cases to run, and where
// each goes as it finishes.
func (s *selection) options(c *cli) campaign.RunOptions {
	ro := campaign.RunOptions{Only: s.only}
	if *s.stream {
		ro.OnCase = c.printCase
	}
	return ro
}

// printCase prints a case as --stream does: one line of JSON.
func (c *cli) printCase(rc *reports.Case) {
	b, err := json.Marshal(rc)
	if err != nil { // a case is plain data: it always encodes
		panic(fmt.Sprintf("encoding case %s: %v", rc.ID, err))
	}
	c.stdout.Write(append(b, '\n'))
}

// listCases prints the cases of camp, as --list does.
func (c *cli) listCases(camp *campaign.Campaign) error {
	bar := c.progress()
	camp.Options.OnGolden = bar.golden()
	seq, err := camp.List(c.ctx)
	bar.end()
	if err != nil && !errors.Is(err, campaign.ErrInterrupted) {
		err = targetError(beatsAdvice(err, camp.Targets))
	}
	if err != nil {
		return err
	}
	o := camp.Identity().Options()
	seen := map[string]map[faults.Kind]bool{}
	for l := range seq {
		if seen[l.Target] == nil {
			seen[l.Target] = map[faults.Kind]bool{}
		}
		for _, k := range l.Schedule.Kinds() {
			seen[l.Target][k] = true
		}
		b, err := json.Marshal(l)
		if err != nil {
			panic(fmt.Sprintf("encoding case %s: %v", l.ID, err))
		}
		if _, err := c.stdout.Write(append(b, '\n')); err != nil {
			return fmt.Errorf("--list: %w", err)
		}
	}
	if o.Shard != "" {
		return nil // the other shards may hold what this one lacks
	}
	var targets []string
	for _, t := range camp.Targets {
		targets = append(targets, t.Name)
	}
	// What chaoskit run would exit 3 for: a test runner makes it a failing test of its own.
	for _, gap := range undecided(o, targets, func(t string, k faults.Kind) bool { return seen[t][k] }) {
		fmt.Fprintf(c.stderr, "chaoskit: nothing will be decided for %s\n", gap)
	}
	return nil
}
