package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/sim"
)

// fakeClock is a clock that moves only when told to.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func TestProgressLine(t *testing.T) {
	for _, tc := range []struct {
		done, total, failed, first int
		elapsed                    time.Duration
		want                       string
	}{
		{0, 200, 0, 0, 0, "[                        ] 0/200 cases, 0 failed, estimating time left"},
		{50, 200, 3, 0, 10 * time.Second, "[======                  ] 50/200 cases, 3 failed, about 30s left"},
		{150, 200, 7, 100, 5 * time.Second, "[==================      ] 150/200 cases, 7 failed, about 5s left"},
		{1, 1000, 0, 0, 2 * time.Second, "[                        ] 1/1000 cases, 0 failed, about 33m18s left"},
		{200, 200, 9, 0, 1234 * time.Millisecond, "[========================] 200/200 cases, 9 failed, done in 1.2s"},
		{0, 0, 0, 0, 0, "[========================] 0/0 cases, 0 failed, done in 0s"},
	} {
		if got := progressLine(tc.done, tc.total, tc.failed, tc.first, tc.elapsed); got != tc.want {
			t.Errorf("progressLine(%d, %d, %d, %d, %v)\n got %q\nwant %q", tc.done, tc.total, tc.failed, tc.first, tc.elapsed, got, tc.want)
		}
	}
}

// The bar is redrawn in place, at most every progressEvery, and always at the end; a shorter
// line blanks what the longer one before it left.
func TestProgressRedraws(t *testing.T) {
	var buf bytes.Buffer
	clock := &fakeClock{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	p := newProgress(&buf, clock.now)
	p.update(0, 100, 0)
	p.update(1, 100, 0) // too soon: not drawn
	clock.advance(progressEvery)
	p.update(2, 100, 1)
	clock.advance(time.Millisecond)
	p.update(100, 100, 1) // the end: drawn however soon
	p.end()
	draws := strings.Split(buf.String(), "\r")[1:]
	if len(draws) != 3 {
		t.Fatalf("%d draws, want 3: %q", len(draws), buf.String())
	}
	if !strings.HasPrefix(draws[1], "[                        ] 2/100 cases, 1 failed, about 4.9s left") {
		t.Errorf("second draw %q", draws[1])
	}
	if want := "[========================] 100/100 cases, 1 failed, done in 100ms"; !strings.HasPrefix(draws[2], want) || !strings.HasSuffix(draws[2], "\n") {
		t.Errorf("last draw %q, want %q and a newline", draws[2], want)
	}
	if len(strings.TrimRight(draws[2], "\n")) < len(strings.TrimRight(draws[1], " ")) {
		t.Errorf("the last line does not blank the longer one before it: %q after %q", draws[2], draws[1])
	}
}

// A nil progress, what a run whose stdout is not a terminal gets, draws nothing; and a run in
// the tests (stdout a buffer) prints no progress at all.
func TestNoProgressOffTerminal(t *testing.T) {
	var p *progress
	if p.callback() != nil || p.golden() != nil {
		t.Fatal("a nil progress gives a campaign a callback")
	}
	p.end()
	if isTerminal(&bytes.Buffer{}) {
		t.Fatal("a buffer is a terminal")
	}
	f := campaignDir(t, actThenSave...)
	if strings.Contains(f.out+f.errs, "\r") || strings.Contains(f.out+f.errs, "cases, ") {
		t.Fatalf("progress shown off a terminal:\n%s\n%s", f.out, f.errs)
	}
}

// Before the cases, the bar says how far each golden run has got: the first counted under its
// bound, the second out of the first's beats; the cases' bar then draws over it.
func TestGoldenProgress(t *testing.T) {
	var buf bytes.Buffer
	clock := &fakeClock{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	p := newProgress(&buf, clock.now)
	show := p.golden()
	show(sim.GoldenProgress{Target: "flood", Run: 1, Beats: 123456, Virtual: 90 * time.Minute, MaxBeats: 1_000_000, MaxVirtualTime: time.Hour})
	show(sim.GoldenProgress{Target: "app", Run: 2, Beats: 100, Virtual: 1500 * time.Millisecond, Of: 254})
	p.update(0, 10, 0)
	p.end()
	draws := strings.Split(buf.String(), "\r")[1:]
	want := []string{
		"golden run 1 of flood: 123456 beats (--max-beats 1000000), 1h30m0s of virtual time",
		"golden run 2 of app: 100 of 254 beats, 2s of virtual time",
		"[                        ] 0/10 cases, 0 failed, estimating time left",
	}
	if len(draws) != len(want) {
		t.Fatalf("draws %q", draws)
	}
	for i, w := range want {
		if got := strings.TrimRight(draws[i], " \n"); got != w {
			t.Errorf("draw %d: %q, want %q", i, got, w)
		}
	}
}
