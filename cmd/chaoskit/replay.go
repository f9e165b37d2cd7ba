package main

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/chaoskit/chaoskit/sim"
)

func runReplay(c *cli, args []string) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	caseID := fs.String("case", "", "the ID of a case of the report given as argument")
	name := fs.String("target", "", "the target (chaoskit targets lists them)")
	seed := fs.Uint64("seed", 1, "the campaign's seed")
	schedule := fs.String("schedule", "", "the schedule, e.g. 'power@17' or 'kill@4,kill@9'")
	fsModel := fs.String("fs-model", "posix", "what a power loss keeps: posix or ext4-ordered (as the campaign ran)")
	restart := fs.String("restart", "always", "restart a process that fails on its own: always, never, or at most N times (as the campaign ran)")
	backoff := fs.String("restart-backoff", sim.DefaultBackoff.String(), "how long a failed process waits to be restarted (as the campaign ran)")
	grace := fs.String("grace", sim.DefaultGrace.String(), graceUsage+" (as the campaign ran)")
	trace := fs.Bool("trace", false, "show the beats that tell what happened (the report's timeline of a failure), for a case that passes too")
	ef := addExecFlags(fs)
	bf := addBoundFlags(fs)
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	set := setFlags(fs)
	commands, err := ef.commands(set)
	if err != nil {
		return err
	}
	var want *reports.Case
	// How the case runs (restarts, the golden runs' bounds, the filesystem model): from the
	// report, or from the flags.
	params := reports.Options{Restart: *restart, FSModel: *fsModel, Grace: *grace}
	if *backoff != sim.DefaultBackoff.String() {
		params.RestartBackoff = *backoff
	}
	if *caseID != "" {
		if set["target"] || set["seed"] || set["schedule"] || set["fs-model"] || set["restart"] || set["restart-backoff"] || set["grace"] || len(commands) > 0 {
			return usagef("replay --case takes the target, seed, schedule and how the case runs from the report: drop --target, --exec, --seed, --schedule, --fs-model, --restart, --restart-backoff and --grace")
		}
		if len(pos) != 1 {
			return usagef("replay --case ID takes one report (a report.json or its directory), got %d arguments", len(pos))
		}
		rep, err := loadSummary(pos[0])
		if err != nil {
			return err
		}
		if want, err = findCase(rep, *caseID); err != nil {
			return err
		} else if want == nil {
			return usagef("no case %q in %s", *caseID, pos[0])
		}
		*name, *seed, *schedule, commands = want.Target, rep.Seed, want.Schedule.String(), rep.Options.Commands
		params = rep.Options
	} else {
		if err := noPositional("replay without --case", pos); err != nil {
			return err
		}
		switch {
		case len(commands) > 1:
			return usagef("replay runs one target: give one --exec")
		case len(commands) == 1 && set["target"]:
			return usagef("replay runs one target: give --target or --exec, not both")
		case len(commands) == 1:
			*name = commands[0].Name
		}
		if *name == "" || !set["schedule"] {
			return usagef("replay needs --case ID REPORT, or --target NAME (or --exec COMMAND) --seed N --schedule SCHEDULE")
		}
	}
	if err := bf.check(set); err != nil {
		return err
	}
	beats, virtual := bf.record(set) // bounds may be given with --case too: they change no case
	if set["max-beats"] {
		params.MaxBeats = beats
	}
	if set["max-virtual-time"] {
		params.MaxVirtualTime = virtual
	}
	id, err := campaign.ParseCaseParams(params)
	if err != nil {
		return usagef("--%v", err)
	}
	t, err := resolveTarget(*name, commands)
	if err != nil && want != nil && want.Repro != "" && !strings.HasPrefix(want.Repro, "chaoskit ") {
		// A report a test runner wrote (go test -chaoskit.out): its target lives in the tests.
		return usagef("%s is a target of the test that wrote %s, not one chaoskit can run; replay the case with: %s", *name, pos[0], want.Repro)
	}
	if err != nil {
		return err
	}
	t = withReplayFlags(t, id.ReplayFlags())
	s, err := faults.ParseSchedule(*schedule)
	if err != nil {
		return usagef("--schedule: %v", err)
	}
	for _, f := range s {
		if info, _ := f.Kind.Info(); info.NextVersion && t.NextVersion == nil {
			return usagef("--schedule %s deploys a next version (%s), and target %s has none: give the command of its next version with --upgrade-exec 'COMMAND'", s, f, t.Name)
		}
	}
	bar := c.progress()
	o := campaign.Options{Options: sim.Options{Seed: *seed, OnGolden: bar.golden(), KeepBeats: *trace}}
	id.ApplyCase(&o.Options)
	rn, err := campaign.NewRunner(c.ctx, t, o)
	bar.end()
	if err != nil {
		return targetError(beatsAdvice(err, []campaign.Target{t}))
	}
	hc := rn.Run(s)
	if hc.Interrupted() {
		return fmt.Errorf("replay %w", rn.Err())
	}
	g, _ := rn.Golden(s)
	hc.RequireAll(g.Len())
	fmt.Fprint(c.stdout, hc.String())
	if d := hc.Verdict.Diff; d != "" && !slices.ContainsFunc(hc.Verdict.Violations, func(v oracle.Violation) bool {
		return strings.Contains(v.Detail, strings.TrimSpace(d))
	}) {
		fmt.Fprintf(c.stdout, "  diff (-golden +faulty):\n    %s\n", strings.ReplaceAll(strings.TrimRight(d, "\n"), "\n", "\n    "))
	}
	got := hc.Verdict.Outcome
	if want != nil {
		if got == want.Verdict {
			fmt.Fprintf(c.stdout, "reproduces the report's verdict: %s\n", got)
		} else {
			fmt.Fprintf(c.stdout, "the report's verdict was %s; this replay's is %s\n", want.Verdict, got)
		}
	}
	switch got {
	case oracle.Fail:
		return exitError{exitFail, ""}
	case oracle.Unknown:
		return exitError{exitUnknown, ""}
	}
	return nil
}

// findCase returns the case of rep with the given ID, or nil, reading rep's cases one at a time
// (see reports.Report.Each) and no further than that case, so that it holds one case at a time.
// The error is of reading the cases.
func findCase(rep *reports.Report, id string) (*reports.Case, error) {
	var found *reports.Case
	err := rep.Each(func(c *reports.Case) error {
		if c.ID == id {
			found = c
			return errFound
		}
		return nil
	})
	if err != nil && err != errFound {
		return nil, err
	}
	return found, nil
}

// errFound stops findCase's reading of the cases at the case it looks for.
var errFound = errors.New("found")
