package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/adapters/process"
	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/chaoskit/chaoskit/sim"
)

// listFlag collects a flag given several times, or once as a comma-separated list.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(s string) error {
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v == "" {
			return fmt.Errorf("empty name in %q", s)
		}
		*l = append(*l, v)
	}
	return nil
}

// campaignFlags are the flags of run that set a campaign's parameters (campaignParams).
type campaignFlags struct {
	targets             listFlag
	exec                *execFlags
	faults, mode, shard *string
	restart, backoff    *string
	grace               *string
	fsModel             *string
	cases, depth        *int
	seed                *uint64
	bounds              *boundFlags
	set                 map[string]bool // the flags given, once parsed
}

// boundFlags are the flags that bound a target's golden run, for run and replay.
type boundFlags struct {
	beats *int
	time  *time.Duration
}

func addBoundFlags(fs *flag.FlagSet) *boundFlags {
	return &boundFlags{
		beats: fs.Int("max-beats", sim.DefaultMaxBeats, fmt.Sprintf("refuse a target whose golden run makes more beats than this without finishing (a harness that never ends); a command's default is %d, each of its beats a round trip", process.DefaultMaxBeats)),
		time:  fs.Duration("max-virtual-time", sim.DefaultMaxVirtualTime, "refuse a target whose golden run takes more virtual time than this without finishing"),
	}
}

// check refuses a bound that is not positive, naming its flag; set holds the flags given.
func (b *boundFlags) check(set map[string]bool) error {
	if set["max-beats"] && *b.beats < 1 {
		return usagef("--max-beats %d: want 1 or more (leave --max-beats out for the default, %d)", *b.beats, sim.DefaultMaxBeats)
	}
	if set["max-virtual-time"] && *b.time <= 0 {
		return usagef("--max-virtual-time %s: want a positive duration (leave --max-virtual-time out for the default, %s)", *b.time, sim.DefaultMaxVirtualTime)
	}
	return nil
}

// record returns the bounds as a report records them (reports.Options.MaxBeats and
// MaxVirtualTime): each empty when it is the default. --max-beats given is recorded whatever its
// value, for a command's default is not sim.DefaultMaxBeats (process.DefaultMaxBeats); set holds
// the flags given.
func (b *boundFlags) record(set map[string]bool) (beats int, virtual string) {
	if set["max-beats"] || *b.beats != sim.DefaultMaxBeats {
		beats = *b.beats
	}
	if *b.time != sim.DefaultMaxVirtualTime {
		virtual = b.time.String()
	}
	return beats, virtual
}

// graceUsage is the usage of --grace, run's and replay's.
const graceUsage = "how long a deploy (upgrade@N) lets the old version run after SIGTERM (in process, its context cancelled) before it kills it, in virtual time, as Kubernetes' terminationGracePeriodSeconds; 0 kills at once"

func addCampaignFlags(fs *flag.FlagSet) *campaignFlags {
	f := &campaignFlags{}
	fs.Var(&f.targets, "target", "a target to run; repeat the flag or list several with commas")
	f.exec = addExecFlags(fs)
	f.faults = fs.String("faults", "storage", "the fault kinds, or families (storage, fleet, tool, model, all), with commas")
	f.mode = fs.String("mode", "exhaustive", "exhaustive (every fault at every beat) or random")
	f.cases = fs.Int("cases", 0, "random mode: schedules per target (default 100); exhaustive mode: at most this many (default all); 1 or more")
	f.depth = fs.Int("depth", 1, "exhaustive mode: 2 also runs a kill at each beat followed by a power cut at each beat of the recovery")
	f.seed = fs.Uint64("seed", 1, "the campaign's seed")
	f.shard = fs.String("shard", "", "run only shard I/N: the cases whose index is I-1 modulo N")
	f.restart = fs.String("restart", "always", "restart a process that fails on its own: always (as a supervisor would), never, or at most N times")
	f.backoff = fs.String("restart-backoff", sim.DefaultBackoff.String(), "how long a failed process waits to be restarted, in virtual time: INITIAL..MAX doubling (Kubernetes'), or DELAY every time (systemd's RestartSec)")
	f.grace = fs.String("grace", sim.DefaultGrace.String(), graceUsage)
	f.bounds = addBoundFlags(fs)
	f.fsModel = fs.String("fs-model", "posix", "what a power loss keeps: posix (only what fsync promises) or ext4-ordered (what ext4's defaults keep)")
	return f
}

// inherit sets *v to base unless flag was given (set holds the flags given).
func inherit[T any](set map[string]bool, flag string, v *T, base T) {
	if !set[flag] {
		*v = base
	}
}

