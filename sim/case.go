package sim

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/oracle"
)

// Case is the outcome of one schedule against one target.
type Case struct {
	Target   string
	Seed     uint64
	Schedule faults.Schedule
	Verdict  oracle.Verdict
	// Shrunk is, for a failure a campaign shrank, the smallest schedule found that still
	// breaks the first property this case broke, and ShrunkRepro the command that replays it
	// (Options.Repro of Shrunk).
	Shrunk      faults.Schedule
	ShrunkRepro string
	// Unfired lists the faults that never fired: the run ended before their beat, or their beat
	// does not admit their kind (Beat.Admits).
	Unfired []faults.Fault
	// Result is what the run's last process returned, and State the durable state read back
	// after the run (nil without a Stater, or if the run did not complete).
	Result, State any
	// Beats and Notes hold the faulty run's beats and what happened at some of them, for cases
	// that did not simply pass.
	Beats []Beat
	Notes map[int]string
	// Repro is the command that replays this case (Options.Repro); empty without one.
	Repro    string
	Duration time.Duration

	interrupted bool     // the Runner's context stopped the case (see Interrupted)
	workers     int      // the target's own workers (Options.Workers)
	o           *Options // the Runner's, for what its faults do (Options.graceful)
	unfiredWhy  string   // why the faults of Unfired did not fire
}

// Interrupted reports whether the case was stopped before it was decided, because its
// Runner's context was done (NewRunnerContext): its verdict is unknown, and says so, but it is
// not a result: a campaign journals no such case, and runs it again when it is resumed.
func (c *Case) Interrupted() bool { return c.interrupted }

// ID names the case uniquely in a campaign: the target and the schedule.
func (c *Case) ID() string { return c.Target + ":" + c.Schedule.String() }

// Breaks reports whether the case violated the named property.
func (c *Case) Breaks(property string) bool { return c.Verdict.Breaks(property) }

// Failed reports whether the case's verdict is fail.
func (c *Case) Failed() bool { return c.Verdict.Outcome == oracle.Fail }

// traceContext is how many beats either side of a fault, and of a process's end, a trace shows.
const traceContext = 4

// traceExplain is how many beats a trace shows at most for each kind of explanation beyond the
// faults and the ends: the calls of one tool whose effect was applied too often, the takeovers of
// a lease, the marks one process made again.
const traceExplain = 6

// TraceBeat is one beat of a case's run, as a trace shows it.
type TraceBeat struct {
	Beat    int
	Process int    // the process that made it
	Label   string // Beat.Label
	Fault   string // the fault that fired at it, in its text form
	Note    string // what happened there: what a crash did, how a process ended
}

