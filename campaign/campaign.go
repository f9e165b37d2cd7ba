package campaign

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/chaoskit/chaoskit/sim"
	"github.com/spf13/afero"
)

// Target is a target of a campaign: the name its cases, reports and replay commands use, and a
// constructor of one instance per process (see sim.NewRunner).
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
	// NextVersion, if set, builds the target's next version: the version an upgrade fault
	// deploys mid-run (sim.Options.NextVersion). A target without one has no upgrade cases.
	NextVersion func() harness.Target
}

// Campaign is a campaign over one or more targets, each explored under Options. Its targets and
// the options Report records (fault kinds, mode, cases, seed, shard) decide its report,
// wall-clock fields aside; so does nothing else.
type Campaign struct {
	Targets []Target
	Options Options
}

// RunOptions say where a campaign's journal goes, how it shows progress, and which of its cases
// to run; none of them changes a case or its verdict.
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
	// OnCase, if set, is called with each case as it finishes, as the report holds it (which it
	// must not change), from one goroutine at a time: what a test runner reports as it goes.
	OnCase func(c *reports.Case)
	// Only, if not empty, holds the IDs (CaseID) of the cases to run, out of those List gives: a
	// test runner's selection. The report then holds those cases only, under the campaign's
	// options, and says so (reports.Options.Only: how many; it lists no fault kind the campaign
	// has no case of, for the others were not selected). An ID that is not one of the
	// campaign's cases is an error (ErrNoSuchCase), before any case runs.
	Only []string
	// Tally, if set, is added what the campaign's runners ran once it is over (sim.Tally): the
	// cases decided, the runs of the targets they took, and the cases decided from another
	// case's recovery (sim.Options.NoShare turns that off).
	Tally *sim.Tally
}

// ErrInterrupted is wrapped by the error of a campaign whose context was done before it ran
// every case.
var ErrInterrupted = errors.New("campaign interrupted")

// ErrNoSuchCase is wrapped by the error of a run asked for a case (RunOptions.Only) that the
// campaign does not have.
var ErrNoSuchCase = errors.New("no such case in the campaign")

// TargetError is the error of a campaign stopped by one of its targets, whose golden run could
// not be recorded: Target names it, and Err, which it wraps, says why (and names it too).
type TargetError struct {
	Target string
	Err    error
}

func (e *TargetError) Error() string { return e.Err.Error() }

func (e *TargetError) Unwrap() error { return e.Err }

// Run runs the campaign and returns its report, its cases in campaign order. Each case is
// journaled as it finishes (see RunOptions). An error in writing the journal does not stop the
// campaign: Run returns the complete report together with that error. A target whose golden
// run cannot be recorded stops the campaign before any case runs, with a *TargetError naming
// it, which wraps sim.ErrNondeterministic if the target is not deterministic.
//
// When ctx is done, Run stops at once, golden runs and cases alike (their processes are ended),
// journals no case it did not finish, and returns an error wrapping ErrInterrupted and ctx's
// cause. A journal, if any, is started before the first golden run, so that a campaign stopped
// at any moment can be resumed (RunOptions.Resume).
//
// With a journal, Run keeps counts, not cases: the report's cases are read back from the
// journal when it is written (reports.Report.Source), so that a campaign of a million cases runs
// in memory that does not grow with them. Without one, the report holds its cases.
func (c *Campaign) Run(ctx context.Context, ro RunOptions) (*reports.Report, error) {
	start := time.Now()
	o := c.Options.withDefaults()
	var fresh *journal // the journal of a campaign not resumed, started before anything runs
	if ro.Dir != "" && ro.Resume == nil {
		j, err := c.openJournal(ro)
		if err != nil {
			return nil, err
		}
		fresh = j
		defer func() {
			if fresh != nil {
				fresh.close()
			}
		}()
	}
	runners, err := c.runners(ctx, o)
	if err != nil {
		return nil, c.interrupted(ctx, err, 0, 0)
	}
	golden := map[string]int{}
	for i, rn := range runners {
		g, _ := rn.Golden(nil)
		golden[c.Targets[i].Name] = g.Len()
	}
	var done []entry
	if ro.Resume != nil {
		done = ro.Resume.entries
	}
	todo, total, err := c.plan(runners, o, ro.Resume, ro.Only)
	if err != nil {
		return nil, c.interrupted(ctx, err, len(done), 0)
	}
	rank := map[string]int{}
	for i, t := range c.Targets {
		if _, ok := rank[t.Name]; !ok {
			rank[t.Name] = i
		}
	}
	rec := &recorder{progress: ro.Progress, onCase: ro.OnCase, rank: rank}
	if ro.Dir != "" {
		j := fresh
		if j == nil {
			if j, err = c.openJournal(ro); err != nil {
				return nil, err
			}
		}
		fresh = nil // the writer closes it
		rec.journal = newJournalWriter(j, rank, total)
	}
	rec.start(done, total+len(done))
	for i, rn := range runners {
		ro := o
		ro.OnCase = rec.record
		stream(ctx, rn, todo[i], ro)
	}
	if ro.Tally != nil {
		for _, rn := range runners {
			ro.Tally.Add(rn.Tally())
		}
	}
	var journalErr error
	if rec.journal != nil {
		journalErr = rec.journal.close()
	}
	if ctx.Err() != nil {
		return nil, c.interrupted(ctx, ctx.Err(), rec.done, rec.total)
	}
	var rep *reports.Report
	opts := c.Identity().Options()
	opts.Only = len(slices.Compact(slices.Sorted(slices.Values(ro.Only)))) // the report holds the cases selected alone
	if rec.journal == nil && ro.Resume == nil {
		rep = &reports.Report{Schema: reports.Schema, Seed: c.Options.Seed, Options: opts, Cases: rec.kept} // in memory all along
		rep.SortCases()
		rep.Summarize(golden)
	} else {
		rep = &reports.Report{Schema: reports.Schema, Seed: c.Options.Seed, Options: opts, Source: rec.source(ro, done)}
		if err := rep.Summarize(golden); err != nil {
			return nil, errors.Join(fmt.Errorf("summarising the campaign: %w", err), journalErr)
		}
	}
	if o.Mode == Exhaustive && o.Cases > 0 { // a sample: say of how many
		all := o
		all.Cases = 0
		for i := range rep.Summary.Targets {
			t := &rep.Summary.Targets[i]
			if seq, err := scheduleSeq(runners[rank[t.Target]], all, every); err == nil {
				for range seq {
					t.Schedules++
				}
			}
			if t.Schedules <= o.Cases {
				t.Schedules = 0 // every one ran
			}
		}
	}
	rep.DurationMs = float64(time.Since(start).Microseconds()) / 1000
	return rep, journalErr
}

