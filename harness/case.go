package harness

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
	// breaks the first property this case broke.
	Shrunk faults.Schedule
	// Unfired lists the faults that never fired: the run ended first.
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
}

// ID names the case uniquely in a campaign: the target and the schedule.
func (c *Case) ID() string { return c.Target + ":" + c.Schedule.String() }

// Breaks reports whether the case violated the named property.
func (c *Case) Breaks(property string) bool {
	for _, v := range c.Verdict.Violations {
		if v.Property == property {
			return true
		}
	}
	return false
}

// Failed reports whether the case's verdict is fail.
func (c *Case) Failed() bool { return c.Verdict.Outcome == oracle.Fail }

// traceContext is how many beats either side of a fault a trace shows.
const traceContext = 4

// TraceBeat is one beat of a case's run, as a trace shows it.
type TraceBeat struct {
	Beat    int
	Attempt int    // the process that made it
	Label   string // Beat.Label
	Fault   string // the fault that fired at it, in its text form
	Note    string // what happened there: what a crash did, how a process ended
}

// Trace returns the beats around each fault and each process end, with what happened there.
func (c *Case) Trace() []TraceBeat {
	keep := map[int]bool{}
	for i := range c.Beats {
		if c.Beats[i].Fault > 0 || c.Notes[i] != "" {
			for j := max(0, i-traceContext); j <= min(len(c.Beats)-1, i+traceContext); j++ {
				keep[j] = true
			}
		}
	}
	out := make([]TraceBeat, 0, len(keep))
	for _, i := range slices.Sorted(maps.Keys(keep)) {
		b := c.Beats[i]
		tb := TraceBeat{Beat: i, Attempt: b.Attempt, Label: b.Label(), Note: c.Notes[i]}
		if b.Fault > 0 {
			tb.Fault = c.Schedule[b.Fault-1].String()
		}
		out = append(out, tb)
	}
	return out
}

// String describes the case on one screen: what broke, the beats around the fault, and the
// command that replays it.
func (c *Case) String() string {
	var b strings.Builder
	v := c.Verdict
	fmt.Fprintf(&b, "%s under %s (seed %d): %s", c.Target, c.Schedule, c.Seed, v.Outcome)
	if v.Detected != "" {
		fmt.Fprintf(&b, " (stopped loudly: %s)", firstLine(v.Detected))
	}
	if v.Reason != "" {
		fmt.Fprintf(&b, " (%s)", v.Reason)
	}
	b.WriteByte('\n')
	for _, viol := range v.Violations {
		fmt.Fprintf(&b, "  violated %s: %s\n", viol.Property, indent(viol.Detail, "    "))
	}
	if tr := c.Trace(); len(tr) > 0 {
		b.WriteString("  beats around the fault:\n")
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
			fmt.Fprintf(&b, "  %s%5d  p%d  %s", mark, t.Beat, t.Attempt, t.Label)
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
