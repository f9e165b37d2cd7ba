package oracle

import "fmt"

// work is the outcome of measuring the work a run lost to its faults.
type work struct {
	lost, resume int
	checked      bool     // the golden run made marks, so work can be measured
	over         []string // redone work beyond the slack
}

// measureWork measures, from progress marks, the golden work a run did again.
//
// The golden run's marks give positions: mark k at golden beat g[k], the work between mark k-1
// and mark k being g[k]-g[k-1] beats. Going through the run's marks in beat order, whatever
// worker made them, a mark already made is durable work done again: that is what
// bounded-work-lost forbids beyond the slack, for a restart (or a takeover) may redo only the
// work that was in flight. One repeat is not a redo: the mark of a process that a lease fault
// froze after its previous mark, made again after another process made it during the freeze,
// with no tool call of its own applied between its waking and that mark. That worker was frozen
// in the step, its effects already out, while another took the run over and did the step; it
// woke to finish writing it down, and has redone nothing durable. One whose call goes out after
// it wakes does the step again without the lease: that is work redone, and counts. Work lost adds that redone work to the work in flight when processes
// crashed: the beats each made after its last mark (a restarted process that crashes again
// before any mark only lost its recovery, and is not counted). Resume beats count, for each
// restarted process, its beats before its first mark.
func measureWork(golden, faulty *Observation, slack int) work {
	var w work
	if len(golden.Marks) == 0 {
		return w
	}
	w.checked = true
	gm := golden.Marks
	byLabel := golden.indexed().marks
	seg := func(k int) int { // golden beats of work that mark k declares
		if k == 0 {
			return gm[0].Beat + 1
		}
		return gm[k].Beat - gm[k-1].Beat
	}
	made := make([]bool, len(gm))
	madeAt := make([]int, len(gm)) // the beat at which mark k was first made; -1 in the prefix
	for k := range min(faulty.PrefixMarks, len(gm)) {
		made[k], madeAt[k] = true, -1
	}
	since := map[int]int{} // process -> the beat of its last mark so far
	redone := 0
	var first *Mark
	for i := range faulty.Marks {
		m := &faulty.Marks[i]
		last, marked := since[m.Process]
		since[m.Process] = m.Beat
		ords := byLabel[m.Label]
		if len(ords) == 0 {
			continue // a mark the golden run never made
		}
		k := ords[0] // the label's first occurrence not yet made; if all are, the first
		for _, o := range ords {
			if !made[o] {
				k = o
				break
			}
		}
		if !made[k] {
			made[k], madeAt[k] = true, m.Beat
			continue
		}
		if frozenBefore(faulty, m.Process, last, marked, madeAt[k]) {
			continue // in flight when its process froze: finished, not redone
		}
		if first == nil {
			first = m
		}
		redone += seg(k)
	}
	for _, a := range faulty.Processes {
		if a.Crashed && (a.Marks > 0 || a.First) {
			w.lost += a.SinceMark
		}
		if !a.First {
			w.resume += a.ToFirstMark
		}
	}
	w.lost += redone
	if redone > slack {
		w.over = append(w.over, fmt.Sprintf("%d beats of durable golden work were done again: %q was made again at beat %d (process %d), after it had been made", redone, first.Label, first.Beat, first.Process))
	}
	return w
}

// frozenBefore reports whether process p was frozen by a lease fault after its last mark (at
// beat last, if marked) and until after beat at, and applied no tool call between waking and its
// next mark.
func frozenBefore(o *Observation, p, last int, marked bool, at int) bool {
	if p >= len(o.Processes) {
		return false
	}
	for _, f := range o.Processes[p].Frozen {
		if (!marked || f.At > last) && f.At < at && f.Woke > at && !f.Acted {
			return true
		}
	}
	return false
}
