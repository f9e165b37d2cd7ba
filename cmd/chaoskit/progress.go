package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/chaoskit/chaoskit/sim"
)

// progressEvery is how often, at most, the progress bar is redrawn.
const progressEvery = 100 * time.Millisecond

// progressWidth is the width of the bar itself, in characters.
const progressWidth = 24

// progress draws a one-line progress bar, redrawn in place with a carriage return: cases done
// out of the total, failures so far, and an estimate of the time left; before the cases, how far
// each golden run has got. A nil *progress draws nothing, which is what a run whose stderr is not
// a terminal gets.
type progress struct {
	mu     sync.Mutex // golden runs report from their target's goroutine
	w      io.Writer
	now    func() time.Time
	begun  time.Time // when this process started on the cases
	first  int       // cases already done then (by an interrupted run that this one resumes)
	last   time.Time // when the bar was last drawn
	length int       // the length of the line last drawn, to blank what a shorter one leaves
}

func newProgress(w io.Writer, now func() time.Time) *progress { return &progress{w: w, now: now} }

// progress returns the progress bar of a command: on stderr when stderr is a terminal, else
// none (nil).
func (c *cli) progress() *progress {
	if !c.terminal {
		return nil
	}
	return newProgress(c.stderr, c.now)
}

// update draws the bar: the first time it is called, and then again unless it was drawn less
// than progressEvery ago and the campaign is not over. The cases done at the first call (by an
// interrupted run that this one resumes) do not count towards the pace.
func (p *progress) update(done, total, failed int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.begun.IsZero():
		p.begun, p.first = p.now(), done
	case done < total && p.now().Sub(p.last) < progressEvery:
		return
	}
	p.draw(done, total, failed)
}

// callback returns update as a campaign's progress callback, or nil for no bar.
func (p *progress) callback() func(done, total, failed int) {
	if p == nil {
		return nil
	}
	return p.update
}

// golden returns a sim.Options.OnGolden that draws how far each golden run has got, or nil
// for no bar.
func (p *progress) golden() func(sim.GoldenProgress) {
	if p == nil {
		return nil
	}
	return func(g sim.GoldenProgress) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.write(goldenLine(g))
	}
}

// goldenLine renders how far a golden run has got: its beats, of how many once known (else
// under which bound), and its virtual time.
func goldenLine(g sim.GoldenProgress) string {
	beats := fmt.Sprintf("%d beats (--max-beats %d)", g.Beats, g.MaxBeats)
	if g.Of > 0 {
		beats = fmt.Sprintf("%d of %d beats", g.Beats, g.Of)
	}
	return fmt.Sprintf("golden run %d of %s: %s, %s of virtual time", g.Run, g.Target, beats, g.Virtual.Round(time.Second))
}

// end ends the bar's line, leaving its last state on the screen.
func (p *progress) end() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.length > 0 {
		fmt.Fprintln(p.w)
		p.length = 0
	}
}

func (p *progress) draw(done, total, failed int) {
	p.last = p.now()
	p.write(progressLine(done, total, failed, p.first, p.last.Sub(p.begun)))
}

// write draws line over the one drawn last.
func (p *progress) write(line string) {
	pad := max(0, p.length-len(line))
	p.length = len(line)
	fmt.Fprintf(p.w, "\r%s%s", line, strings.Repeat(" ", pad))
}

// progressLine renders the bar: done of total cases, failed of them, and the time left,
// estimated from the pace of the cases done in elapsed since first were done.
func progressLine(done, total, failed, first int, elapsed time.Duration) string {
	filled := progressWidth
	if total > 0 {
		filled = progressWidth * done / total
	}
	bar := strings.Repeat("=", filled) + strings.Repeat(" ", progressWidth-filled)
	left := "estimating time left"
	switch {
	case done >= total:
		left = fmt.Sprintf("done in %s", roundDuration(elapsed))
	case done > first:
		eta := elapsed * time.Duration(total-done) / time.Duration(done-first)
		left = fmt.Sprintf("about %s left", roundDuration(eta))
	}
	return fmt.Sprintf("[%s] %d/%d cases, %d failed, %s", bar, done, total, failed, left)
}

// roundDuration rounds d to a tenth of a second under a minute, and to the second above.
func roundDuration(d time.Duration) time.Duration {
	if d < time.Minute {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}