// runners records the golden run of each of the campaign's targets, in order, with options o,
// under ctx (sim.NewRunnerContext).
func (c *Campaign) runners(ctx context.Context, o Options) ([]*sim.Runner, error) {
	var runners []*sim.Runner
	for _, t := range c.Targets {
		rn, err := NewRunner(ctx, t, o)
		if err != nil {
			return nil, err
		}
		runners = append(runners, rn)
	}
	return runners, nil
}

// NewRunner records target t's golden runs under ctx, as every way in does (a campaign, a
// replay, a benchmark, a go test): the runner is named for t, and a case's replay command is t's
// (Target.Repro) with o's seed, or ReplayCommand. Its error is a *TargetError naming t.
func NewRunner(ctx context.Context, t Target, o Options) (*sim.Runner, error) {
	ho := o.Options
	ho.Name = t.Name
	if t.NextVersion != nil {
		ho.NextVersion = t.NextVersion
	}
	repro := t.Repro
	if repro == nil {
		repro = func(seed uint64, s faults.Schedule) string { return ReplayCommand(t.Name, seed, s) }
	}
	ho.Repro = func(s faults.Schedule) string { return repro(o.Seed, s) }
	rn, err := sim.NewRunnerContext(ctx, t.New, ho)
	if err != nil {
		return nil, &TargetError{Target: t.Name, Err: err}
	}
	return rn, nil
}

// Listed is a case of a campaign before it runs, as List gives it.
type Listed struct {
	Target   string          `json:"target"`
	ID       string          `json:"id"`    // CaseID: what RunOptions.Only takes
	Index    int             `json:"index"` // its position in its target's campaign, as reports.Case.Index
	Schedule faults.Schedule `json:"schedule"`
}

// List records each target's golden run, as Run does (with Run's error for a target that
// cannot be recorded), and returns the cases the campaign would run (those of its shard), in
// campaign order, without running any: what a test runner collects before it runs some. When
// ctx is done it stops, as Run does.
func (c *Campaign) List(ctx context.Context) (iter.Seq[Listed], error) {
	o := c.Options.withDefaults()
	runners, err := c.runners(ctx, o)
	if err != nil {
		return nil, c.interrupted(ctx, err, 0, 0)
	}
	todo, _, err := c.plan(runners, o, nil, nil)
	if err != nil {
		return nil, c.interrupted(ctx, err, 0, 0)
	}
	return func(yield func(Listed) bool) {
		for i, seq := range todo {
			name := c.Targets[i].Name
			for k, s := range seq {
				if !yield(Listed{Target: name, ID: CaseID(name, s), Index: k, Schedule: s}) {
					return
				}
			}
		}
	}, nil
}

