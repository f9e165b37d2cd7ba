package oracle

import "fmt"

// work is the outcome of measuring the work a run lost to its crashes.
type work struct {
	lost, resume int
	checked      bool     // the golden run made marks, so work can be measured
	over         []string // restarts that redid more than the bound
}

// measureWork measures, from progress marks, how much golden work each restart did again.
//
// The golden run's marks give positions: mark i at golden beat g[i]. The run's progress F is the
// golden position it had reached; the first process's beats before its first fault are the
// golden prefix, so F starts there. A restarted process that first makes golden mark k resumed
// right after mark k-1: it redid F - (g[k-1]+1) beats of golden work. The bound is the work in
// flight, F - (g[M]+1) beats, where M is the last mark reached before the crash. A process that
// makes no golden mark before crashing again is charged to the next one.
func measureWork(golden, faulty *Observation, slack int) work {
	var w work
	if len(golden.Marks) == 0 || len(faulty.Attempts) == 0 {
		return w
	}
	w.checked = true
	gm := golden.Marks
	byLabel := map[string][]int{}
	for i, m := range gm {
		byLabel[m.Label] = append(byLabel[m.Label], i)
	}
	pos := func(o int) int { // golden position reached once mark o is made
		if o < 0 {
			return 0
		}
		return gm[o].Beat + 1
	}
	// next returns the golden position of the mark after o, the most a process can have reached
	// without making it.
	next := func(o int) int {
		if o+1 < len(gm) {
			return gm[o+1].Beat
		}
		return golden.Beats
	}

	progress, lastMark := 0, -1
	mi := 0 // index into faulty.Marks
	for ai, a := range faulty.Attempts {
		// The golden marks this process made, in order, with the beats it made them at.
		type made struct{ ord, beat int }
		var marks []made
		cur := -1
		for ; mi < len(faulty.Marks) && faulty.Marks[mi].Beat < a.End; mi++ {
			m := faulty.Marks[mi]
			for _, o := range byLabel[m.Label] {
				if o > cur {
					marks = append(marks, made{o, m.Beat})
					cur = o
					break
				}
			}
		}
		if ai == 0 {
			progress = a.End
			if a.Crashed {
				progress = a.End - 1 // the crash beat's operation never ran
			}
			if a.FirstFault >= 0 {
				progress = min(progress, a.FirstFault)
			}
			for lastMark+1 < len(gm) && gm[lastMark+1].Beat < progress {
				lastMark++
			}
			// Marks before the divergence are the golden prefix, already counted; marks after it
			// (a process that carried on past a fault) advance the progress below.
			for len(marks) > 0 && marks[0].beat < progress {
				marks = marks[1:]
			}
		} else if len(marks) > 0 {
			k := marks[0].ord
			lost := max(0, progress-pos(k-1))
			bound := progress - pos(lastMark)
			w.lost += lost
			if lost > bound+slack {
				back := "the start"
				if k > 0 {
					back = fmt.Sprintf("%q", gm[k-1].Label)
				}
				inflight := "no mark had been made"
				if lastMark >= 0 {
					inflight = fmt.Sprintf("the last mark, %q, was %d beats before it", gm[lastMark].Label, bound)
				}
				w.over = append(w.over, fmt.Sprintf("restart %d went back to %s and redid %d beats of golden work; when the run stopped at golden beat %d, %s", ai, back, lost, progress, inflight))
			}
		}
		if ai > 0 {
			w.resume += resumeBeats(a, progress, golden.Beats, faulty.Completed && ai == len(faulty.Attempts)-1, func() (beat, at int, ok bool) {
				for _, m := range marks {
					if pos(m.ord) >= progress {
						return m.beat, pos(m.ord), true
					}
				}
				return 0, 0, false
			})
		}
		// Advance the progress by what this process did.
		if len(marks) > 0 {
			last := marks[len(marks)-1]
			end := a.End
			if a.Crashed {
				end--
			}
			reached := min(pos(last.ord)+(end-last.beat-1), next(last.ord))
			progress = max(progress, reached)
			lastMark = max(lastMark, last.ord)
		}
	}
	return w
}

// resumeBeats counts the beats a restarted process spent getting back to the golden position
// the crash interrupted (progress): up to its first mark at or past that position, less the
// golden work it did beyond. A process that completed without such a mark spent what it did
// beyond the rest of the golden run; one that crashed again spent all its beats.
func resumeBeats(a Attempt, progress, goldenBeats int, completed bool, firstPast func() (beat, at int, ok bool)) int {
	if beat, at, ok := firstPast(); ok {
		return max(0, (beat+1-a.Start)-(at-progress))
	}
	if completed {
		return max(0, (a.End-a.Start)-(goldenBeats-progress))
	}
	return a.End - a.Start
}
