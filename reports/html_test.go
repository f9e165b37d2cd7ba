package reports

import (
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/internal/needs"
	"github.com/chaoskit/chaoskit/oracle"
)

func writeHTML(t *testing.T, r *Report) (path, page string) {
	t.Helper()
	b := render(t, r, (*Report).HTML)
	return writeTemp(t, "report.html", b), string(b)
}

func TestHTMLSelfContained(t *testing.T) {
	_, page := writeHTML(t, demoReport(t))
	for _, ref := range []string{"http://", "https://", "<script", "<link", "@import", "url("} {
		if strings.Contains(page, ref) {
			t.Errorf("the page holds %q: it must load nothing from elsewhere", ref)
		}
	}
	// A chart of fault kinds per target, the work lost, the duplicates per tool.
	if n, want := strings.Count(page, "<svg "), len(demoReport(t).Summary.Targets)+2; n != want {
		t.Errorf("the page has %d SVG charts, want %d", n, want)
	}
	if len(page) > 3<<20 {
		t.Errorf("the page is %d bytes: it should not render every passing case", len(page))
	}
	if err := checkTags(page); err != nil {
		t.Error(err)
	}
}

func TestHTMLCases(t *testing.T) {
	r := demoReport(t)
	_, page := writeHTML(t, r)
	for _, ts := range mustView(t, r).targets {
		section := sectionOf(page, ts.Target)
		if len(ts.Problems) == 0 {
			if section != "" {
				t.Errorf("target %s, with no failure, has a failures section", ts.Target)
			}
			continue
		}
		shown := min(len(ts.Problems), htmlCasesPerTarget)
		if n := strings.Count(section, "<article "); n != shown {
			t.Errorf("target %s: %d cases shown, want %d", ts.Target, n, shown)
		}
		if more := fmt.Sprintf("%d more not shown", len(ts.Problems)-shown); shown < len(ts.Problems) && (!strings.Contains(section, more) || !strings.Contains(section, `<a href="report.json">`)) {
			t.Errorf("target %s: no %q linking report.json", ts.Target, more)
		}
		first := ts.Problems[0]
		for _, want := range []string{
			`<li class="p0 fault">`,                   // the beat where the fault fired is marked
			`<span class="x">process 1 starts</span>`, // and the restart is visible
			`<p class="repro">replay: <code>` + escaped(first.Repro) + `</code></p>`,
		} {
			if !strings.Contains(section, want) {
				t.Errorf("target %s: the section lacks %s", ts.Target, want)
			}
		}
	}
	if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("a violation holding markup is not shown escaped")
	}
	if !strings.Contains(page, "more lines</pre>") {
		t.Error("long diffs are not clipped")
	}
}

// escaped escapes s as html/template does in text.
func escaped(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;", "+", "&#43;").Replace(s)
}

// sectionOf returns the failures section of a target, or "".
func sectionOf(page, target string) string {
	_, rest, ok := strings.Cut(page, "<h3>"+escaped(target)+" <span")
	if !ok {
		return ""
	}
	section, _, _ := strings.Cut(rest, "</section>")
	return section
}

var (
	tagPattern = regexp.MustCompile(`<(/?)([a-zA-Z][a-zA-Z0-9-]*)[^>]*?(/?)>`)
	voidTags   = map[string]bool{"meta": true, "br": true, "hr": true, "img": true, "input": true, "link": true}
)

// checkTags checks that every element of an HTML page (outside its style sheet) is closed, in
// order.
func checkTags(page string) error {
	before, rest, _ := strings.Cut(page, "<style>")
	_, after, _ := strings.Cut(rest, "</style>")
	var open []string
	for _, m := range tagPattern.FindAllStringSubmatch(before+after, -1) {
		closing, name, selfClosing := m[1] == "/", strings.ToLower(m[2]), m[3] == "/"
		switch {
		case voidTags[name] || selfClosing:
		case !closing:
			open = append(open, name)
		case len(open) == 0 || open[len(open)-1] != name:
			return fmt.Errorf("</%s> closes %v", name, open[max(0, len(open)-3):])
		default:
			open = open[:len(open)-1]
		}
	}
	if len(open) > 0 {
		return fmt.Errorf("elements left open: %v", open)
	}
	return nil
}

