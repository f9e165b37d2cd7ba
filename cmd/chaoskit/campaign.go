package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/spf13/afero"
)

// campaign is what a run explores: targets, fault kinds, mode, case count, seed and shard. These
// parameters, and nothing else, decide the report (wall-clock fields aside); the journal and
// the report record them, so that a resumed run and the shards of a merge can be checked
// against them.
type campaign struct {
	targets []target
	faults  []faults.Kind
	mode    harness.Mode
	cases   int // schedules per target in random mode; at most this many in exhaustive mode (0: all)
	seed    uint64
	shard   reports.Shard
}

// campaignParams are the flags of `run` that set a campaign's parameters, in the order its
// error messages name them.
var campaignParams = []string{"target", "faults", "mode", "cases", "seed", "shard"}

// newCampaign checks a campaign's parameters, as the flags of `run` spell them, and returns a
// usage error naming the first that is wrong.
func newCampaign(targets []string, faultList, mode string, cases int, seed uint64, shard string) (*campaign, error) {
	c := &campaign{cases: cases, seed: seed}
	if len(targets) == 0 {
		return nil, usagef("run needs --target NAME (chaoskit targets lists them)")
	}
	for _, name := range targets {
		t, err := lookupTarget(name)
		if err != nil {
			return nil, err
		}
		if !slices.ContainsFunc(c.targets, func(u target) bool { return u.name == name }) {
			c.targets = append(c.targets, t)
		}
	}
	var err error
	if c.faults, err = faults.ParseKinds(faultList); err != nil {
		return nil, usagef("--faults: %v", err)
	}
	if c.mode, err = harness.ParseMode(mode); err != nil {
		return nil, usagef("--mode: %v", err)
	}
	if cases < 0 {
		return nil, usagef("--cases %d: want a count of 0 or more", cases)
	}
	if c.mode == harness.Random && c.cases == 0 {
		c.cases = 100 // the harness's default, recorded so that the report says what ran
	}
	if c.shard, err = reports.ParseShard(shard); err != nil {
		return nil, usagef("--shard: %v", err)
	}
	return c, nil
}

// campaignOf rebuilds the campaign a journal's header or a report records.
func campaignOf(seed uint64, o reports.Options) (*campaign, error) {
	return newCampaign(o.Targets, strings.Join(o.Faults, ","), o.Mode, o.Cases, seed, o.Shard)
}

// options returns the campaign's parameters as a report records them.
func (c *campaign) options() reports.Options {
	o := reports.Options{Mode: c.mode.String(), Cases: c.cases, Shard: c.shard.String()}
	for _, t := range c.targets {
		o.Targets = append(o.Targets, t.name)
	}
	for _, k := range c.faults {
		o.Faults = append(o.Faults, string(k))
	}
	return o
}

// param returns the value of one of campaignParams, as its flag would spell it.
func (c *campaign) param(name string) string {
	o := c.options()
	switch name {
	case "target":
		return strings.Join(o.Targets, ",")
	case "faults":
		return strings.Join(o.Faults, ",")
	case "mode":
		return o.Mode
	case "cases":
		return strconv.Itoa(o.Cases)
	case "seed":
		return strconv.FormatUint(c.seed, 10)
	case "shard":
		return o.Shard
	}
	panic("campaign.param: no parameter " + name)
}

// runOptions say how a campaign runs; none of them changes its report.
type runOptions struct {
	FS      afero.Fs // where the report directory is
	Dir     string   // the report directory, which holds the journal
	Workers int      // cases run at once (0: GOMAXPROCS)
	// Resume, if set, is the journal of an interrupted run of the same campaign: its cases are
	// not run again, and new ones are appended to it.
	Resume *journalState
	// Progress, if set, is shown as the cases finish.
	Progress *progress
}

