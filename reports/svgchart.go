package reports

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// This file draws the charts of the HTML report as data (rectangles, lines and labels in SVG
// user units); html.go's template turns them into inline SVG.

// chart is an SVG drawing.
type chart struct {
	Title  string // what the chart shows, for screen readers
	W, H   float64
	Rects  []rect
	Lines  []line
	Labels []label
}

type rect struct {
	X, Y, W, H float64
	Class      string
	Tip        string // shown on hover
}

type line struct {
	X1, Y1, X2, Y2 float64
	Class          string
}

type label struct {
	X, Y   float64
	Text   string
	Class  string
	Anchor string // start, middle or end
	Rotate bool   // read bottom to top
	// Tail is more text after Text, in its own class (another colour, say).
	Tail, TailClass string
}

func (c *chart) text(x, y float64, text, class, anchor string) {
	c.Labels = append(c.Labels, label{X: x, Y: y, Text: text, Class: class, Anchor: anchor})
}

// niceScale returns a top for an axis showing values up to v, and the step between its ticks:
// 1, 2 or 5 times a power of ten, so that there are at most five steps.
func niceScale(v int) (top, step int) {
	step = 1
	for (v+step-1)/step > 5 {
		step = nextNice(step)
	}
	return max(step, (v+step-1)/step*step), step
}

// nextNice returns the 1, 2 or 5 times a power of ten that follows n, itself one.
func nextNice(n int) int {
	p := 1
	for p*10 <= n {
		p *= 10
	}
	switch n / p {
	case 1:
		return 2 * p
	case 2:
		return 5 * p
	default:
		return 10 * p
	}
}

// plot is the area of a chart where values are drawn, with a linear scale from 0 to top.
type plot struct {
	X, Y, W, H float64
	top, step  int
}

func newPlot(x, y, w, h float64, maxValue int) plot {
	top, step := niceScale(maxValue)
	return plot{X: x, Y: y, W: w, H: h, top: top, step: step}
}

// scale returns the length that v takes along the value axis, whose full length is size.
func (p plot) scale(v int, size float64) float64 { return float64(v) / float64(p.top) * size }

// vAxis draws p's value axis upright on its left, with grid lines and a title.
func (p plot) vAxis(c *chart, title string) {
	for v := 0; v <= p.top; v += p.step {
		y := p.Y + p.H - p.scale(v, p.H)
		c.Lines = append(c.Lines, line{X1: p.X, Y1: y, X2: p.X + p.W, Y2: y, Class: "grid"})
		c.text(p.X-5, y+4, strconv.Itoa(v), "tick", "end")
	}
	c.Lines = append(c.Lines, line{X1: p.X, Y1: p.Y + p.H, X2: p.X + p.W, Y2: p.Y + p.H, Class: "axis"})
	c.Labels = append(c.Labels, label{X: p.X - 34, Y: p.Y + p.H/2, Text: title, Class: "axis-title", Anchor: "middle", Rotate: true})
}

// hAxis draws p's value axis lying along its bottom, with grid lines and a title.
func (p plot) hAxis(c *chart, title string) {
	for v := 0; v <= p.top; v += p.step {
		x := p.X + p.scale(v, p.W)
		c.Lines = append(c.Lines, line{X1: x, Y1: p.Y, X2: x, Y2: p.Y + p.H, Class: "grid"})
		c.text(x, p.Y+p.H+14, strconv.Itoa(v), "tick", "middle")
	}
	c.Lines = append(c.Lines, line{X1: p.X, Y1: p.Y, X2: p.X, Y2: p.Y + p.H, Class: "axis"})
	c.text(p.X+p.W/2, p.Y+p.H+32, title, "axis-title", "middle")
}

// column draws an upright bar of value v in p, from x and w wide.
func (p plot) column(c *chart, x, w float64, v int, class, tip string) {
	h := p.scale(v, p.H)
	if v > 0 {
		h = max(h, 1) // a bar for a few cases stays visible
	}
	c.Rects = append(c.Rects, rect{X: x, Y: p.Y + p.H - h, W: w, H: h, Class: class, Tip: tip})
}

const (
	panelW, panelH = 420.0, 230.0
	panelsPerRow   = 3
)

// The per-kind charts: a row per fault kind, its label on the left, its bars on a logarithmic
// scale, their counts at their ends.
const (
	kindChartW     = 420.0
	kindCharW      = 7.0   // the width of a character of a kind's name, about, in the tick font
	kindLabelPad   = 7.0   // the room between a kind's name and its bars
	kindLabelMax   = 27    // a kind's name is clipped to this many characters
	kindCountW     = 112.0 // room for the counts after the longest bar
	kindRowH       = 19.0
	kindTitleH     = 26.0
	kindAxisH      = 38.0
	kindBarH       = 7.0
	kindNameLength = 60 // a target's name is clipped to this many characters in a chart's title
)

