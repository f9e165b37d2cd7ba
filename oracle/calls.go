package oracle

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// measureCalls measures work lost from the calls a run made, for a target that makes no progress
// marks: the tool calls and model calls that a restarted process made again after its
// predecessor had made them.
//
// A call is made again when a process makes it (by its identity, Call.Identity) after earlier
// processes of the run had made it, and the run has by then made it more often than the golden
// run did. A call made more often within one process (an SDK that retries a model call a 503
// failed, a tool call retried under its key after an ambiguous reply) is a retry, not work lost;
// a call the earlier processes never made (an action after a diverging model's other answer) is
// new, not redone. Each remade call costs its beats: two for a tool call (sent, applied), one for
// a model call.
//
// The bound: a restarted process must not start over, that is, ask the model again the first
// model call of the run once the processes before it had gone past it (asked the model
// something else): redoing the first turn, when the crash came during it, is resuming. Without marks chaoskit cannot tell which of an agent's writes were its
// durable points, and an agent written the usual way resumes from wherever its framework lets
// it: the Agents SDK's RunState from the last approval pause, several turns back; a
// conversation saved after each turn from the last model call. So any resume passes, with what
// it made again counted as work lost, and only a restart from zero fails (slack aside: a
// WorkLostSlack of N lets N calls be made again before the first model call is). Marks give
// the precise rule.
//
// It measures nothing (checked false) for a golden run of several processes (workers) or
// without model calls: with tool calls alone, what a step is cannot be told.
func measureCalls(golden, faulty *Observation, slack int) work {
	var w work
	if len(golden.Processes) != 1 || !slices.ContainsFunc(golden.Calls, func(c Call) bool { return c.Model }) {
		return w
	}
	w.checked = true
	id := func(c Call) string {
		if c.Model {
			return "model " + c.Identity
		}
		return "tool " + c.Identity
	}
	want := map[string]int{}
	for _, c := range golden.Calls {
		want[id(c)]++
	}
	var calls []Call
	for _, c := range golden.Calls {
		if c.Beat < faulty.PrefixBeats {
			calls = append(calls, c)
		}
	}
	calls = append(calls, faulty.Calls...)
	slices.SortStableFunc(calls, func(a, b Call) int { return cmp.Compare(a.Beat, b.Beat) })

	var start string // the run's first model call: asking it again is starting over
	for _, c := range golden.Calls {
		if c.Model {
			start = id(c)
			break
		}
	}
	seen := map[string]int{}    // identity -> made so far in the run
	earlier := map[string]int{} // identity -> made by the processes before the current one
	mine := map[string]int{}    // identity -> made by the current process
	cur, redone, firstAt := -1, 0, -1
	over := false // the current process asked the run's first model call again, after the run had moved past it
	past := false // the processes before the current one asked the model something else than the first call
	var first *Call
	flush := func() { // the current process ends: judge what it made again
		if over && redone > slack {
			w.over = append(w.over, fmt.Sprintf("process %d started over: it made again %d calls that earlier processes had made, the run's first model call among them (%s %q first, at beat %d), rather than resume from what they had done",
				first.Process, redone, kindOf(*first), first.Identity, first.Beat))
		}
		for k, n := range mine {
			earlier[k] += n
			past = past || strings.HasPrefix(k, "model ") && k != start
		}
		clear(mine)
		redone, first, firstAt, over = 0, nil, -1, false
	}
	for i := range calls {
		c := &calls[i]
		if c.Process != cur {
			flush()
			cur = c.Process
			firstAt = c.Beat
		}
		k := id(*c)
		seen[k]++
		mine[k]++
		if seen[k] > want[k] && mine[k] <= earlier[k] && c.Process < len(faulty.Processes) && !faulty.Processes[c.Process].First {
			redone++
			if first == nil {
				first = c
			}
			over = over || k == start && past
			if c.Model {
				w.lost++
			} else {
				w.lost += 2
			}
			continue
		}
		if firstAt >= 0 && c.Process < len(faulty.Processes) && !faulty.Processes[c.Process].First {
			w.resume += c.Beat - firstAt // from its first call to its first new one
		}
		firstAt = -1
	}
	flush()
	return w
}

// kindOf names a call's kind in a few words.
func kindOf(c Call) string {
	if c.Model {
		return "model call"
	}
	return "tool call"
}