// campaign returns the campaign the flags describe, taking each parameter they do not set from
// base, when there is one.
func (f *campaignFlags) campaign(base *campaign.Campaign) (*campaign.Campaign, error) {
	commands, err := f.exec.commands(f.set)
	if err != nil {
		return nil, err
	}
	targets := slices.Clone(f.targets)
	for _, cmd := range commands {
		targets = append(targets, cmd.Name)
	}
	if f.set["cases"] && *f.cases < 1 {
		return nil, usagef("--cases %d: want 1 or more (leave --cases out for the default: 100 random schedules per target, or every exhaustive one)", *f.cases)
	}
	kinds, mode, cases, depth, seed, shard, restart, backoff, fsModel := *f.faults, *f.mode, *f.cases, *f.depth, *f.seed, *f.shard, *f.restart, *f.backoff, *f.fsModel
	if backoff == sim.DefaultBackoff.String() {
		backoff = "" // as a report records the default
	}
	grace := *f.grace
	if !f.set["faults"] && len(f.exec.upgrade) > 0 {
		kinds += "," + string(faults.Upgrade) // a next version given is a deploy to test
	}
	maxBeats, maxTime := f.bounds.record(f.set)
	if base != nil {
		o := base.Identity().Options()
		if !f.set["target"] && !f.execSet() {
			targets, commands = o.Targets, o.Commands
		}
		inherit(f.set, "faults", &kinds, strings.Join(o.Faults, ","))
		inherit(f.set, "mode", &mode, o.Mode)
		inherit(f.set, "cases", &cases, o.Cases)
		inherit(f.set, "depth", &depth, o.Depth)
		inherit(f.set, "seed", &seed, base.Options.Seed)
		inherit(f.set, "shard", &shard, o.Shard)
		inherit(f.set, "restart", &restart, o.Restart)
		inherit(f.set, "restart-backoff", &backoff, o.RestartBackoff)
		inherit(f.set, "grace", &grace, o.Grace)
		inherit(f.set, "max-beats", &maxBeats, o.MaxBeats)
		inherit(f.set, "max-virtual-time", &maxTime, o.MaxVirtualTime)
		inherit(f.set, "fs-model", &fsModel, o.FSModel)
	}
	if err := f.bounds.check(f.set); err != nil {
		return nil, err
	}
	camp, err := campaignOf(seed, reports.Options{Targets: targets, Commands: commands, Faults: strings.Split(kinds, ","), Mode: mode,
		Cases: cases, Depth: depth, Shard: shard, Restart: restart, RestartBackoff: backoff, Grace: grace, MaxBeats: maxBeats, MaxVirtualTime: maxTime,
		FSModel: fsModel})
	if err != nil || !f.set["faults"] {
		return camp, err
	}
	return camp, checkDeploys(camp, *f.faults)
}

// checkDeploys refuses a fault list, as --faults gives it (list), that names a kind deploying a
// next version (upgrade) when a target of camp has none, or that deploys none when a target has
// one (--upgrade-exec): either is a campaign that would not test what was asked.
func checkDeploys(camp *campaign.Campaign, list string) error {
	deploys := func(k faults.Kind) bool {
		info, _ := k.Info()
		return info.NextVersion
	}
	for _, t := range camp.Targets {
		for _, name := range strings.Split(list, ",") {
			if k := faults.Kind(strings.TrimSpace(name)); deploys(k) && t.NextVersion == nil {
				return usagef("--faults %s deploys a next version mid-run, and target %s has none: give the command of its next version with --upgrade-exec 'COMMAND'", k, t.Name)
			}
		}
		if t.NextVersion != nil && !slices.ContainsFunc(camp.Options.Faults, deploys) {
			return usagef("--upgrade-exec is deployed by an upgrade fault, and --faults %s has none: add upgrade (e.g. --faults kill,upgrade)", list)
		}
	}
	return nil
}

// execSet reports whether --exec or one of its options was given.
func (f *campaignFlags) execSet() bool {
	return slices.ContainsFunc(execParams, func(name string) bool { return f.set[name] })
}

