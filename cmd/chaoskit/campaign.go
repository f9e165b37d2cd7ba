package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/chaoskit/chaoskit/sim"
)

// campaignParams are the parameters of a campaign, by the flags of `run` that set them, in the
// order its error messages name them; "exec" stands for --exec and its options.
var campaignParams = []string{"target", "exec", "faults", "mode", "cases", "depth", "seed", "shard", "restart", "restart-backoff", "max-beats", "max-virtual-time", "fs-model"}

// campaignOf checks a campaign's parameters, as a report, a journal's header or the flags of
// `run` record them (campaign.ParseIdentity), resolves its targets, and returns the campaign, or
// a usage error naming the first parameter that is wrong. o.Targets lists the targets in order:
// built-in ones, and the commands' names.
func campaignOf(seed uint64, o reports.Options) (*campaign.Campaign, error) {
	if len(o.Targets) == 0 {
		return nil, usagef("run needs --target NAME (chaoskit targets lists them) or --exec COMMAND")
	}
	id, err := campaign.ParseIdentity(o)
	if err != nil {
		return nil, usagef("--%v", err)
	}
	c := &campaign.Campaign{}
	for _, name := range id.Targets {
		if slices.ContainsFunc(c.Targets, func(u campaign.Target) bool { return u.Name == name }) {
			if slices.ContainsFunc(id.Commands, func(cmd reports.Command) bool { return cmd.Name == name }) {
				return nil, usagef("two targets named %q: give each --exec its own --name", name)
			}
			continue
		}
		t, err := resolveTarget(name, id.Commands)
		if err != nil {
			return nil, err
		}
		c.Targets = append(c.Targets, t)
	}
	c.Options.Seed = seed
	id.Apply(&c.Options)
	for i := range c.Targets {
		c.Targets[i] = withReplayFlags(c.Targets[i], id.ReplayFlags())
	}
	return c, nil
}

// withReplayFlags returns t with a replay command that ends with flags (Identity.ReplayFlags), so
// that a case replays as its campaign ran it.
func withReplayFlags(t campaign.Target, flags string) campaign.Target {
	if flags == "" {
		return t
	}
	repro, name := t.Repro, t.Name
	if repro == nil {
		repro = func(seed uint64, s faults.Schedule) string { return campaign.ReplayCommand(name, seed, s) }
	}
	t.Repro = func(seed uint64, s faults.Schedule) string { return repro(seed, s) + flags }
	return t
}

// resolveTarget returns the target named name: one of commands, or a built-in target.
func resolveTarget(name string, commands []reports.Command) (campaign.Target, error) {
	for _, cmd := range commands {
		if cmd.Name == name {
			return execTarget(cmd)
		}
	}
	return lookupTarget(name)
}

// param returns the value of one of campaignParams of c, as its flag would spell it.
func param(c *campaign.Campaign, name string) string {
	o := c.Identity().Options()
	switch name {
	case "target":
		return strings.Join(o.Targets, ",")
	case "exec":
		b, _ := json.Marshal(o.Commands)
		return string(b)
	case "faults":
		return strings.Join(o.Faults, ",")
	case "mode":
		return o.Mode
	case "cases":
		return strconv.Itoa(o.Cases)
	case "depth":
		return strconv.Itoa(max(1, o.Depth))
	case "seed":
		return strconv.FormatUint(c.Options.Seed, 10)
	case "shard":
		return o.Shard
	case "restart":
		return campaign.RestartText(c.Options.RestartFailed)
	case "restart-backoff":
		return o.RestartBackoff
	case "max-beats":
		return strconv.Itoa(cmp.Or(o.MaxBeats, sim.DefaultMaxBeats))
	case "max-virtual-time":
		return cmp.Or(o.MaxVirtualTime, sim.DefaultMaxVirtualTime.String())
	case "fs-model":
		return c.Options.FSModel.String()
	}
	panic("param: no parameter " + name)
}

// targetError classifies an error from recording a target's golden run: a target that is not
// deterministic cannot be decided (exit 3); any other failure is an input error, and one that
// reached a bound of the golden run names the flag that raises it.
func targetError(err error) error {
	var bound *sim.BoundError
	switch {
	case errors.Is(err, sim.ErrNondeterministic), errors.Is(err, harness.ErrUndecided):
		return exitError{exitUnknown, err.Error()}
	case errors.As(err, &bound):
		flag, limit, got := "--max-beats", fmt.Sprint(bound.MaxBeats, " beats"), "it had reached "+bound.Virtual.String()+" of virtual time"
		which := flag
		if bound.TargetDefault {
			which = "the default --max-beats for a command, whose every beat is a round trip"
		}
		if bound.Bound == "MaxVirtualTime" {
			flag, limit, got = "--max-virtual-time", bound.MaxVirtualTime.String()+" of virtual time", fmt.Sprint("it had made ", bound.Beats, " beats")
			which = flag
		}
		return usagef("%s: the golden run did not finish within %s (%s; %s): a harness that never ends, or one that needs a higher %s", bound.Target, limit, which, got, flag)
	}
	return err
}