// interrupted returns err, or, if ctx is done, the error of a campaign interrupted after done of
// total cases (total 0: before its cases were counted).
func (c *Campaign) interrupted(ctx context.Context, err error, done, total int) error {
	if ctx.Err() == nil {
		return err
	}
	if total == 0 {
		return fmt.Errorf("%w before its cases started: %w", ErrInterrupted, context.Cause(ctx))
	}
	return fmt.Errorf("%w after %d of %d cases: %w", ErrInterrupted, done, total, context.Cause(ctx))
}

// Report returns the campaign's report of the given cases: in campaign order, summarised, with
// the golden runs' lengths by target name.
func (c *Campaign) Report(cases []reports.Case, golden map[string]int) *reports.Report {
	rep := &reports.Report{Schema: reports.Schema, Seed: c.Options.Seed, Options: c.Identity().Options(), Cases: cases}
	rep.SortCases()
	rep.Summarize(golden)
	return rep
}

// plan returns, per runner, the schedules of the campaign's shard still to run, with their
// indexes, and how many there are: of those, only the cases named in only if it is not empty.
// The journal resumed, if any, holds the cases already run: plan checks that they are cases of
// the campaign, at the same index, in the shard (they are not if the target changed since they
// were journaled). It draws every schedule once to check and count them; the sequences it
// returns draw them again as they run.
func (c *Campaign) plan(runners []*sim.Runner, o Options, resumed *JournalState, only []string) ([]iter.Seq2[int, faults.Schedule], int, error) {
	var done []entry
	if resumed != nil {
		done = resumed.entries
	}
	var chosen map[string]bool // the IDs of only, true once found
	if len(only) > 0 {
		chosen = make(map[string]bool, len(only))
		for _, id := range only {
			chosen[id] = false
		}
	}
	// runs reports whether the case of the named target at index k, under s, is to run.
	runs := func(name string, k int, s faults.Schedule) bool {
		if !o.Shard.Holds(k) {
			return false
		}
		if chosen == nil {
			return true
		}
		_, ok := chosen[CaseID(name, s)]
		return ok
	}
	todo := make([]iter.Seq2[int, faults.Schedule], len(runners))
	total, checked := 0, 0
	for i, rn := range runners {
		seq, err := scheduleSeq(rn, o, o.Shard.Holds) // the shard's own cases alone drawn in full
		if err != nil {
			return nil, 0, err
		}
		name := c.Targets[i].Name
		mine := doneOf(done, i)
		at := 0 // the first case done not checked yet
		for k, s := range seq {
			if s == nil {
				continue // another shard's
			}
			if at < len(mine) && int(mine[at].index) < k { // an index the campaign leaves unused
				return nil, 0, notOfCampaign(resumed, mine[at])
			}
			for ; at < len(mine) && int(mine[at].index) == k; at++ {
				if mine[at].hash != idHash(CaseID(name, s)) {
					return nil, 0, notOfCampaign(resumed, mine[at])
				}
				checked++
			}
			if runs(name, k, s) {
				if chosen != nil {
					chosen[CaseID(name, s)] = true
				}
				if at == 0 || int(mine[at-1].index) != k {
					total++
				}
			}
		}
		if at < len(mine) {
			return nil, 0, notOfCampaign(resumed, mine[at])
		}
		todo[i] = func(yield func(int, faults.Schedule) bool) {
			at := 0
			for k, s := range seq {
				if s == nil {
					continue
				}
				for ; at < len(mine) && int(mine[at].index) < k; at++ {
				}
				if runs(name, k, s) && (at == len(mine) || int(mine[at].index) != k) && !yield(k, s) {
					return
				}
			}
		}
	}
	for _, id := range only {
		if !chosen[id] {
			return nil, 0, fmt.Errorf("%w: %q", ErrNoSuchCase, id)
		}
	}
	if checked < len(done) { // a case of a target the campaign does not have
		for _, e := range done {
			if int(e.rank) >= len(runners) {
				return nil, 0, notOfCampaign(resumed, e)
			}
		}
	}
	return todo, total, nil
}

// doneOf returns the cases of done, in campaign order, of the target of the given rank.
func doneOf(done []entry, rank int) []entry {
	lo, _ := slices.BinarySearchFunc(done, rank, func(e entry, r int) int { return cmp.Compare(int(e.rank), r) })
	hi, _ := slices.BinarySearchFunc(done, rank+1, func(e entry, r int) int { return cmp.Compare(int(e.rank), r) })
	return done[lo:hi]
}

