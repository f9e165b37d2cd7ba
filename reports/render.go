package reports

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/oracle"
)

// This file holds what the renderers (Markdown, JUnit, HTML) share: how a report is grouped by
// target, which cases are shown and in what order, how a case is summed up in one line, and the
// columns of the summary tables.

// targetView is one target's summary together with the first of its problem cases.
type targetView struct {
	TargetSummary
	// Problems are the first of the target's failed cases, then of its unknown ones, in the
	// order problems gives, as many as the view shows.
	Problems []*Case
	problems problemList
	// whys counts the target's cases by a property they could not check and why not.
	whys map[string]map[string]int
	// The target's cases as they are, whatever its summary says: for JUnit.
	tests, failures, errors int
	ms                      float64 // their wall-clock times, summed
}

// view is what the renderers show of a report, gathered in one pass over its cases, so that
// a report of any size renders in memory that depends on its targets and fault kinds, not on
// its cases.
type view struct {
	targets   []*targetView // in the order of the summary, then of first appearance
	kinds     []string      // the options' fault kinds, then any other kind found, sorted
	byKind    []kindStats   // over every target, in the order of kinds
	totals    Stats         // over every case
	workLost  map[int]int   // cases by the work they lost, in beats
	dupByTool map[string]int
	caseMs    float64 // the cases' wall-clock times, summed
	grouped   bool    // the cases come grouped by target, in the order of targets
	// deploys says the report has cases of a deploy of a next version (upgrade): its tables then
	// count those marked stranded, duplicated and replanned.
	deploys bool
}