// logScale maps counts from 0 to top onto a length, logarithmically (log(1+v)), so that a
// handful of failures shows beside thousands of cases.
type logScale struct {
	top  int
	size float64
}

func (l logScale) at(v int) float64 {
	if l.top <= 0 || v <= 0 {
		return 0
	}
	return math.Log1p(float64(v)) / math.Log1p(float64(l.top)) * l.size
}

// ticks returns the values marked on the axis: 0, then the powers of ten up to top.
func (l logScale) ticks() []int {
	ticks := []int{0}
	for v := 1; v <= l.top; v *= 10 {
		ticks = append(ticks, v)
	}
	return ticks
}

// kindCharts draws a chart for each target with a row per fault kind its cases have: a bar for
// the cases whose schedule has the kind and one below for those that failed (and, in another
// colour, those unknown), each with its count. All the charts share one logarithmic scale, so
// that 7 failures beside 1,500 cases make a bar one can see, and a bar's length can be compared
// across targets; the counts say the exact numbers. Targets without cases get no chart.
func kindCharts(targets []*targetView, kinds []string) []*chart {
	most := 0
	for _, t := range targets {
		for _, s := range t.ByFault {
			most = max(most, s.Cases)
		}
	}
	rows := make([][]string, len(targets))
	longest := 0 // the longest name drawn, in characters: every chart gets the room for it
	for i, t := range targets {
		for _, k := range kinds {
			if t.ByFault[k].Cases > 0 {
				rows[i] = append(rows[i], k)
				longest = max(longest, min(utf8.RuneCountInString(k), kindLabelMax))
			}
		}
	}
	// The same room for the names in every chart, so that the bars share one scale.
	labelW := kindLabelPad + kindCharW*float64(longest)
	var charts []*chart
	for i, t := range targets {
		if len(rows[i]) > 0 {
			charts = append(charts, kindChart(t, rows[i], most, labelW))
		}
	}
	return charts
}

// kindChart draws target t's chart, with labelW of room for the names of the kinds.
func kindChart(t *targetView, kinds []string, most int, labelW float64) *chart {
	c := &chart{Title: "cases and failures per fault kind for " + t.Target + ", on a logarithmic scale",
		W: kindChartW, H: kindTitleH + kindRowH*float64(len(kinds)) + kindAxisH}
	c.text(4, 16, clip(t.Target, kindNameLength), "panel-title", "start")
	x0, y0 := labelW, kindTitleH
	top := 10 // the power of ten above most, so that the axis ends on a tick
	for top < most {
		top *= 10
	}
	scale := logScale{top: top, size: kindChartW - labelW - kindCountW}
	bottom := y0 + kindRowH*float64(len(kinds))
	for _, v := range scale.ticks() {
		x := x0 + scale.at(v)
		c.Lines = append(c.Lines, line{X1: x, Y1: y0, X2: x, Y2: bottom, Class: "grid"})
		c.text(x, bottom+14, strconv.Itoa(v), "tick", "middle")
	}
	c.Lines = append(c.Lines, line{X1: x0, Y1: y0, X2: x0, Y2: bottom, Class: "axis"})
	c.text(x0+scale.size/2, bottom+31, "cases (logarithmic scale)", "axis-title", "middle")
	for i, k := range kinds {
		s := t.ByFault[k]
		y := y0 + kindRowH*float64(i)
		tip := fmt.Sprintf("%s, %s: %s, %d failed, %d unknown", t.Target, k, Count(s.Cases, "case"), s.Failed, s.Unknown)
		c.text(x0-6, y+kindRowH/2+4, clip(k, kindLabelMax), "tick", "end")
		top, below := y+kindRowH/2-kindBarH, y+kindRowH/2
		w := scale.at(s.Cases)
		c.Rects = append(c.Rects, rect{X: x0, Y: top, W: w, H: kindBarH, Class: "bar-cases", Tip: tip})
		count := label{X: x0 + w + 4, Y: y + kindRowH/2 + 3.5, Text: strconv.Itoa(s.Cases), Class: "count", Anchor: "start"}
		if bad := s.Failed + s.Unknown; bad > 0 {
			c.Rects = append(c.Rects, rect{X: x0, Y: below, W: scale.at(bad), H: kindBarH, Class: "bar-unknown", Tip: tip})
			if s.Failed > 0 {
				c.Rects = append(c.Rects, rect{X: x0, Y: below, W: scale.at(s.Failed), H: kindBarH, Class: "bar-failed", Tip: tip})
			}
			count.Tail, count.TailClass = " · "+badCount(s.Failed, s.Unknown), "bad"
		}
		c.Labels = append(c.Labels, count)
	}
	return c
}

