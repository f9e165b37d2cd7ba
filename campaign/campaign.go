package campaign

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/spf13/afero"
)

// Target is a target of a campaign: the name its cases, reports and replay commands use, and a
// constructor of one instance per process (see harness.NewRunner).
type Target struct {
	Name string
	New  func() harness.Target
	// Repro, if set, returns the command that replays the target's case under schedule s with
	// the campaign's seed; the default is ReplayCommand.
	Repro func(seed uint64, s faults.Schedule) string
	// Command, for a target that is a command run as a process, says how it is run; the
	// report records it (reports.Options.Commands), so that the campaign can be resumed,
	// merged and replayed.
	Command *reports.Command
}

// Campaign is a campaign over one or more targets, each explored under Options. Its targets and
// the options Report records (fault kinds, mode, cases, seed, shard) decide its report,
// wall-clock fields aside; so does nothing else.
type Campaign struct {
	Targets []Target
	Options Options
}

// RunOptions say where a campaign's journal goes and how it shows progress; none of them
// changes its report.
type RunOptions struct {
	// FS and Dir are where the journal is written, Dir/cases.jsonl (JournalPath); an empty Dir
	// keeps no journal.
	FS  afero.Fs
	Dir string
	// Resume, if set, is the journal of an interrupted run of the same campaign: its cases are
	// not run again, and new ones are appended to it.
	Resume *JournalState
	// Progress, if set, is called as cases finish with the cases done, the total and the
	// failures so far, from one goroutine at a time.
	Progress func(done, total, failed int)
}

// ErrInterrupted is wrapped by the error of a campaign whose context was done before it ran
// every case.
var ErrInterrupted = errors.New("campaign interrupted")

// Identity returns the parameters that decide the campaign's report, as the report and the
// journal record them.
func (c *Campaign) Identity() reports.Options {
	o := c.Options.withDefaults()
	id := reports.Options{Mode: o.Mode.String(), Cases: o.Cases, Shard: o.Shard.String(), Restart: RestartText(o.RestartFailed)}
	for _, t := range c.Targets {
		id.Targets = append(id.Targets, t.Name)
		if t.Command != nil {
			id.Commands = append(id.Commands, *t.Command)
		}
	}
	for _, k := range o.Faults {
		id.Faults = append(id.Faults, string(k))
	}
	return id
}

// Run runs the campaign and returns its report, its cases in campaign order. Each case is
// journaled as it finishes (see RunOptions). An error in writing the journal does not stop the
// campaign: Run returns the complete report together with that error. A target whose golden
// run cannot be recorded stops the campaign before any case runs; its error wraps
// harness.ErrNondeterministic if the target is not deterministic.
func (c *Campaign) Run(ctx context.Context, ro RunOptions) (*reports.Report, error) {
	start := time.Now()
	o := c.Options.withDefaults()
	rec := &recorder{index: map[string]int{}, progress: ro.Progress}
	var runners []*harness.Runner
	golden := map[string]int{}
	for _, t := range c.Targets {
		ho := o.Options
		ho.Name = t.Name
		repro := t.Repro
		if repro == nil {
			repro = func(seed uint64, s faults.Schedule) string { return ReplayCommand(t.Name, seed, s) }
		}
		ho.Repro = func(s faults.Schedule) string { return repro(o.Seed, s) }
		rn, err := harness.NewRunner(t.New, ho)
		if err != nil {
			return nil, err
		}
		runners = append(runners, rn)
		g, _ := rn.Golden(nil)
		golden[t.Name] = g.Len()
	}
	var done []reports.Case
	if ro.Resume != nil {
		done = ro.Resume.Cases
	}
	todo, err := c.plan(runners, o, rec.index, done)
	if err != nil {
		return nil, err
	}
	if ro.Dir != "" {
		j, err := c.openJournal(ro)
		if err != nil {
			return nil, err
		}
		rec.journal = newJournalWriter(j)
	}
	total := len(done)
	for _, p := range todo {
		total += len(p.scheds)
	}
	rec.start(done, total)
	for i, rn := range runners {
		ro := o
		ro.OnCase = rec.record
		Run(ctx, rn, todo[i].scheds, todo[i].index, ro)
	}
	var journalErr error
	if rec.journal != nil {
		journalErr = rec.journal.close()
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w after %d of %d cases: %w", ErrInterrupted, rec.done, total, err)
	}
	rep := c.Report(append(done, rec.cases...), golden)
	rep.DurationMs = float64(time.Since(start).Microseconds()) / 1000
	return rep, journalErr
}

// Report returns the campaign's report of the given cases: in campaign order, summarised, with
// the golden runs' lengths by target name.
func (c *Campaign) Report(cases []reports.Case, golden map[string]int) *reports.Report {
	rep := &reports.Report{Schema: reports.Schema, Seed: c.Options.Seed, Options: c.Identity(), Cases: cases}
	rep.SortCases()
	rep.Summarize(golden)
	return rep
}

