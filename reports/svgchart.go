package reports

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
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
}

func (c *chart) text(x, y float64, text, class, anchor string) {
	c.Labels = append(c.Labels, label{X: x, Y: y, Text: text, Class: class, Anchor: anchor})
}

// legend draws a row of coloured swatches with their names, from (x, y).
func (c *chart) legend(x, y float64, entries ...[2]string) {
	for _, e := range entries {
		c.Rects = append(c.Rects, rect{X: x, Y: y - 10, W: 12, H: 12, Class: e[0]})
		c.text(x+17, y, e[1], "legend", "start")
		x += 30 + 7*float64(len(e[1]))
	}
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
	legendH        = 30.0
)

// perKindChart draws, for each target, a panel of paired bars: for each fault kind, the cases
// whose schedule has it and how many of them failed. All panels share one scale.
func perKindChart(targets []*targetView, kinds []string) *chart {
	if len(targets) == 0 || len(kinds) == 0 {
		return nil
	}
	rows := (len(targets) + panelsPerRow - 1) / panelsPerRow
	c := &chart{Title: "cases and failures per fault kind, for each target",
		W: panelW * panelsPerRow, H: legendH + panelH*float64(rows)}
	c.legend(60, 18, [2]string{"bar-cases", "cases"}, [2]string{"bar-failed", "failed"}, [2]string{"bar-unknown", "unknown"})
	most := 0
	for _, t := range targets {
		for _, s := range t.ByFault {
			most = max(most, s.Cases)
		}
	}
	for i, t := range targets {
		x := panelW * float64(i%panelsPerRow)
		y := legendH + panelH*float64(i/panelsPerRow)
		drawKindPanel(c, newPlot(x+58, y+30, panelW-74, panelH-82, most), t, kinds)
	}
	return c
}

func drawKindPanel(c *chart, p plot, t *targetView, kinds []string) {
	c.text(p.X+p.W/2, p.Y-12, t.Target, "panel-title", "middle")
	p.vAxis(c, "cases")
	gw := p.W / float64(len(kinds))
	for j, k := range kinds {
		s := t.ByFault[k]
		x := p.X + gw*float64(j)
		tip := fmt.Sprintf("%s, %s: %d cases, %d failed, %d unknown", t.Target, k, s.Cases, s.Failed, s.Unknown)
		p.column(c, x+gw*0.1, gw*0.4, s.Cases, "bar-cases", tip)
		p.column(c, x+gw*0.5, gw*0.4, s.Failed+s.Unknown, "bar-unknown", tip)
		p.column(c, x+gw*0.5, gw*0.4, s.Failed, "bar-failed", tip)
		c.text(x+gw/2, p.Y+p.H+14, k, "tick", "middle")
	}
	c.text(p.X+p.W/2, p.Y+p.H+32, "fault kind", "axis-title", "middle")
}

// maxBins is how many bars the work-lost histogram has at most; the last one gathers the tail
// beyond the 99th percentile when it would need more.
const maxBins = 40

// workLostChart draws a histogram of work_lost_beats over every case.
func workLostChart(cases []Case) *chart {
	if len(cases) == 0 {
		return nil
	}
	lost := make([]int, len(cases))
	for i := range cases {
		lost[i] = cases[i].WorkLostBeats
	}
	slices.Sort(lost)
	width := 1
	for lost[len(lost)*99/100]/width+1 > maxBins {
		width = nextNice(width)
	}
	counts := make([]int, min(lost[len(lost)-1]/width+1, maxBins))
	for _, v := range lost {
		counts[min(v/width, len(counts)-1)]++
	}
	tail := lost[len(lost)-1]/width >= len(counts)
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
func duplicatesChart(cases []Case) *chart {
	perTool := map[string]int{}
	for i := range cases {
		for tool, n := range cases[i].DuplicatesByTool {
			perTool[tool] += n
		}
	}
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