func runRun(c *cli, args []string) error {
	fset := flag.NewFlagSet("run", flag.ContinueOnError)
	cf := addCampaignFlags(fset)
	out := fset.String("out", "chaoskit-report", "the report directory")
	parallel := fset.Int("parallel", 0, "cases run at once (default: one per CPU); the report does not depend on it")
	workers := fset.Int("workers", 0, "deprecated: the old name of --parallel")
	resume := fset.String("resume", "", "continue the interrupted campaign of this report directory")
	noShare := addShareFlag(fset)
	outs := addOutputFlags(fset)
	sel := addSelectionFlags(fset)
	pos, err := c.parse(fset, args)
	if err != nil {
		return err
	}
	if err := noPositional("run", pos); err != nil {
		return err
	}
	cf.set = setFlags(fset)
	if err := c.renamed(cf.set, "workers", workers, "parallel", parallel); err != nil {
		return err
	}
	if cf.set["parallel"] && *parallel < 1 {
		return usagef("--parallel %d: want 1 or more (leave --parallel out for one per CPU)", *parallel)
	}
	if *out == "" {
		return usagef("--out is empty: name the report directory")
	}
	if err := sel.check(cf.set); err != nil {
		return err
	}
	dir := *out
	var camp *campaign.Campaign
	var resumed *campaign.JournalState
	if *resume != "" {
		if cf.set["out"] && filepath.Clean(*out) != filepath.Clean(*resume) {
			return usagef("--resume %s writes its report there: drop --out %s", *resume, *out)
		}
		dir = *resume
		camp, resumed, err = c.resumption(dir, cf)
	} else if camp, err = cf.campaign(nil); err == nil && !cf.set["faults"] {
		c.plainDefaults(camp)
	}
	if err != nil {
		return err
	}
	if *sel.list {
		return c.listCases(camp)
	}
	formats, g, err := outs.check(camp.Identity().Options())
	if err != nil {
		return err
	}
	if formats, err = sel.formats(formats, cf.set); err != nil {
		return err
	}
	camp.Options.Parallel, camp.Options.NoShare = *parallel, *noShare
	release, err := c.lockDir(dir)
	if err != nil {
		return err
	}
	defer release()
	ro := sel.options(c)
	if n := len(slices.Compact(slices.Sorted(slices.Values(ro.Only)))); n > 0 {
		c.notes = append(c.notes, fmt.Sprintf("the report holds only the %s --only selected, not the whole campaign", reports.Count(n, "case")))
	}
	rep, journalErr := c.execute(camp, dir, resumed, ro)
	if rep == nil {
		if rep = refusalReport(camp, journalErr); rep == nil {
			return classify(journalErr, dir)
		}
		if ro.OnCase != nil {
			ro.OnCase(&rep.Cases[0])
		}
		if err := c.fs.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("writing the report: %w", err)
		}
		if err := c.publish(rep, dir, formats, printSummary); err != nil {
			return err
		}
		return classify(journalErr, dir)
	}
	if err := c.publish(rep, dir, formats, printSummary); err != nil {
		return err
	}
	if journalErr != nil { // the report is whole, but the campaign could not have been resumed
		return journalErr
	}
	return judge(rep, g, c.stdout)
}

// resumption reads the journal of the report directory dir and returns the campaign it records
// and its state. The flags that set a campaign's parameters may be given again, but only with
// the values the journal records. A directory without a journal (a run killed before it wrote
// one) starts the campaign the flags describe from the start.
func (c *cli) resumption(dir string, cf *campaignFlags) (*campaign.Campaign, *campaign.JournalState, error) {
	path := campaign.JournalPath(dir)
	st, err := campaign.ReadJournal(c.fs, path)
	if errors.Is(err, fs.ErrNotExist) {
		if fi, err := c.fs.Stat(dir); err != nil || !fi.IsDir() {
			return nil, nil, usagef("--resume %s: no such report directory", dir)
		}
		if !cf.set["target"] && !cf.execSet() {
			return nil, nil, usagef("--resume %s: it holds no journal (%s) to resume; to start the campaign there, give its --target or --exec and its other flags", dir, filepath.Base(path))
		}
		camp, err := cf.campaign(nil)
		if err == nil {
			fmt.Fprintf(c.stderr, "chaoskit: %s holds no journal: running the campaign from its start\n", dir)
		}
		return camp, nil, err
	}
	if err != nil {
		return nil, nil, err
	}
	camp, err := campaignOf(st.Header.Seed, st.Header.Options)
	if err != nil {
		return nil, nil, fmt.Errorf("journal %s: %w", path, err)
	}
	for _, cmd := range st.Header.Options.Commands {
		if commandDigest(cmd) != cmd.Digest {
			return nil, nil, usagef("--resume %s: the files of target %s changed since its journal was written: start the campaign again", dir, cmd.Name)
		}
	}
	given, err := cf.campaign(camp)
	if err != nil {
		return nil, nil, err
	}
	for _, name := range campaignParams {
		set := cf.set[name] || name == "exec" && cf.execSet()
		if set && param(given, name) != param(camp, name) {
			return nil, nil, usagef("--%s %s differs from the campaign journaled in %s (%s %s): resume with the same parameters, or none",
				name, param(given, name), path, name, param(camp, name))
		}
	}
	return camp, st, nil
}