// Trace returns the beats that explain the case, with what happened there: the beats around
// each fault and each process end; the first beat of each process ("process N starts"); the
// acquisitions by which a worker took a lease over from another; the tool calls behind a
// duplicated or phantom effect (oracle.Verdict.Excess: each call's sent and applied beats); the
// calls refused for a key used with other arguments, and the first call under that key;
// and, for bounded-work-lost, the marks a process made again, the first and the last of each
// process; and a fault fired after the run's end (power@end) as one beat more, after the last
// beats. Each kind of explanation keeps a few beats at most, so a trace stays short however
// long the run: about 9 beats per fault and per process, and a few dozen more.
func (c *Case) Trace() []TraceBeat {
	keep := map[int]bool{}
	notes := map[int]string{}
	var atEnd []faults.Fault
	if len(c.Beats) > 0 { // a case that kept its beats
		atEnd = c.firedAtEnd()
	}
	if len(atEnd) > 0 { // the last beats, before the power was cut after them
		for j := max(0, len(c.Beats)-traceContext); j < len(c.Beats); j++ {
			keep[j] = true
		}
	}
	for i := range c.Beats {
		if c.Beats[i].Fault > 0 || c.Notes[i] != "" {
			for j := max(0, i-traceContext); j <= min(len(c.Beats)-1, i+traceContext); j++ {
				keep[j] = true
			}
		}
	}
	extra := false
	for _, i := range c.processStarts() {
		keep[i] = true
		b := c.Beats[i]
		notes[i] = fmt.Sprintf("process %d starts", b.Process)
		if c.workers > 0 && b.Worker >= c.workers && !extra {
			extra = true
			notes[i] += fmt.Sprintf(" on worker %d, beyond the target's %d: a fleet fault's case runs more workers at once (sim.Options.FleetWorkers); a harness that runs as one instance leaves the fleet faults out", b.Worker, c.workers)
		}
	}
	for _, i := range c.takeovers() {
		keep[i] = true
	}
	for i, note := range c.effectCalls() {
		keep[i] = true
		if note != "" {
			notes[i] = note
		}
	}
	for i, note := range c.keyReuses() {
		keep[i] = true
		if note != "" {
			notes[i] = note
		}
	}
	if c.Breaks(oracle.BoundedWorkLost) {
		for i, note := range c.marksMadeAgain() {
			keep[i] = true
			notes[i] = note
		}
	}
	out := make([]TraceBeat, 0, len(keep))
	for _, i := range slices.Sorted(maps.Keys(keep)) {
		b := c.Beats[i]
		tb := TraceBeat{Beat: i, Process: b.Process, Label: b.Label(), Note: c.Notes[i]}
		if tb.Note == "" { // what the run noted comes first; the trace's own notes fill in
			tb.Note = notes[i]
		}
		if b.Fault > 0 {
			tb.Fault = c.Schedule[b.Fault-1].String()
		}
		out = append(out, tb)
	}
	for _, f := range atEnd {
		n := len(c.Beats)
		out = append(out, TraceBeat{Beat: n, Process: c.Beats[n-1].Process, Label: "the end: every process has exited", Fault: f.String(), Note: c.Notes[n]})
	}
	return out
}

// firedAtEnd returns the faults of the schedule that fired after the run's end (faults.End).
func (c *Case) firedAtEnd() []faults.Fault {
	var out []faults.Fault
	for _, f := range c.Schedule {
		if f.Beat == faults.End && !slices.Contains(c.Unfired, f) {
			out = append(out, f)
		}
	}
	return out
}

// processStarts returns the first beat of each process.
func (c *Case) processStarts() []int {
	var out []int
	seen := map[int]bool{}
	for i, b := range c.Beats {
		if !seen[b.Process] {
			seen[b.Process] = true
			out = append(out, i)
		}
	}
	return out
}

// takeovers returns the beats at which a worker acquired a lease that another worker held last,
// the first and the last few.
func (c *Case) takeovers() []int {
	var out []int
	holder := map[string]int{} // lease -> the worker that acquired it last
	for i, b := range c.Beats {
		if b.Kind != BeatLease || b.Key != "acquire" || b.Refused {
			continue
		}
		if last, ok := holder[b.Name]; ok && last != b.Worker {
			out = append(out, i)
		}
		holder[b.Name] = b.Worker
	}
	return ends(out, traceExplain)
}

// effectCalls returns the beats of the tool calls behind the duplicated and phantom effects of
// the verdict (Verdict.Excess), each call's sent beat and the beat at which it was applied,
// with a note on a call that applies an effect again; the first and the last few.
func (c *Case) effectCalls() map[int]string {
	out := map[int]string{}
	first := map[string]oracle.Effect{}
	var sent []int
	notes := map[int]string{}
	for _, e := range c.Verdict.Excess {
		if e.Beat < 0 || e.Beat >= len(c.Beats) {
			continue
		}
		sent = append(sent, e.Beat)
		if f, ok := first[e.Identity]; ok {
			notes[e.Beat] = fmt.Sprintf("applied again: first at beat %d (process %d)", f.Beat, f.Process)
		} else {
			first[e.Identity] = e
		}
	}
	for _, i := range ends(sent, traceExplain) {
		out[i] = notes[i]
		if j := c.applied(i); j >= 0 {
			out[j] = ""
		}
	}
	return out
}

