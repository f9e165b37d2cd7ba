package oracle

import (
	"cmp"
	"fmt"
	"slices"
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
// The bound: a restarted process may make again at most the turn that was in flight when its
// predecessor stopped, the last model call made for the first time before the restart and the
// tool calls made for the first time after it (plus slack). Without marks, the model call is the
// durable point an agent written the usual way resumes from: one that saves its conversation
// after each turn re-asks at most the turn in flight; one that starts again from zero re-asks
// every turn before it.
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

	seen := map[string]int{}    // identity -> made so far in the run
	earlier := map[string]int{} // identity -> made by the processes before the current one
	mine := map[string]int{}    // identity -> made by the current process
	cur, turn, bound, redone, firstAt := -1, 0, 0, 0, -1
	var first *Call
	flush := func() { // the current process ends: judge what it made again
		if redone > bound+slack {
			w.over = append(w.over, fmt.Sprintf("process %d made again %d calls that earlier processes had made (%s %q first, at beat %d), where the turn in flight at the restart held %d (the model call made last and its tool calls): a restart that starts over rather than resume from the last model call",
				first.Process, redone, kindOf(*first), first.Identity, first.Beat, bound))
		}
		for k, n := range mine {
			earlier[k] += n
		}
		clear(mine)
		redone, first, firstAt = 0, nil, -1
	}
	for i := range calls {
		c := &calls[i]
		if c.Process != cur {
			flush()
			cur, bound = c.Process, turn
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
		if c.Model {
			turn = 1
		} else {
			turn++
		}
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