// clearReport removes the report files a directory holds from an earlier campaign, so that a
// campaign that is interrupted leaves no report that looks complete beside its journal.
func (c *cli) clearReport(dir string) error {
	for _, f := range reports.Formats() {
		path := filepath.Join(dir, reports.FileName(f))
		if fi, err := c.fs.Stat(path); err != nil || !fi.Mode().IsRegular() {
			continue // nothing there, or not a report file: writing the new one will say so
		}
		if err := c.fs.Remove(path); err != nil {
			return fmt.Errorf("removing the old %s: %w", path, err)
		}
	}
	return nil
}

// plainDefaults narrows the default fault kinds (every storage kind, and upgrade with
// --upgrade-exec) to kill and upgrade when a target is a command on a plain disk, which cannot
// honour the others, and says so.
func (c *cli) plainDefaults(camp *campaign.Campaign) {
	for _, t := range camp.Targets {
		if t.Command != nil && t.Command.Disk != string(process.FUSE) {
			camp.Options.Faults = slices.DeleteFunc(camp.Options.Faults, func(k faults.Kind) bool {
				return k != faults.Kill && k != faults.Upgrade
			})
			var names []string
			for _, k := range camp.Options.Faults {
				names = append(names, string(k))
			}
			c.notes = append(c.notes, fmt.Sprintf("--faults defaulted to %s: %s runs on a plain disk, where the other storage faults cannot apply (--disk fuse lifts that)", strings.Join(names, ","), t.Name))
			return
		}
	}
}

// runCampaign runs camp, journaling into dir (continuing resumed, if set), with the progress
// bar of the command, and returns its report. Any error but one in journaling is returned
// classified for its exit code, without a report.
func (c *cli) runCampaign(camp *campaign.Campaign, dir string, resumed *campaign.JournalState) (*reports.Report, error) {
	rep, err := c.execute(camp, dir, resumed, campaign.RunOptions{})
	if rep == nil {
		return nil, classify(err, dir)
	}
	return rep, err
}

// execute is runCampaign with the error of a campaign that did not run left unclassified, and
// the cases to run and where each goes as it finishes (ro.Only, ro.OnCase).
func (c *cli) execute(camp *campaign.Campaign, dir string, resumed *campaign.JournalState, ro campaign.RunOptions) (*reports.Report, error) {
	bar := c.progress()
	if resumed == nil {
		if err := c.clearReport(dir); err != nil {
			return nil, err
		}
	}
	camp.Options.OnGolden = bar.golden()
	ro.FS, ro.Dir, ro.Resume, ro.Progress = c.fs, dir, resumed, bar.callback()
	c.tally = sim.Tally{}
	ro.Tally = &c.tally
	rep, err := camp.Run(c.ctx, ro)
	bar.end()
	return rep, beatsAdvice(err, camp.Targets)
}

// classify returns the error of a campaign that stopped without a report (see runCampaign),
// for its exit code.
func classify(err error, dir string) error {
	switch {
	case errors.Is(err, campaign.ErrInterrupted):
		return fmt.Errorf("%w (continue it with chaoskit run --resume %s)", err, dir)
	case errors.Is(err, campaign.ErrNoSuchCase):
		return usagef("--only: %v (chaoskit run --list lists them)", err)
	}
	return targetError(err)
}

// refusalReport returns the report of a campaign that a target stopped by being refused as not
// deterministic (err): one unknown case of that target, its golden run, saying why, so that a
// CI step that publishes the report directory finds the refusal there. It returns nil for any
// other error.
func refusalReport(camp *campaign.Campaign, err error) *reports.Report {
	var te *campaign.TargetError
	if !errors.As(err, &te) || !errors.Is(err, sim.ErrNondeterministic) {
		return nil
	}
	for _, t := range camp.Targets {
		if t.Name != te.Target {
			continue
		}
		repro := campaign.ReplayCommand(t.Name, camp.Options.Seed, nil)
		if t.Repro != nil {
			repro = t.Repro(camp.Options.Seed, nil)
		}
		why := strings.TrimPrefix(te.Err.Error(), t.Name+": ") // the case names its target
		c := reports.Case{Target: t.Name, ID: campaign.CaseID(t.Name, nil), Verdict: oracle.Unknown,
			Violations: []oracle.Violation{}, Reason: why, Repro: repro}
		return camp.Report([]reports.Case{c}, map[string]int{t.Name: 0})
	}
	return nil
}