// run runs the campaign, journaling every case to DIR/cases.jsonl as it finishes, and returns
// its report. An error in writing the journal does not stop the campaign: run returns the
// complete report together with that error.
func (c *campaign) run(ctx context.Context, o runOptions) (*reports.Report, error) {
	start := time.Now()
	rec := &recorder{index: map[string]int{}, bar: o.Progress}
	var runners []*harness.Runner
	golden := map[string]int{}
	for _, t := range c.targets {
		rn, err := harness.NewRunner(t.new(), harness.Options{
			Name: t.name, Faults: c.faults, Mode: c.mode, Cases: c.cases, Seed: c.seed, Workers: o.Workers,
			Repro:  func(s faults.Schedule) string { return replayCommand(t.name, c.seed, s) },
			OnCase: rec.record,
		})
		if err != nil {
			return nil, targetError(err)
		}
		runners = append(runners, rn)
		golden[t.name] = rn.GoldenBeats()
	}
	var done []reports.Case
	if o.Resume != nil {
		done = o.Resume.cases
	}
	todo, err := c.plan(runners, rec.index, done)
	if err != nil {
		return nil, err
	}
	j, err := c.openJournal(o)
	if err != nil {
		return nil, err
	}
	rec.journal = newJournalWriter(j)

	total := len(done)
	for _, ss := range todo {
		total += len(ss)
	}
	rec.start(done, total)
	for i, rn := range runners {
		rn.RunAll(ctx, todo[i])
	}
	journalErr := rec.journal.close()
	rec.bar.end()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("campaign interrupted after %d of %d cases (continue it with chaoskit run --resume %s): %w", rec.done, total, o.Dir, err)
	}
	rep := &reports.Report{Schema: reports.Schema, Seed: c.seed, Options: c.options(), Cases: append(done, rec.cases...)}
	rep.SortCases()
	rep.Summarize(golden)
	rep.DurationMs = float64(time.Since(start).Microseconds()) / 1000
	return rep, journalErr
}

// plan returns, per runner, the schedules of the campaign's shard still to run, filling index
// with the index of every case of the campaign by ID. It checks that the cases already done are
// cases of the campaign, at the same index: they are not if the target changed since.
func (c *campaign) plan(runners []*harness.Runner, index map[string]int, done []reports.Case) ([][]faults.Schedule, error) {
	have := map[string]bool{}
	todo := make([][]faults.Schedule, len(runners))
	for i, rn := range runners {
		for k, s := range rn.Schedules() {
			id := caseID(c.targets[i].name, s)
			index[id] = k
			if c.shard.Holds(k) {
				have[id] = true
				todo[i] = append(todo[i], s)
			}
		}
	}
	skip := map[string]bool{}
	for _, d := range done {
		if k, ok := index[d.ID]; !ok || !have[d.ID] || k != d.Index {
			return nil, fmt.Errorf("the journal holds case %s (index %d), which this campaign does not have there: did the target change since the journal was written?", d.ID, d.Index)
		}
		skip[d.ID] = true
	}
	for i, ss := range todo {
		todo[i] = slices.DeleteFunc(ss, func(s faults.Schedule) bool {
			return skip[caseID(c.targets[i].name, s)]
		})
	}
	return todo, nil
}

// caseID returns the ID of the case of the target under schedule s, as the harness names it.
func caseID(target string, s faults.Schedule) string {
	return (&harness.Case{Target: target, Schedule: s}).ID()
}

// openJournal starts the campaign's journal, or reopens the one it resumes.
func (c *campaign) openJournal(o runOptions) (*journal, error) {
	path := journalPath(o.Dir)
	if o.Resume != nil {
		return openJournal(o.FS, path, o.Resume.size)
	}
	if err := mkdirDurable(o.FS, o.Dir); err != nil {
		return nil, err
	}
	return startJournal(o.FS, path, journalHeader{Seed: c.seed, Options: c.options()})
}

// targetError classifies an error from recording a target's golden run: a target that is not
// deterministic cannot be decided (exit 3); any other failure is an input error.
func targetError(err error) error {
	if errors.Is(err, harness.ErrNondeterministic) {
		return exitError{exitUnknown, err.Error()}
	}
	return err
}

// recorder receives each case as it finishes: it journals it, keeps it, and moves the progress
// bar. The harness calls it from one goroutine at a time, and the campaign runs one target at a
// time.
type recorder struct {
	journal *journalWriter
	index   map[string]int // the index of every case of the campaign, by ID
	cases   []reports.Case
	bar     *progress
	done    int
	total   int
	failed  int
}

// start sets the counts to those of the cases already done.
func (r *recorder) start(done []reports.Case, total int) {
	r.done, r.total = len(done), total
	for _, c := range done {
		if c.Verdict == reports.Fail {
			r.failed++
		}
	}
	r.bar.start(r.done, r.total, r.failed)
}

func (r *recorder) record(hc *harness.Case) {
	c := hc.Report()
	c.Index = r.index[c.ID]
	r.journal.add(&c)
	r.cases = append(r.cases, c)
	r.done++
	if c.Verdict == reports.Fail {
		r.failed++
	}
	r.bar.update(r.done, r.total, r.failed)
}