// planned is what is left to run of one target's campaign: schedules and their indexes.
type planned struct {
	scheds []faults.Schedule
	index  []int
}

// plan returns, per runner, the schedules of the campaign's shard still to run, filling index
// with the index of every case of the campaign by ID. It checks that the cases already done are
// cases of the campaign, at the same index: they are not if the target changed since.
func (c *Campaign) plan(runners []*harness.Runner, o Options, index map[string]int, done []reports.Case) ([]planned, error) {
	have := map[string]bool{}
	todo := make([]planned, len(runners))
	for i, rn := range runners {
		scheds, err := Schedules(rn, o)
		if err != nil {
			return nil, err
		}
		for k, s := range scheds {
			id := CaseID(c.Targets[i].Name, s)
			index[id] = k
			if o.Shard.Holds(k) {
				have[id] = true
				todo[i].scheds = append(todo[i].scheds, s)
				todo[i].index = append(todo[i].index, k)
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
	for i := range todo {
		p := &todo[i]
		var keep planned
		for j, s := range p.scheds {
			if !skip[CaseID(c.Targets[i].Name, s)] {
				keep.scheds, keep.index = append(keep.scheds, s), append(keep.index, p.index[j])
			}
		}
		*p = keep
	}
	return todo, nil
}

// RestartText writes a restart policy (harness.Options.RestartFailed) as reports and the
// command line do: "" for always, "never", or the count.
func RestartText(policy int) string {
	switch {
	case policy == harness.RestartNever:
		return "never"
	case policy > 0:
		return strconv.Itoa(policy)
	}
	return ""
}

// ParseRestart reads RestartText's form back; "always" is accepted too.
func ParseRestart(text string) (int, error) {
	switch text {
	case "", "always":
		return harness.RestartAlways, nil
	case "never":
		return harness.RestartNever, nil
	}
	n, err := strconv.Atoi(text)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("restart policy %q: want always, never or a positive count", text)
	}
	return n, nil
}

// CaseID returns the ID of the case of the named target under schedule s: unique in a report.
func CaseID(target string, s faults.Schedule) string {
	return (&harness.Case{Target: target, Schedule: s}).ID()
}

// openJournal starts the campaign's journal, or reopens the one it resumes.
func (c *Campaign) openJournal(ro RunOptions) (*journal, error) {
	path := JournalPath(ro.Dir)
	if ro.Resume != nil {
		return openJournal(ro.FS, path, ro.Resume.size)
	}
	if err := mkdirDurable(ro.FS, ro.Dir); err != nil {
		return nil, err
	}
	return startJournal(ro.FS, path, Header{Seed: c.Options.Seed, Options: c.Identity()})
}

// recorder receives each case as it finishes: it journals it, keeps it, and reports progress.
// Cases reach it from one goroutine at a time, and the campaign runs one target at a time.
type recorder struct {
	journal  *journalWriter
	index    map[string]int // the index of every case of the campaign, by ID
	cases    []reports.Case
	progress func(done, total, failed int)
	mu       sync.Mutex
	done     int
	total    int
	failed   int
}

// start sets the counts to those of the cases already done.
func (r *recorder) start(done []reports.Case, total int) {
	r.done, r.total = len(done), total
	r.failed = len(slices.DeleteFunc(slices.Clone(done), func(c reports.Case) bool { return c.Verdict != oracle.Fail }))
	if r.progress != nil {
		r.progress(r.done, r.total, r.failed)
	}
}

func (r *recorder) record(index int, hc *harness.Case) {
	c := Report(hc, index)
	if r.journal != nil {
		r.journal.add(&c)
	}
	r.cases = append(r.cases, c)
	r.done++
	if c.Verdict == oracle.Fail {
		r.failed++
	}
	if r.progress != nil {
		r.progress(r.done, r.total, r.failed)
	}
}

// Report returns case c, the index-th of its target's campaign, as a report holds it.
func Report(c *harness.Case, index int) reports.Case {
	v := c.Verdict
	rc := reports.Case{
		Target:           c.Target,
		ID:               c.ID(),
		Index:            index,
		Schedule:         c.Schedule.String(),
		Verdict:          v.Outcome,
		Violations:       v.Violations,
		Detected:         v.Detected,
		Refused:          v.Refused,
		Reason:           v.Reason,
		NotChecked:       v.NotChecked,
		Metrics:          v.Metrics,
		DuplicatesByTool: v.DuplicatesByTool,
		Diff:             v.Diff,
		Repro:            c.Repro,
		DurationMs:       float64(c.Duration.Microseconds()) / 1000,
	}
	if rc.Violations == nil {
		rc.Violations = []oracle.Violation{}
	}
	if c.Shrunk != nil {
		rc.Shrunk = c.Shrunk.String()
	}
	for _, f := range c.Unfired {
		rc.Unfired = append(rc.Unfired, f.String())
	}
	if v.Outcome != oracle.Pass || v.Detected != "" {
		for _, b := range c.Trace() {
			rc.Trace = append(rc.Trace, reports.TraceBeat(b))
		}
	}
	return rc
}
