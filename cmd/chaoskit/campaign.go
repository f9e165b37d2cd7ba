package main

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/reports"
)

// maxCases bounds --cases.
const maxCases = 1_000_000

// campaignParams are the parameters of a campaign, by the flags of `run` that set them, in the
// order its error messages name them; "exec" stands for --exec and its options.
var campaignParams = []string{"target", "exec", "faults", "mode", "cases", "depth", "seed", "shard", "restart", "restart-backoff"}

// campaignOf checks a campaign's parameters, as a report, a journal's header or the flags of
// `run` record them, and returns the campaign, or a usage error naming the first parameter that
// is wrong. id.Targets lists the targets in order: built-in ones, and the commands' names.
func campaignOf(seed uint64, id reports.Options) (*campaign.Campaign, error) {
	names, commands, faultList, mode, cases, shard, restart := id.Targets, id.Commands, strings.Join(id.Faults, ","), id.Mode, id.Cases, id.Shard, id.Restart
	c := &campaign.Campaign{}
	if len(names) == 0 {
		return nil, usagef("run needs --target NAME (chaoskit targets lists them) or --exec COMMAND")
	}
	for _, name := range names {
		if slices.ContainsFunc(c.Targets, func(u campaign.Target) bool { return u.Name == name }) {
			if slices.ContainsFunc(commands, func(cmd reports.Command) bool { return cmd.Name == name }) {
				return nil, usagef("two targets named %q: give each --exec its own --name", name)
			}
			continue
		}
		t, err := resolveTarget(name, commands)
		if err != nil {
			return nil, err
		}
		c.Targets = append(c.Targets, t)
	}
	o := &c.Options
	o.Seed, o.Cases = seed, cases
	var err error
	if o.Faults, err = faults.ParseKinds(faultList); err != nil {
		return nil, usagef("--faults: %v", err)
	}
	if o.Mode, err = campaign.ParseMode(mode); err != nil {
		return nil, usagef("--mode: %v", err)
	}
	if cases < 0 {
		return nil, usagef("--cases %d: want a count of 0 or more", cases)
	}
	switch {
	case id.Depth < 0 || id.Depth > 2:
		return nil, usagef("--depth %d: want 1 (one fault a case) or 2 (also a kill, then a power cut during the recovery)", id.Depth)
	case id.Depth == 2 && o.Mode != campaign.Exhaustive:
		return nil, usagef("--depth 2 is for --mode exhaustive: random schedules hold several faults already")
	case id.Depth == 2 && !(slices.Contains(o.Faults, faults.Kill) && slices.Contains(o.Faults, faults.Power)):
		return nil, usagef("--depth 2 lists a kill, then a power cut during the recovery: --faults must hold kill and power")
	}
	o.Depth = id.Depth
	if cases > maxCases {
		return nil, usagef("--cases %d: at most %d per target (a campaign lists its schedules in memory); shard a larger campaign with --shard", cases, maxCases)
	}
	if o.Shard, err = reports.ParseShard(shard); err != nil {
		return nil, usagef("--shard: %v", err)
	}
	if o.RestartFailed, err = campaign.ParseRestart(restart); err != nil {
		return nil, usagef("--restart: %v", err)
	}
	if id.RestartBackoff != "" {
		if o.RestartBackoff, err = harness.ParseBackoff(id.RestartBackoff); err != nil {
			return nil, usagef("--restart-backoff: %v", err)
		}
	}
	return c, nil
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
	o := c.Identity()
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
	}
	panic("param: no parameter " + name)
}

// targetError classifies an error from recording a target's golden run: a target that is not
// deterministic cannot be decided (exit 3); any other failure is an input error.
func targetError(err error) error {
	if errors.Is(err, harness.ErrNondeterministic) {
		return exitError{exitUnknown, err.Error()}
	}
	return err
}