// keyReuses returns the beats of the calls refused because their key had been used with other
// arguments (oracle.Verdict.KeyReuses), and of the first call under that key, with a note on the
// refused one; the first and the last few.
func (c *Case) keyReuses() map[int]string {
	out := map[int]string{}
	var at []int
	first := map[int]int{}
	for _, r := range c.Verdict.KeyReuses {
		if r.Beat >= 0 && r.Beat < len(c.Beats) {
			at = append(at, r.Beat)
			first[r.Beat] = r.FirstBeat
		}
	}
	for _, i := range ends(at, traceExplain) {
		out[i] = fmt.Sprintf("refused: key first used at beat %d with other arguments", first[i])
		if j := first[i]; j >= 0 && j < len(c.Beats) {
			if _, ok := out[j]; !ok {
				out[j] = ""
			}
		}
	}
	return out
}

// applied returns the beat at which the tool call sent at beat i was applied, or -1.
func (c *Case) applied(i int) int {
	s := c.Beats[i]
	for j := i + 1; j < len(c.Beats); j++ {
		b := c.Beats[j]
		if b.Process != s.Process {
			continue
		}
		if b.Kind == BeatToolApplied && b.Name == s.Name && b.Key == s.Key && b.Ref == "" {
			return j
		}
		if b.Kind == BeatToolSent && b.Name == s.Name && b.Key == s.Key {
			return -1 // sent again before it was applied: that one was not
		}
	}
	return -1
}

// marksMadeAgain returns the marks made again (a label is unique to its step, so a mark whose
// label was made before is durable work done again), the first and the last of each process, each
// with a note saying where it was first made. A mark at which a crash fired was not made.
func (c *Case) marksMadeAgain() map[int]string {
	made := map[string]int{} // label -> the beat it was first made at
	again := map[int][]int{} // process -> its marks made again
	var procs []int
	for i, b := range c.Beats {
		if b.Kind != BeatMark || b.Fault > 0 && stops(c.o, &c.Schedule[b.Fault-1]) {
			continue
		}
		if _, ok := made[b.Name]; !ok {
			made[b.Name] = i
			continue
		}
		if again[b.Process] == nil {
			procs = append(procs, b.Process)
		}
		again[b.Process] = append(again[b.Process], i)
	}
	out := map[int]string{}
	for _, p := range procs {
		for _, i := range ends(again[p], 2) {
			j := made[c.Beats[i].Name]
			out[i] = fmt.Sprintf("made again: first made at beat %d (process %d)", j, c.Beats[j].Process)
		}
	}
	return out
}

// ends returns the first and the last of list, n in all at most.
func ends(list []int, n int) []int {
	if len(list) <= n {
		return list
	}
	return append(slices.Clip(list[:(n+1)/2]), list[len(list)-n/2:]...)
}

