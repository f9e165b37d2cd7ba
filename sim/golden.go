package sim

import (
	"fmt"
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/internal/world"
)

// A golden run is made twice (Runner.record): first counted, keeping of its beats only how many
// there were and running hashes of them (a tally), so that a target that never ends costs no
// memory until it reaches a bound (harness.Options.MaxBeats, harness.Options.MaxVirtualTime); then, known to end,
// recorded in full. The two are compared through the tally's checkpoints; when those cannot
// name the first beat at which the runs part, a third run, counted, is compared with the
// recorded one beat by beat as it goes.

// BoundError is the error of a golden run that reached one of its bounds without finishing
// (harness.Options.MaxBeats or harness.Options.MaxVirtualTime): a harness that never ends, or one longer than the
// bounds, which must then be raised.
type BoundError struct {
	Target string
	// Bound names the bound reached: "MaxBeats" or "MaxVirtualTime".
	Bound string
	// MaxBeats and MaxVirtualTime are the bounds the run had.
	MaxBeats       int
	MaxVirtualTime time.Duration
	// Beats and Virtual are how far it got: the beats it made (MaxBeats, when that is the bound
	// it reached), the virtual time that passed.
	Beats   int
	Virtual time.Duration
}

func (e *BoundError) Error() string {
	limit, got := fmt.Sprint(e.MaxBeats, " beats"), "it had reached "+faults.FormatDuration(e.Virtual)+" of virtual time"
	if e.Bound == "MaxVirtualTime" {
		limit, got = faults.FormatDuration(e.MaxVirtualTime)+" of virtual time", fmt.Sprint("it had made ", e.Beats, " beats")
	}
	return fmt.Sprintf("%s: %s did not finish within %s (Options.%s; %s): a harness that never ends, or one that needs a higher bound",
		e.Target, errGolden, limit, e.Bound, got)
}

// Unwrap returns the error every failed golden run wraps.
func (e *BoundError) Unwrap() error { return errGolden }

// progressEvery is how often, at most, harness.Options.OnGolden is called, in wall-clock time.
const progressEvery = 200 * time.Millisecond

// maxPoints is how many checkpoints a tally keeps at most, the first headPoints of them at every
// one of the first beats, for good: a target that is not deterministic is most often so from its
// start (an id drawn from the wall clock).
const (
	maxPoints  = 128
	headPoints = 64
)

// tally is what a counted golden run keeps of its beats: their number and the running hash of
// their labels, and checkpoints of that hash: at each of the first headPoints beats, then at
// every beat, and each time maxPoints are kept, at every other one of those after the first
// headPoints, so that its memory does not grow with the run while a divergence early in it can
// still be named exactly.
type tally struct {
	beats  world.Sum
	points []point
	every  int    // the beats between two checkpoints
	last   string // the label of the last beat
	// against, for the third golden run, is the recorded run it is compared with as it goes;
	// diverged is the first beat at which it differs (-1: none so far), and label what it did
	// there ("": it had ended).
	against  []Beat
	diverged int
	label    string
}

// point is a checkpoint of a tally: the hash of the labels of beats 0 to beat, and beat's label.
type point struct {
	beat  int
	hash  uint64
	label string
}

func newTally(against []Beat) *tally { return &tally{every: 1, against: against, diverged: -1} }

// add adds a beat, with its final label (set once the next beat is made: a lease beat learns
// after it is made whether it was refused).
func (t *tally) add(b *Beat) {
	i, label := t.beats.N, b.Label()
	t.beats.Add(label)
	t.last = label
	if i%t.every == 0 {
		t.points = append(t.points, point{i, t.beats.Hash, label})
		if len(t.points) == maxPoints {
			kept := t.points[:headPoints]
			for j, p := range t.points[headPoints:] {
				if j%2 == 0 {
					kept = append(kept, p)
				}
			}
			clear(t.points[len(kept):])
			t.points, t.every = kept, 2*t.every
		}
	}
	if t.against != nil && t.diverged < 0 && (i >= len(t.against) || t.against[i].Label() != label) {
		t.diverged, t.label = i, label
	}
}

// end closes the tally of a run that ended: a third run that ended before the run it is compared
// with parts from it there.
func (t *tally) end() {
	if t.against != nil && t.diverged < 0 && t.beats.N < len(t.against) {
		t.diverged = t.beats.N
	}
}

// parting is where two golden runs part, for the error that refuses the target.
type parting struct {
	beat          int    // the first beat at which they differ
	first, second string // what each did there ("": it had ended)
	firstLen      int    // the beats of the first run, to say how far it went when its label is not known
	// between, when the beat is not known, is the last beat at which they agree for sure: they
	// part after it, at beat at the latest.
	between int
	window  bool
}

func (p parting) String() string {
	if p.window {
		return fmt.Sprintf("two golden runs diverge between beats %d and %d (a third run agreed with the second)", p.between+1, p.beat)
	}
	what := func(label string) string {
		if label == "" {
			return "had ended"
		}
		return fmt.Sprintf("did %q", label)
	}
	if p.first != "" && p.second != "" { // as oracle.CheckDeterministic says it
		return fmt.Sprintf("two golden runs diverge at beat %d: the first did %q, the second %q", p.beat, p.first, p.second)
	}
	first := "the first " + what(p.first)
	if p.first == "" && p.firstLen > p.beat {
		first = fmt.Sprintf("the first went on (%d beats in all)", p.firstLen)
	}
	return fmt.Sprintf("two golden runs diverge at beat %d: %s, the second %s", p.beat, first, what(p.second))
}

// part compares the counted run t with the recorded beats of another golden run. It returns
// false if they agree; else where they part: exactly when t's checkpoints tell, or a window.
func (t *tally) part(beats []Beat) (parting, bool) {
	pts := t.points
	if n := t.beats.N; n > 0 && (len(pts) == 0 || pts[len(pts)-1].beat != n-1) {
		pts = append(pts[:len(pts):len(pts)], point{n - 1, t.beats.Hash, t.last})
	}
	label := func(i int) string {
		if i < len(beats) {
			return beats[i].Label()
		}
		return ""
	}
	var s world.Sum
	agree := -1 // the last beat at which both agree for sure
	for _, p := range pts {
		if p.beat >= len(beats) {
			break
		}
		for s.N <= p.beat {
			s.Add(beats[s.N].Label())
		}
		if s.Hash != p.hash {
			if p.beat == agree+1 {
				return parting{beat: p.beat, first: p.label, second: label(p.beat)}, true
			}
			return parting{beat: p.beat, between: agree, window: true}, true
		}
		agree = p.beat
	}
	switch n := t.beats.N; {
	case n == len(beats):
		return parting{}, false
	case n < len(beats): // t's last beat agreed
		return parting{beat: n, second: label(n)}, true
	case agree == len(beats)-1: // the other ended where t went on
		return parting{beat: len(beats), firstLen: n}, true
	}
	return parting{beat: len(beats), between: agree, window: true}, true
}