// badCount says how many cases failed and how many are unknown, leaving out a zero.
func badCount(failed, unknown int) string {
	switch {
	case unknown == 0:
		return fmt.Sprintf("%d failed", failed)
	case failed == 0:
		return fmt.Sprintf("%d unknown", unknown)
	}
	return fmt.Sprintf("%d failed, %d unknown", failed, unknown)
}

// maxBins is how many bars the work-lost histogram has at most; the last one gathers the tail
// beyond the 99th percentile when it would need more.
const maxBins = 40

// workLostChart draws a histogram of work_lost_beats over every case, given the number of cases
// by the beats they lost.
func workLostChart(lost map[int]int) *chart {
	values := slices.Sorted(maps.Keys(lost))
	n := 0
	for _, v := range values {
		n += lost[v]
	}
	if n == 0 {
		return nil
	}
	// p99 is the value at position n*99/100 of every case's value, sorted.
	p99, below := values[len(values)-1], 0
	for _, v := range values {
		if below += lost[v]; below > n*99/100 {
			p99 = v
			break
		}
	}
	most := values[len(values)-1]
	width := 1
	for p99/width+1 > maxBins {
		width = nextNice(width)
	}
	counts := make([]int, min(most/width+1, maxBins))
	for _, v := range values {
		counts[min(v/width, len(counts)-1)] += lost[v]
	}
	tail := most/width >= len(counts)
	c := &chart{Title: "histogram of work lost beats over all cases", W: panelW * panelsPerRow, H: 300}
	p := newPlot(62, 24, c.W-80, 220, slices.Max(counts))
	p.vAxis(c, "cases")
	bw := p.W / float64(len(counts))
	every := (len(counts) + 19) / 20 // at most 20 labels on the axis
	for i, n := range counts {
		x := p.X + bw*float64(i)
		bin := binName(i, width, tail && i == len(counts)-1)
		p.column(c, x+1, bw-2, n, "bar-work", fmt.Sprintf("%s beats lost: %d cases", bin, n))
		if n > 0 && bw >= 24 {
			c.text(x+bw/2, p.Y+p.H-p.scale(n, p.H)-3, strconv.Itoa(n), "count", "middle")
		}
		if last := len(counts) - 1; i == last || i%every == 0 && last-i >= every { // the last may be the tail
			c.text(x+bw/2, p.Y+p.H+14, bin, "tick", "middle")
		}
	}
	c.text(p.X+p.W/2, p.Y+p.H+34, "golden beats done again after crashes (work lost)", "axis-title", "middle")
	return c
}

// binName names the histogram bin i, of the given width; a tail bin holds every larger value.
func binName(i, width int, tail bool) string {
	switch {
	case tail:
		return fmt.Sprintf("%d+", i*width)
	case width == 1:
		return strconv.Itoa(i)
	default:
		return fmt.Sprintf("%d–%d", i*width, (i+1)*width-1)
	}
}

// duplicatesChart draws the duplicate effect applications of every case, summed per tool, most
// first; it returns nil when there are none.
func duplicatesChart(perTool map[string]int) *chart {
	if len(perTool) == 0 {
		return nil
	}
	tools := slices.SortedFunc(maps.Keys(perTool), func(a, b string) int {
		return cmp.Or(cmp.Compare(perTool[b], perTool[a]), cmp.Compare(a, b))
	})
	const barH = 26.0
	longest := 0
	for _, t := range tools {
		longest = max(longest, len(t))
	}
	left := min(20+7*float64(longest), 260)
	c := &chart{Title: "duplicate effect applications per tool, over all cases", W: 620, H: 70 + barH*float64(len(tools))}
	p := newPlot(left, 16, 590-left, barH*float64(len(tools)), perTool[tools[0]])
	p.hAxis(c, "duplicate effect applications, over all cases")
	for i, t := range tools {
		y := p.Y + barH*float64(i)
		w := p.scale(perTool[t], p.W)
		c.Rects = append(c.Rects, rect{X: p.X, Y: y + 4, W: w, H: barH - 8, Class: "bar-dup", Tip: fmt.Sprintf("%s: %d duplicates", t, perTool[t])})
		c.text(p.X-6, y+barH/2+4, clip(t, 36), "tick", "end")
		c.text(p.X+w+4, y+barH/2+4, strconv.Itoa(perTool[t]), "count", "start")
	}
	return c
}