// view reads r's cases once and returns what the renderers show, keeping up to shown problem
// cases per target. A target the summary lacks (all of them when r was never summarised) gets a
// summary computed from its cases.
func (r *Report) view(shown int) (*view, error) {
	v := &view{workLost: map[int]int{}, dupByTool: map[string]int{}, grouped: true}
	index := map[string]*targetView{}
	rank := map[*targetView]int{} // a target's place in v.targets
	last := 0                     // the rank of the previous case's target
	computed := map[string]bool{}
	for _, t := range r.Summary.Targets {
		tv := &targetView{TargetSummary: t}
		v.targets = append(v.targets, tv)
		index[t.Target] = tv
	}
	kinds := map[string]*Stats{}
	var extra []string
	for _, k := range r.Options.Faults {
		kinds[k] = &Stats{}
	}
	err := r.Each(func(c *Case) error {
		t := index[c.Target]
		if t == nil {
			t = &targetView{TargetSummary: TargetSummary{Target: c.Target, ByFault: map[string]Stats{}}}
			v.targets = append(v.targets, t)
			index[c.Target], computed[c.Target] = t, true
		}
		if computed[c.Target] {
			t.add(c)
		}
		i, ok := rank[t]
		if !ok {
			i = slices.Index(v.targets, t)
			rank[t] = i
		}
		v.grouped = v.grouped && i >= last
		last = i
		t.tests++
		switch c.Verdict {
		case oracle.Pass:
		case oracle.Fail:
			t.failures++
		default:
			t.errors++
		}
		t.ms += c.DurationMs
		if shown > 0 {
			t.problems.add(c, shown)
		}
		for _, n := range c.NotChecked {
			p, why, _ := strings.Cut(n, ":")
			if t.whys == nil {
				t.whys = map[string]map[string]int{}
			}
			if t.whys[p] == nil {
				t.whys[p] = map[string]int{}
			}
			t.whys[p][strings.TrimSpace(why)]++
		}
		for _, k := range c.Kinds() {
			s := kinds[k]
			if s == nil {
				s = &Stats{}
				kinds[k] = s
				extra = append(extra, k)
			}
			s.Add(c)
		}
		v.totals.Add(c)
		if !c.WorkLostUnmeasured {
			v.workLost[c.WorkLostBeats]++
		}
		for tool, n := range c.DuplicatesByTool {
			v.dupByTool[tool] += n
		}
		v.caseMs += c.DurationMs
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, t := range v.targets {
		t.Problems = t.problems.list(shown)
	}
	slices.Sort(extra)
	v.kinds = append(slices.Clone(r.Options.Faults), extra...)
	for _, k := range v.kinds {
		v.byKind = append(v.byKind, kindStats{Kind: k, Stats: *kinds[k]})
		info, _ := faults.Kind(k).Info()
		v.deploys = v.deploys || info.NextVersion && kinds[k].Cases > 0
	}
	return v, nil
}

// summaries returns r.Summary.Targets, followed by a summary computed from the cases of every
// target it lacks (all of them when r was never summarised), and r's fault kinds (see view). A
// report whose cases come from a Source is summarised by whoever made it: its summary and
// options alone say it all, and its cases are not read.
func (r *Report) summaries() ([]TargetSummary, []string) {
	if r.Source != nil {
		kinds := slices.Clone(r.Options.Faults)
		var extra []string
		for _, t := range r.Summary.Targets {
			for k := range t.ByFault {
				if !slices.Contains(kinds, k) && !slices.Contains(extra, k) {
					extra = append(extra, k)
				}
			}
		}
		slices.Sort(extra)
		return r.Summary.Targets, append(kinds, extra...)
	}
	v, _ := r.view(0) // cases in memory: no error
	out := make([]TargetSummary, len(v.targets))
	for i, t := range v.targets {
		out[i] = t.TargetSummary
	}
	return out, v.kinds
}

// problemList gathers the cases that did not pass in the order a reader should see them:
// failures before unknown cases, and, among each, the first case of every kind of problem (its
// fault kinds and first violated property) before the cases that repeat one, each group in run
// order. A list cut short after a few cases thus shows as many different problems as it can.
type problemList struct {
	groups [4][]*Case // first failures of their kind, repeats, and the same for unknowns
	seen   map[string]bool
}

// add takes c into the list, keeping no more than shown cases of any group.
func (l *problemList) add(c *Case, shown int) {
	if c.Verdict == oracle.Pass {
		return
	}
	g := 0
	if c.Verdict != oracle.Fail {
		g += 2
	}
	sig := signature(c)
	if l.seen[sig] {
		g++
	}
	if l.seen == nil {
		l.seen = map[string]bool{}
	}
	l.seen[sig] = true
	if len(l.groups[g]) < shown {
		l.groups[g] = append(l.groups[g], c)
	}
}

// list returns the first shown cases of the list.
func (l *problemList) list(shown int) []*Case {
	var out []*Case
	for _, g := range l.groups {
		out = append(out, g[:min(len(g), shown-len(out))]...)
	}
	return out
}

// problems returns the cases of cases that did not pass, in the order of problemList.
func problems(cases []*Case) []*Case {
	var l problemList
	for _, c := range cases {
		l.add(c, len(cases))
	}
	return l.list(len(cases))
}

// signature names the kind of problem c shows: its verdict, fault kinds and first property.
func signature(c *Case) string {
	sig := string(c.Verdict) + " " + strings.Join(c.Kinds(), ",")
	if len(c.Violations) > 0 {
		sig += " " + c.Violations[0].Property
	}
	return sig
}

// kindStats totals the cases, over every target, whose schedule has one fault kind.
type kindStats struct {
	Kind string
	Stats
}

// gistRunes is about as many runes as gist joins after a first line that ends with a colon.
const gistRunes = 160

// gist sums s up on one line: its first non-blank line, trimmed, and, when that line ends with a
// colon (what follows is what it announces: a diff, a list), the lines after it, trimmed and
// joined with "; ", as many as fit in about gistRunes runes (the first of them always), then
// how many it left out. It cuts no line short.
func gist(s string) string {
	var lines []string
	for line := range strings.Lines(s) {
		if line = strings.TrimSpace(line); line != "" {
			lines = append(lines, line)
		}
	}
	if len(lines) == 0 {
		return ""
	}
	out := lines[0]
	if !strings.HasSuffix(out, ":") {
		return out
	}
	i, n := 1, 0
	for ; i < len(lines); i++ {
		sep := "; "
		if i == 1 {
			sep = " "
		}
		r := len(sep) + utf8.RuneCountInString(lines[i])
		if i > 1 && n+r > gistRunes {
			break
		}
		out, n = out+sep+lines[i], n+r
	}
	if left := len(lines) - i; left > 0 {
		out += "; and " + Count(left, "more line")
	}
	return out
}

// clip shortens s to at most n runes, marking a cut with an ellipsis.
func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// oneLine sums v up on one line: its property and the gist of its detail.
func oneLine(v oracle.Violation) string {
	if d := gist(v.Detail); d != "" {
		return v.Property + ": " + d
	}
	return v.Property
}

// Headline sums up on one line, cutting no line short, why c did not pass: its first violation
// (and how many others it has), or why it is unknown. A detail whose first line announces what
// follows it ("the state differs (-golden +faulty):") is followed by the first lines it
// announces.
func (c *Case) Headline() string { return headline(c) }

// headline is Case.Headline.
func headline(c *Case) string {
	switch {
	case c.Verdict == oracle.Unknown:
		return "unknown: " + cmp.Or(gist(c.Reason), "no reason given")
	case len(c.Violations) == 0:
		return string(c.Verdict)
	case len(c.Violations) == 1:
		return oneLine(c.Violations[0])
	default:
		return fmt.Sprintf("%s (+%d more)", oneLine(c.Violations[0]), len(c.Violations)-1)
	}
}

// moreNotShown says how many cases a list left out, or nothing when it left none out.
func moreNotShown(total, shown int) string {
	if total <= shown {
		return ""
	}
	return fmt.Sprintf("… and %d more", total-shown)
}

// countsByName lists a map of counts as "a ×2, b ×1", by name.
func countsByName(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s ×%d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// seconds formats a duration in milliseconds as seconds with three decimals.
func seconds(ms float64) string { return strconv.FormatFloat(ms/1000, 'f', 3, 64) }

// column is one column of a summary table: a row is a name (a target or a fault kind) and the
// totals of its cases.
type column struct {
	Head    string
	Numeric bool
	cell    func(name string, s *Stats) string
}

func countColumn(head string, n func(s *Stats) int) column {
	return column{Head: head, Numeric: true, cell: func(_ string, s *Stats) string { return strconv.Itoa(n(s)) }}
}

var (
	colCases      = countColumn("cases", func(s *Stats) int { return s.Cases })
	colPassed     = countColumn("passed", func(s *Stats) int { return s.Passed })
	colFailed     = countColumn("failed", func(s *Stats) int { return s.Failed })
	colUnknown    = countColumn("unknown", func(s *Stats) int { return s.Unknown })
	colDetected   = countColumn("detected", func(s *Stats) int { return s.Detected })
	colDuplicates = countColumn("duplicates", func(s *Stats) int { return s.Duplicates })
	colLost       = countColumn("lost effects", func(s *Stats) int { return s.LostEffects })
	colPhantom    = countColumn("phantom effects", func(s *Stats) int { return s.PhantomEffects })
	colMismatches = countColumn("state mismatches", func(s *Stats) int { return s.StateMismatches })
	colWorkLost   = column{Head: "mean work lost (beats)", Numeric: true, cell: func(_ string, s *Stats) string {
		if !s.WorkLostMeasured() {
			return notMeasured
		}
		return strconv.FormatFloat(s.WorkLostBeatsMean, 'f', 2, 64)
	}}
	colProperties = column{Head: "properties violated", cell: func(_ string, s *Stats) string {
		return cmp.Or(countsByName(s.Violations), "—")
	}}
)

// notMeasured is what a rendering shows for work lost that was not measured.
const notMeasured = "not measured"

func nameColumn(head string) column {
	return column{Head: head, cell: func(name string, _ *Stats) string { return name }}
}

// targetColumns are the columns of the table with a row per target, in a report of no
// upgrade case and no model call asked again (see view.columns).
var targetColumns = []column{nameColumn("target"), colCases, colPassed, colFailed, colUnknown, colDetected,
	colDuplicates, colLost, colPhantom, colMismatches, colWorkLost, colProperties}

// kindColumns are the columns of the compact table with a row per fault kind, likewise.
var kindColumns = []column{nameColumn("fault kind"), colCases, colFailed, colUnknown, colDetected,
	colDuplicates, colLost, colMismatches, colWorkLost}

// remadeColumn counts the model calls asked again after restarts: work lost in tokens, measured
// with progress marks or without.
var remadeColumn = countColumn("model calls asked again", func(s *Stats) int { return s.ModelCallsRemade })

// deployColumns count the cases of a deploy of a next version marked stranded, duplicated and
// replanned (oracle.Stranded ...), under the names a gate gives them.
var deployColumns = []column{
	countColumn(oracle.Stranded, func(s *Stats) int { return s.Stranded }),
	countColumn(oracle.Duplicated, func(s *Stats) int { return s.Duplicated }),
	countColumn(oracle.Replanned, func(s *Stats) int { return s.Replanned }),
}

// columns returns base, the columns of a summary table, with the columns of what v's report holds
// inserted after its work lost: the model calls asked again when a case asked one again, and the
// marks of upgrade cases when it has some. A report of neither keeps base as it is.
func (v *view) columns(base []column) []column {
	var extra []column
	if v.totals.ModelCallsRemade > 0 {
		extra = append(extra, remadeColumn)
	}
	if v.deploys {
		extra = append(extra, deployColumns...)
	}
	at := slices.IndexFunc(base, func(c column) bool { return c.Head == colWorkLost.Head }) + 1
	return slices.Concat(base[:at], extra, base[at:])
}

// table is a summary table, its cells already formatted.
type table struct {
	Columns []column
	Rows    [][]string
}

func (t *table) add(name string, s *Stats) {
	row := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		row[i] = c.cell(name, s)
	}
	t.Rows = append(t.Rows, row)
}

// targetTable returns the table with a row per target.
func (v *view) targetTable() table {
	t := table{Columns: v.columns(targetColumns)}
	for _, tv := range v.targets {
		t.add(tv.Target, &tv.Stats)
	}
	return t
}

// kindTable returns the table with a row per fault kind.
func (v *view) kindTable() table {
	t := table{Columns: v.columns(kindColumns)}
	for i := range v.byKind {
		t.add(v.byKind[i].Kind, &v.byKind[i].Stats)
	}
	return t
}

// deployMarks says what went wrong in c, an upgrade case, in a team's words, each with what it
// means: "stranded (the new version could not read the old version's checkpoint: it failed or
// started over)"; "" for a case with no mark.
func deployMarks(c *Case) string {
	var marks []string
	for _, m := range []struct {
		on         bool
		name, what string
	}{
		{c.Stranded, oracle.Stranded, "the new version could not read the old version's checkpoint: it failed or started over"},
		{c.Duplicated, oracle.Duplicated, "the new version redid effects the old version had applied"},
		{c.Replanned, oracle.Replanned, "the run took another path than a run of either version"},
	} {
		if m.on {
			marks = append(marks, m.name+" ("+m.what+")")
		}
	}
	return strings.Join(marks, ", ")
}

// campaignLine describes how r was run, on one line.
func (r *Report) campaignLine() string {
	parts := []string{fmt.Sprintf("seed %d", r.Seed), "mode " + cmp.Or(r.Options.Mode, "unknown")}
	if r.Options.Cases > 0 {
		parts = append(parts, r.casesLine())
	}
	if len(r.Options.Faults) > 0 {
		parts = append(parts, "faults "+strings.Join(r.Options.Faults, ", "))
	}
	if r.Options.Shard != "" {
		parts = append(parts, "shard "+r.Options.Shard)
	}
	if r.Options.Only > 0 {
		parts = append(parts, fmt.Sprintf("only the %s selected (chaoskit run --only), not the whole campaign", Count(r.Options.Only, "case")))
	}
	return strings.Join(parts, " · ")
}

// casesLine says how many schedules per target a campaign with Options.Cases set ran: in
// random mode, that many; in exhaustive mode, that many at most, out of how many each target's
// whole list holds when the cap sampled it (TargetSummary.Schedules).
func (r *Report) casesLine() string {
	n := r.Options.Cases
	if r.Options.Mode != "exhaustive" {
		return Count(n, "schedule") + " per target"
	}
	var of []string
	for _, t := range r.Summary.Targets {
		if t.Schedules > 0 && !slices.Contains(of, strconv.Itoa(t.Schedules)) {
			of = append(of, strconv.Itoa(t.Schedules))
		}
	}
	switch {
	case len(of) == 0:
		return fmt.Sprintf("at most %s per target", Count(n, "schedule"))
	case len(of) == 1 && len(r.Summary.Targets) == 1:
		return fmt.Sprintf("%d of %s, sampled evenly", n, Count(r.Summary.Targets[0].Schedules, "schedule"))
	case len(of) == 1:
		return fmt.Sprintf("%d of %s per target, sampled evenly", n, Count(r.Summary.Targets[0].Schedules, "schedule"))
	}
	last := len(of) - 1
	return fmt.Sprintf("at most %s per target, sampled evenly from lists of %s and %s", Count(n, "schedule"), strings.Join(of[:last], ", "), of[last])
}

// totalsLine sums up the verdicts of s, the totals over targets, on one line.
func totalsLine(s *Stats, targets int) string {
	return fmt.Sprintf("%s over %s: %d passed (%d detected), %d failed, %d unknown",
		Count(s.Cases, "case"), Count(targets, "target"), s.Passed, s.Detected, s.Failed, s.Unknown)
}

// failedLine is the headline of a report: "7 cases failed across 1 target". It is worded
// neutrally unless the report names the targets meant to fail (Options.ExpectFail, as the
// demo's variants are), whose failures it then counts apart from the others': "3273 cases failed
// across 13 of 14 targets, all of them in the 13 targets meant to fail (each carries a bug on
// purpose); the other target, meant to pass, failed none".
func failedLine(s *Stats, targets []*targetView, expectFail []string) string {
	failing := 0
	var meant, others, inMeant, inOthers, meantFailing int // targets, and their failed cases
	for _, t := range targets {
		if t.Failed > 0 {
			failing++
		}
		if slices.Contains(expectFail, t.Target) {
			meant, inMeant = meant+1, inMeant+t.Failed
			if t.Failed > 0 {
				meantFailing++
			}
		} else {
			others, inOthers = others+1, inOthers+t.Failed
		}
	}
	var line string
	switch {
	case s.Cases == 0:
		return "no case ran"
	case s.Failed == 0:
		line = fmt.Sprintf("no case failed across %s", Count(len(targets), "target"))
	case failing == len(targets):
		line = fmt.Sprintf("%s failed across %s", Count(s.Failed, "case"), Count(failing, "target"))
	default:
		line = fmt.Sprintf("%s failed across %d of %s", Count(s.Failed, "case"), failing, Count(len(targets), "target"))
	}
	if meant > 0 {
		switch {
		case s.Failed == 0:
		case inOthers == 0:
			line += fmt.Sprintf(", all of them in the %s meant to fail (each carries a bug on purpose)", Count(meant, "target"))
		default:
			line += fmt.Sprintf(", %d of them in the %s meant to fail (each carries a bug on purpose) and %d in targets meant to pass", inMeant, Count(meant, "target"), inOthers)
		}
		switch {
		case inOthers == 0 && others == 1:
			line += "; the other target, meant to pass, failed none"
		case inOthers == 0 && others > 1:
			line += fmt.Sprintf("; the %d other targets, meant to pass, failed none", others)
		}
		if missed := meant - meantFailing; missed > 0 {
			line += fmt.Sprintf("; %d of the %s meant to fail failed no case", missed, Count(meant, "target"))
		}
	}
	if s.Unknown > 0 {
		line += fmt.Sprintf("; %d could not be decided", s.Unknown)
	}
	return line
}

// verdictLine sums up a target's verdicts on one line: "all 1513 cases passed", or "498 of 1082
// cases failed: bounded-work-lost ×377, ...", and how many are unknown.
func verdictLine(s *Stats) string {
	var line string
	switch {
	case s.Cases == 0:
		return "no case ran"
	case s.Passed == s.Cases && s.Cases == 1:
		return "its one case passed"
	case s.Passed == s.Cases:
		return fmt.Sprintf("all %d cases passed", s.Cases)
	case s.Failed == 0:
		line = fmt.Sprintf("no case of %d failed", s.Cases)
	default:
		line = fmt.Sprintf("%d of %s failed", s.Failed, Count(s.Cases, "case"))
		if len(s.Violations) > 0 {
			line += " (" + countsByName(s.Violations) + ")"
		}
	}
	if s.Unknown > 0 {
		line += fmt.Sprintf("; %d unknown", s.Unknown)
	}
	return line
}

// targetNotes lists what a reader of a target's verdicts must know besides: the properties that
// could not be checked in some cases, in how many and why (from the cases' not_checked), those
// with the same count and reasons together; the cases with a fault that never fired; those that
// passed by refusing to go on; and the processes that failed on their own. It is empty when
// there is nothing to say.
func targetNotes(t *targetView) []string {
	whys := t.whys // property -> why -> cases
	var notes []string
	var order []string             // the ends of the notes on properties not checked, in order
	props := map[string][]string{} // such an end -> the properties it is about
	for _, p := range slices.Sorted(maps.Keys(t.NotChecked)) {
		end := fmt.Sprintf(" not checked in %d of %s", t.NotChecked[p], Count(t.Stats.Cases, "case"))
		byCount := slices.SortedFunc(maps.Keys(whys[p]), func(a, b string) int {
			return cmp.Or(cmp.Compare(whys[p][b], whys[p][a]), cmp.Compare(a, b))
		})
		switch {
		case len(byCount) == 1 && byCount[0] != "":
			end += ": " + byCount[0]
		case len(byCount) > 1:
			var parts []string
			for _, why := range byCount {
				parts = append(parts, fmt.Sprintf("%s (%d)", cmp.Or(why, "no reason given"), whys[p][why]))
			}
			end += ": " + strings.Join(parts, ", ")
		}
		if props[end] == nil {
			order = append(order, end)
		}
		props[end] = append(props[end], p)
	}
	for _, end := range order {
		notes = append(notes, strings.Join(props[end], ", ")+end)
	}
	if t.Unfired > 0 {
		notes = append(notes, Count(t.Unfired, "case")+" had a fault that never fired (judged on the faults that fired)")
	}
	if t.Refused > 0 {
		notes = append(notes, Count(t.Refused, "case")+" passed by refusing to go on without a person ("+RefusalCaveat+": --gate refused==0 fails them)")
	}
	if t.FailedProcesses > 0 {
		notes = append(notes, Count(t.FailedProcesses, "process")+" ended on their own with an error or a panic")
	}
	return notes
}

// Count writes n with its noun in the right number: "1 target", "2 targets", "2 processes",
// "3 properties".
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	switch {
	case strings.HasSuffix(noun, "s"), strings.HasSuffix(noun, "x"), strings.HasSuffix(noun, "ch"), strings.HasSuffix(noun, "sh"):
		noun += "es"
	case strings.HasSuffix(noun, "y") && len(noun) > 1 && !strings.ContainsRune("aeiou", rune(noun[len(noun)-2])):
		noun = noun[:len(noun)-1] + "ies"
	default:
		noun += "s"
	}
	return strconv.Itoa(n) + " " + noun
}

// shrunk returns c's shrunk schedule when it differs from its schedule, or "".
func shrunk(c *Case) string {
	if len(c.Shrunk) == 0 || c.Shrunk.String() == c.Schedule.String() {
		return ""
	}
	return c.Shrunk.String()
}

// shrunkRepro returns the command that replays c's shrunk schedule, or "" when c has no shrunk
// schedule of its own (or no command for it).
func shrunkRepro(c *Case) string {
	if shrunk(c) == "" {
		return ""
	}
	return c.ShrunkRepro
}

// problemsLine counts what a target's problem list holds, e.g. "58 failed, 2 unknown".
func problemsLine(s *Stats) string {
	if s.Unknown == 0 {
		return fmt.Sprintf("%d failed", s.Failed)
	}
	return fmt.Sprintf("%d failed, %d unknown", s.Failed, s.Unknown)
}

// firstProperty names the first property c broke, the one its shrunk schedule still breaks.
func firstProperty(c *Case) string {
	if len(c.Violations) == 0 {
		return "a property"
	}
	return c.Violations[0].Property
}

// RefusalCaveat is what a pass by refusal may hide, as every rendering of one says it.
const RefusalCaveat = "a refusal where no tool call was in doubt, after a power cut or a torn write, usually hides durable state the harness lost"
