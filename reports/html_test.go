package reports

import (
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
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
	if n := strings.Count(page, "<svg "); n != 3 {
		t.Errorf("the page has %d SVG charts, want 3", n)
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
	for _, ts := range r.targets() {
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
		if more := fmt.Sprintf("%d more not shown", len(ts.Problems)-shown); shown < len(ts.Problems) && !strings.Contains(section, more) {
			t.Errorf("target %s: no %q", ts.Target, more)
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
		t.Skip("chromium not installed: screenshot not taken (apt-get install chromium)")
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