// String describes the case on one screen: what broke, the beats that explain it (Trace), and
// the command that replays it. A case with no fault (a golden run replayed) says so.
func (c *Case) String() string {
	var b strings.Builder
	v := c.Verdict
	if len(c.Schedule) == 0 {
		fmt.Fprintf(&b, "%s with no fault (seed %d): %s", c.Target, c.Seed, v.Outcome)
	} else {
		fmt.Fprintf(&b, "%s under %s (seed %d): %s", c.Target, c.Schedule, c.Seed, v.Outcome)
	}
	if v.Detected != "" {
		fmt.Fprintf(&b, " (stopped loudly: %s)", firstLine(v.Detected))
	}
	if v.Reason != "" {
		fmt.Fprintf(&b, " (%s)", v.Reason)
	}
	b.WriteByte('\n')
	if v.Reference != "" {
		fmt.Fprintf(&b, "  judged against %s\n", v.Reference)
	}
	for _, viol := range v.Violations {
		fmt.Fprintf(&b, "  violated %s: %s\n", viol.Property, indent(viol.Detail, "    "))
	}
	if tr := c.Trace(); len(tr) > 0 {
		if slices.ContainsFunc(tr, func(t TraceBeat) bool { return t.Fault != "" }) {
			b.WriteString("  beats around the fault:\n")
		} else {
			b.WriteString("  beats (no fault fired):\n")
		}
		last := -1
		for _, t := range tr {
			if last >= 0 && t.Beat > last+1 {
				b.WriteString("         ...\n")
			}
			last = t.Beat
			mark := "   "
			if t.Fault != "" {
				mark = ">> "
			}
			fmt.Fprintf(&b, "  %s%5d  p%d  %s", mark, t.Beat, t.Process, t.Label)
			if t.Fault != "" {
				fmt.Fprintf(&b, "   <- %s", t.Fault)
			}
			if t.Note != "" {
				fmt.Fprintf(&b, "   [%s]", t.Note)
			}
			b.WriteByte('\n')
		}
	}
	if c.Shrunk != nil && c.Shrunk.String() != c.Schedule.String() {
		fmt.Fprintf(&b, "  shrunk to: %s\n", c.Shrunk)
	}
	if c.Repro != "" {
		fmt.Fprintf(&b, "  replay: %s\n", c.Repro)
	}
	return b.String()
}

func indent(s, prefix string) string {
	return strings.ReplaceAll(s, "\n", "\n"+prefix)
}

// unfiredWhy says why the faults fs did not fire in a run of beats beats, whose golden run has
// golden beats; label, if not nil, returns the label of a beat of the run, and ended, if not
// empty, says how the run ended.
func unfiredWhy(fs []faults.Fault, beats, golden int, label func(int) string, ended string) string {
	var parts []string
	for _, f := range fs {
		info, _ := f.Kind.Info()
		switch {
		case f.Beat == faults.End:
			why := fmt.Sprintf("%s did not fire: the run did not end with its last process exiting on its own", f)
			if ended != "" {
				why += " (it " + ended + ")"
			}
			parts = append(parts, why)
		case f.Beat >= beats:
			why := fmt.Sprintf("%s is past the run's end (it made %d beats; the golden run makes %d)", f, beats, golden)
			if info.AtEnd {
				at := f
				at.Beat = faults.End
				why += fmt.Sprintf("; to cut the power after the run's end, once its last process has exited, write %s", at)
			}
			parts = append(parts, why)
		case info.Family == faults.FleetFamily && f.Worker > 0:
			parts = append(parts, fmt.Sprintf("%s names a worker the run does not have", f))
		case label != nil:
			parts = append(parts, fmt.Sprintf("%s did not fire: it fires only at %s, and beat %d is %q", f, classWords[info.On], f.Beat, label(f.Beat)))
		default:
			parts = append(parts, fmt.Sprintf("%s did not fire: it fires only at %s, and beat %d is not one", f, classWords[info.On], f.Beat))
		}
	}
	return strings.Join(parts, "; ")
}

// classWords say which beats a class of fault fires at.
var classWords = map[faults.Class]string{
	faults.AnyBeat:       "any beat",
	faults.WriteBeat:     "a write",
	faults.SyncBeat:      "an fsync",
	faults.ToolBeat:      "a tool call",
	faults.ModelBeat:     "a model call",
	faults.AsyncToolBeat: "a call of an asynchronous tool",
}

// RequireAll makes the case unknown if any of its faults did not fire, naming them: for a
// schedule asked for explicitly (a replay), every fault of which is part of the question.
func (c *Case) RequireAll(goldenBeats int) {
	if len(c.Unfired) == 0 || c.Verdict.Outcome == oracle.Unknown {
		return
	}
	why := c.unfiredWhy
	if why == "" {
		why = unfiredWhy(c.Unfired, c.Verdict.Metrics.Beats, goldenBeats, nil, "")
	}
	c.Verdict.Outcome = oracle.Unknown
	c.Verdict.Reason = "not every fault fired: " + why
}
