package main

import (
	"fmt"
	"strings"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/reference"
)

// target is a harness the command line can run, by name.
type target struct {
	campaign.Target
	summary string // one line: what it is
}

// registry lists every target, in the order `chaoskit targets` prints them. It is the one place
// that knows them: the reference agent and its variants now; external commands, through the
// process adapter, are to be added here (a name such as "exec:PATH" resolved by lookupTarget).
func registry() []target {
	var ts []target
	for _, v := range reference.Variants() {
		summary := "bug: " + v.Bug
		if v.Variant == reference.Correct {
			summary = "the reference agent, correct: " + strings.TrimPrefix(v.Bug, "none: ")
		}
		ts = append(ts, target{summary: summary, Target: campaign.Target{
			Name: referenceName(v.Variant),
			New:  func() harness.Target { return reference.New(v.Variant, reference.Onboarding()) },
		}})
	}
	return ts
}

// referenceName is the target name of a variant of the reference agent.
func referenceName(v reference.Variant) string {
	if v == reference.Correct {
		return "reference"
	}
	return "reference/" + string(v)
}

// lookupTarget returns the target named name, or a usage error naming it.
func lookupTarget(name string) (campaign.Target, error) {
	var names []string
	for _, t := range registry() {
		if t.Name == name {
			return t.Target, nil
		}
		names = append(names, t.Name)
	}
	return campaign.Target{}, usagef("unknown target %q (known: %s)", name, strings.Join(names, ", "))
}

func runTargets(c *cli, args []string) error {
	if err := c.noArguments("targets", args); err != nil {
		return err
	}
	width := 0
	for _, t := range registry() {
		width = max(width, len(t.Name))
	}
	for _, t := range registry() {
		fmt.Fprintf(c.stdout, "%-*s  %s\n", width, t.Name, t.summary)
	}
	return nil
}