// TestHTMLScreenshot has a headless Chromium draw the page and checks that it drew something.
func TestHTMLScreenshot(t *testing.T) {
	browser := chromium()
	if browser == "" {
		needs.Missing(t, "chromium is not in PATH: screenshot not taken (apt-get install chromium)")
	}
	page, _ := writeHTML(t, demoReport(t))
	shot := filepath.Join(t.TempDir(), "report.png")
	out, err := runTool(browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+t.TempDir(), "--window-size=1280,2400", "--screenshot="+shot, "file://"+page)
	f, openErr := os.Open(shot)
	if openErr != nil {
		t.Fatalf("no screenshot (chromium: %v):\n%s", err, out)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	if w := img.Bounds().Dx(); w != 1280 {
		t.Errorf("screenshot is %d pixels wide, want 1280", w)
	}
	if n := colours(img); n < 8 {
		t.Errorf("screenshot has %d colours: the page drew next to nothing", n)
	}
}

func chromium() string {
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	path, _ := exec.LookPath("chromium")
	return path
}

// colours counts the distinct colours of img, on a grid of every fourth pixel.
func colours(img image.Image) int {
	seen := map[[4]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 4 {
		for x := b.Min.X; x < b.Max.X; x += 4 {
			r, g, bl, a := img.At(x, y).RGBA()
			seen[[4]uint32{r, g, bl, a}] = true
		}
	}
	return len(seen)
}

// The page of a random campaign: a neutral headline, the target's verdict and notes, the shrunk
// schedule of each failure with its replay command, and each diff once, whole.
func TestHTMLRandomCampaign(t *testing.T) {
	r := randomReport(t)
	_, page := writeHTML(t, r)
	for _, want := range []string{
		`<p class="headline">7 cases failed across 1 target</p>`,
		`<span class="line">7 of 1500 cases failed (same-result ×7, same-state ×7)</span>`,
		`<div class="notes">bounded-work-lost not checked in 16 of 1500 cases: `,
		` · 2 processes ended on their own with an error or a panic</div>`,
		`<div class="card"><div class="v">1</div><div class="k">refused</div></div>`,
		`<p class="shrunk">Shrunk to <code>power@7</code>, which still breaks same-result: replay it with <code>` +
			escaped("chaoskit replay --target agent --seed 3 --schedule 'power@7'") + `</code></p>`,
		`<p class="repro">replay as found: <code>` + escaped("chaoskit replay --target agent --seed 3 --schedule 'kill@7,lease@107+2h'") + `</code></p>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	for _, wrong := range []string{"FAILED", "1 targets", "1 cases"} {
		if strings.Contains(page, wrong) {
			t.Errorf("the page says %q", wrong)
		}
	}
	// Each case's diff, held by its same-result violation, is shown once, and not clipped.
	card := page[strings.Index(page, "<article "):]
	card = card[:strings.Index(card, "</article>")]
	diff := escaped(strings.TrimSpace(fixtureDiff(1)))
	if n := strings.Count(card, diff); n != 1 {
		t.Errorf("a case's diff is shown %d times", n)
	}
	if strings.Contains(card, "diff-title") || strings.Contains(card, "more lines") {
		t.Errorf("a diff a violation holds is shown again, or clipped:\n%s", card)
	}
}

// The per-kind chart has a row per fault kind, its name beside it, and a failures bar long enough
// to see for 7 failures among 519 cases.
func TestHTMLKindChart(t *testing.T) {
	r := &Report{Schema: Schema, Options: Options{Mode: "exhaustive", Faults: []string{"kill", "lease", "model-ratelimit"}}}
	add := func(kind string, n, failed int) {
		for i := range n {
			c := Case{Target: "t", Schedule: faults.Schedule{{Kind: faults.Kind(kind), Beat: i}}, Verdict: oracle.Pass}
			if i < failed {
				c.Verdict, c.Violations = oracle.Fail, []oracle.Violation{{Property: "no-duplicate-effects"}}
			}
			r.Cases = append(r.Cases, c)
		}
	}
	add("kill", 159, 0)
	add("lease", 519, 7)
	add("model-ratelimit", 8, 0)
	r.Summarize(nil)
	charts := kindCharts(mustView(t, r).targets, mustView(t, r).kinds)
	if len(charts) != 1 {
		t.Fatalf("%d per-kind charts for one target", len(charts))
	}
	c := charts[0]
	var rows []float64
	for _, l := range c.Labels {
		if slices.Contains(mustView(t, r).kinds, l.Text) {
			rows = append(rows, l.Y)
		}
	}
	if len(rows) != 3 {
		t.Fatalf("%d kinds labelled, want 3", len(rows))
	}
	for i := 1; i < len(rows); i++ {
		if rows[i]-rows[i-1] < 16 {
			t.Errorf("kind labels %.1f apart: they overlap", rows[i]-rows[i-1])
		}
	}
	var failed, cases float64
	for _, b := range c.Rects {
		if strings.Contains(b.Tip, "lease") {
			switch b.Class {
			case "bar-failed":
				failed = b.W
			case "bar-cases":
				cases = b.W
			}
		}
	}
	if failed < 0.25*cases {
		t.Errorf("7 failures of 519 cases draw a bar %.1f long beside %.1f: a sliver", failed, cases)
	}
	if !slices.ContainsFunc(c.Labels, func(l label) bool { return l.Text == "519" && l.Tail == " · 7 failed" }) {
		t.Error("the lease row does not say 519 · 7 failed")
	}
}

// The processes of a fleet interleave: a process's start is marked once, where it starts.
func TestTraceRowsFleet(t *testing.T) {
	rows := traceRows([]TraceBeat{
		{Beat: 0, Process: 1, Label: "w1 lease acquire", Note: "process 1 starts"},
		{Beat: 11, Process: 0, Label: "lease acquire", Note: "process 0 starts"},
		{Beat: 12, Process: 1, Label: "w1 sleep 5s"},
		{Beat: 13, Process: 0, Label: "sleep 5s"},
		{Beat: 14, Process: 2, Label: "fs.write"}, // a trace that left process 2's start out
		{Beat: 15, Process: 1, Label: "w1 sleep 5s"},
	})
	var got []string
	for _, r := range rows {
		switch {
		case r.Skipped != "":
			got = append(got, r.Skipped)
		case r.Marker:
			got = append(got, fmt.Sprintf("marker p%d", r.Process))
		default:
			got = append(got, fmt.Sprintf("%d start=%v", r.Beat, r.Start))
		}
	}
	want := []string{"0 start=true", "… 10 beats not shown", "11 start=true", "12 start=false", "13 start=false",
		"marker p2", "14 start=false", "15 start=false"}
	if !slices.Equal(got, want) {
		t.Errorf("rows = %q\nwant %q", got, want)
	}
	if rows := traceRows([]TraceBeat{{Beat: 3}, {Beat: 5}}); rows[1].Skipped != "… 1 beat not shown" {
		t.Errorf("a gap of one beat reads %q", rows[1].Skipped)
	}
}