// notOfCampaign returns the error for a case of journal st that the campaign does not have.
func notOfCampaign(st *JournalState, e entry) error {
	id := "?"
	eachCase([]entry{e}, [2]caseFile{{st.fs, st.path}}, nil, func(c *reports.Case) error {
		id = c.ID
		return nil
	})
	return fmt.Errorf("the journal holds case %s (index %d), which this campaign does not have there: did the target change since the journal was written?", id, e.index)
}

// RestartText writes a restart policy (sim.Options.RestartFailed) as reports and the
// command line do: "" for always, "never", or the count.
func RestartText(policy int) string {
	switch {
	case policy == sim.RestartNever:
		return "never"
	case policy > 0:
		return strconv.Itoa(policy)
	}
	return ""
}

// parseRestart reads RestartText's form back; "always" is accepted too.
func parseRestart(text string) (int, error) {
	switch text {
	case "", "always":
		return sim.RestartAlways, nil
	case "never":
		return sim.RestartNever, nil
	}
	n, err := strconv.Atoi(text)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("restart policy %q: want always, never or a positive count", text)
	}
	return n, nil
}

// CaseID returns the ID of the case of the named target under schedule s: unique in a report.
func CaseID(target string, s faults.Schedule) string {
	return (&sim.Case{Target: target, Schedule: s}).ID()
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
	return startJournal(ro.FS, path, Header{Seed: c.Options.Seed, Options: c.Identity().Options()})
}

// recorder receives each case as it finishes: it journals it (or, without a journal, keeps it),
// counts it, and reports progress. Cases reach it from one goroutine at a time, and the campaign
// runs one target at a time.
type recorder struct {
	journal  *journalWriter
	rank     map[string]int // the campaign's targets, by name
	kept     []reports.Case // the cases, when there is no journal
	progress func(done, total, failed int)
	onCase   func(c *reports.Case)
	done     int
	total    int
	failed   int
}

// start sets the counts to those of the cases already done.
func (r *recorder) start(done []entry, total int) {
	r.done, r.total = len(done), total
	for _, e := range done {
		if e.fail {
			r.failed++
		}
	}
	if r.progress != nil {
		r.progress(r.done, r.total, r.failed)
	}
}

func (r *recorder) record(index int, hc *sim.Case) {
	c := ReportCase(hc, index)
	if r.journal != nil {
		r.journal.add(&c)
	} else {
		r.kept = append(r.kept, c)
	}
	if r.onCase != nil {
		r.onCase(&c)
	}
	r.done++
	if c.Verdict == oracle.Fail {
		r.failed++
	}
	if r.progress != nil {
		r.progress(r.done, r.total, r.failed)
	}
}

// source returns the cases of the campaign, in campaign order: those done before it resumed
// (done, in the journal ro resumes) and those it ran, read back from its journal or held in
// memory. The journal writer must be closed.
func (r *recorder) source(ro RunOptions, done []entry) func(fn func(*reports.Case) error) error {
	var entries []entry
	mem := r.kept
	var files [2]caseFile
	if w := r.journal; w != nil {
		entries = w.entries // in place: a second copy of a million entries is 32 MB more
		files[fromRun] = caseFile{ro.FS, w.j.path}
		mem = w.kept
	}
	if ro.Resume != nil {
		entries = append(entries, done...)
		files[fromJournal] = caseFile{ro.Resume.fs, ro.Resume.path}
	}
	for i := range mem {
		c := &mem[i]
		rank, ok := r.rank[c.Target]
		if !ok {
			rank = len(r.rank)
		}
		entries = append(entries, newEntry(c, rank, int64(i), 0, fromMemory))
	}
	sortEntries(entries)
	return func(fn func(*reports.Case) error) error { return eachCase(entries, files, mem, fn) }
}

// ReportCase returns case c, the index-th of its target's campaign, as a report holds it.
func ReportCase(c *sim.Case, index int) reports.Case {
	v := c.Verdict
	rc := reports.Case{
		Target:           c.Target,
		ID:               c.ID(),
		Index:            index,
		Schedule:         c.Schedule,
		Verdict:          v.Outcome,
		Violations:       v.Violations,
		Detected:         v.Detected,
		Refused:          v.Refused,
		Reason:           v.Reason,
		NotChecked:       v.NotChecked,
		Reference:        v.Reference,
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
		rc.Shrunk = c.Shrunk
		if c.Shrunk.String() != c.Schedule.String() {
			rc.ShrunkRepro = c.ShrunkRepro
		}
	}
	rc.Unfired = c.Unfired
	if v.Outcome != oracle.Pass || v.Detected != "" {
		for _, b := range c.Trace() {
			rc.Trace = append(rc.Trace, reports.TraceBeat(b))
		}
	}
	return rc
}
