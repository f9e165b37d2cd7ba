package reports

import (
	"fmt"
	"html/template"
	"io"
	"strconv"
	"strings"

	"github.com/chaoskit/chaoskit/oracle"
)

const (
	// htmlCasesPerTarget is how many failing or unknown cases HTML shows for each target.
	htmlCasesPerTarget = 30
	// htmlDetailLines is how many lines of a violation's detail, or of a case's diff, HTML
	// shows, in a block that scrolls.
	htmlDetailLines = 400
)

// HTML writes r as one self-contained HTML page: inline CSS and inline SVG charts, no script and
// nothing loaded from elsewhere, so that it can be opened from disk or kept as a CI artifact. The
// page has the campaign and a headline worded neutrally ("N cases failed across M targets": a
// report cannot know which targets are meant to fail), then per target its verdict on one line
// and what that verdict does not say (properties not checked and why, faults that never fired,
// refusals, failed processes); charts of the cases and failures per fault kind, one per target
// with a row per kind on a logarithmic scale, of the work lost over all cases, and of the
// duplicate effects per tool; the summary tables of Markdown (with its columns of model calls
// asked again and of upgrade marks, when the report has them); and, for up to 30 failing or
// unknown cases per target, the marks of an upgrade case in words, the shrunk schedule and the
// command that replays it, the violations
// (each diff once, in a block that scrolls) beside a timeline of the beats that explain the case
// (the beat where a fault fired marked, each process in its own colour), and the replay command.
// Every string from the report is escaped. The output is a pure function of r.
func (r *Report) HTML(w io.Writer) error {
	v, err := r.view(htmlCasesPerTarget)
	if err != nil {
		return err
	}
	return r.html(v, w)
}

// html writes the HTML page of r from v, a view keeping at least htmlCasesPerTarget problems per
// target.
func (r *Report) html(v *view, w io.Writer) error {
	if err := htmlPage.Execute(w, r.htmlData(v)); err != nil {
		return fmt.Errorf("rendering HTML report: %w", err)
	}
	return nil
}

// htmlReport is what the page template shows.
type htmlReport struct {
	*Report
	Campaign   string
	Headline   string
	Totals     Stats
	Targets    int
	Verdicts   []htmlVerdict
	Summary    table
	ByKind     table
	KindCharts []*chart // one per target with cases
	WorkLost   *chart
	Duplicates *chart // nil when no case had a duplicate
	Problems   []htmlTarget
	NoProblems bool
}

// htmlVerdict is a target's line in the list of verdicts.
type htmlVerdict struct {
	Target, Anchor, Line string // Anchor: its section of failing cases, if it has one
	Notes                []string
	Failed               bool
}

// htmlTarget is one target's section of failing and unknown cases.
type htmlTarget struct {
	Anchor, Target, Counts string
	Cases                  []htmlCase
	More                   string
}

type htmlCase struct {
	*Case
	Violations  []oracle.Violation // details clipped
	Metrics     string
	Deploy      string // an upgrade case's marks, in words (deployMarks)
	Trace       []traceRow
	Diff        string // clipped; "" when a violation's detail shows it already
	Shrunk      string // the shrunk schedule, when it differs from the schedule
	ShrunkRepro string
	Breaks      string // the property the shrunk schedule still breaks
}

// traceRow is one line of a case's timeline: a beat, a marker that a new process starts, or a
// note that beats were left out.
type traceRow struct {
	TraceBeat
	Colour  int  // the process, modulo the number of process colours
	Start   bool // a process starts: a marker row, or a beat whose note says so
	Marker  bool // a row of its own saying that a process starts, before its first beat shown
	Skipped string
}

func (r *Report) htmlData(v *view) htmlReport {
	targets := v.targets
	d := htmlReport{Report: r, Campaign: r.campaignLine(), Totals: v.totals, Targets: len(targets),
		Summary: v.targetTable(), ByKind: v.kindTable()}
	d.Headline = failedLine(&d.Totals, targets, r.Options.ExpectFail)
	d.KindCharts = kindCharts(targets, v.kinds)
	d.WorkLost, d.Duplicates = workLostChart(v.workLost), duplicatesChart(v.dupByTool)
	for i, t := range targets {
		v := htmlVerdict{Target: t.Target, Line: verdictLine(&t.Stats), Notes: targetNotes(t), Failed: t.Failed > 0}
		if len(t.Problems) > 0 {
			ht := htmlTargetOf(i, t)
			v.Anchor = ht.Anchor
			d.Problems = append(d.Problems, ht)
		}
		d.Verdicts = append(d.Verdicts, v)
	}
	d.NoProblems = len(d.Problems) == 0
	return d
}

func htmlTargetOf(i int, t *targetView) htmlTarget {
	ht := htmlTarget{Anchor: "target-" + strconv.Itoa(i+1), Target: t.Target, Counts: problemsLine(&t.Stats)}
	shown := t.Problems[:min(len(t.Problems), htmlCasesPerTarget)]
	for _, c := range shown {
		ht.Cases = append(ht.Cases, htmlCaseOf(c))
	}
	if n := t.Failed + t.Unknown - len(shown); n > 0 {
		ht.More = fmt.Sprintf("%d more not shown", n)
	}
	return ht
}

func htmlCaseOf(c *Case) htmlCase {
	hc := htmlCase{Case: c, Metrics: metricsLine(&c.Metrics), Deploy: deployMarks(c), Trace: traceRows(c.Trace),
		Shrunk: shrunk(c), ShrunkRepro: shrunkRepro(c), Breaks: firstProperty(c)}
	diff := strings.TrimSpace(c.Diff)
	shown := diff == ""
	for _, v := range c.Violations {
		shown = shown || strings.Contains(v.Detail, diff)
		hc.Violations = append(hc.Violations, oracle.Violation{Property: v.Property, Detail: clipLines(v.Detail, htmlDetailLines)})
	}
	if !shown { // the diff is shown once: in the violation that holds it, or here
		hc.Diff = clipLines(c.Diff, htmlDetailLines)
	}
	return hc
}

// metricsLine sums up a case's measurements on one line.
func metricsLine(m *oracle.Metrics) string {
	mismatch := "no"
	if m.StateMismatch {
		mismatch = "yes"
	}
	work := fmt.Sprintf("work lost %d · resume %d", m.WorkLostBeats, m.ResumeBeats)
	if m.WorkLostUnmeasured {
		work = "work lost " + notMeasured
	}
	if m.ModelCallsRemade > 0 {
		work += fmt.Sprintf(" · model calls asked again %d", m.ModelCallsRemade)
	}
	return fmt.Sprintf("restarts %d · beats %d (golden %d) · %s · duplicates %d · lost effects %d · phantom effects %d · state mismatch %s",
		m.Restarts, m.Beats, m.GoldenBeats, work, m.Duplicates, m.LostEffects, m.PhantomEffects, mismatch)
}

// processColours is how many colours the timeline cycles through for successive processes.
const processColours = 6

// traceRows lays out a trace as a timeline: a process's first beat, whose note says that it
// starts, stands out; a process whose first beat shown has no such note (a trace that left it
// out) gets a marker row before it, but only there, for the processes of a fleet interleave; and
// a note says wherever the trace skips beats.
func traceRows(trace []TraceBeat) []traceRow {
	var rows []traceRow
	seen := map[int]bool{}
	for i, tb := range trace {
		if i > 0 && tb.Beat > trace[i-1].Beat+1 {
			rows = append(rows, traceRow{Skipped: "… " + Count(tb.Beat-trace[i-1].Beat-1, "beat") + " not shown"})
		}
		row := traceRow{TraceBeat: tb, Colour: tb.Process % processColours,
			Start: strings.Contains(tb.Note, fmt.Sprintf("process %d starts", tb.Process))}
		if !seen[tb.Process] && i > 0 && !row.Start {
			rows = append(rows, traceRow{TraceBeat: TraceBeat{Process: tb.Process}, Colour: row.Colour, Start: true, Marker: true})
		}
		seen[tb.Process] = true
		rows = append(rows, row)
	}
	return rows
}

// clipLines keeps the first n lines of s, saying how many it left out.
func clipLines(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	lines := strings.Split(s, "\n")
	if len(lines) <= n {
		return s
	}
	return fmt.Sprintf("%s\n… %d more lines", strings.Join(lines[:n], "\n"), len(lines)-n)
}

// num formats an SVG coordinate.
func num(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }

var htmlPage = template.Must(template.New("report").Funcs(template.FuncMap{"num": num, "seconds": seconds}).Parse(htmlTemplate))

const htmlTemplate = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="chaoskit">
<title>chaoskit report · seed {{.Seed}}</title>
<style>
:root { --ink: #1f2328; --muted: #59636e; --line: #d1d9e0; --soft: #f6f8fa; --fail: #cf222e; --fail-bg: #ffebe9; --ok: #1a7f37; --warn: #9a6700; }
* { box-sizing: border-box; }
body { margin: 0; padding: 24px 32px 48px; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; color: var(--ink); background: #fff; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 19px; margin: 32px 0 10px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
h3 { font-size: 16px; margin: 26px 0 8px; }
code, pre, .mono { font-family: ui-monospace, "SFMono-Regular", "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 12.5px; }
.muted { color: var(--muted); }
.meta { margin: 0; color: var(--muted); }
.meta b { color: var(--ink); font-weight: 600; }
.headline { font-size: 18px; font-weight: 600; margin: 14px 0 6px; }
.verdicts { list-style: none; margin: 0; padding: 0; }
.verdicts li { margin: 0 0 5px; padding-left: 10px; border-left: 3px solid var(--ok); }
.verdicts li.failed { border-left-color: var(--fail); }
.verdicts .notes { color: var(--muted); font-size: 12.5px; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin: 16px 0 0; }
.card { border: 1px solid var(--line); border-radius: 8px; padding: 8px 16px; min-width: 110px; background: var(--soft); }
.card .v { font-size: 24px; font-weight: 650; }
.card .k { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
.card.bad .v { color: var(--fail); }
.card.good .v { color: var(--ok); }
table { border-collapse: collapse; font-size: 13px; }
th, td { border: 1px solid var(--line); padding: 4px 8px; vertical-align: top; }
th { background: var(--soft); text-align: left; font-weight: 600; }
td:first-child { white-space: nowrap; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.charts { display: flex; flex-wrap: wrap; gap: 24px; align-items: flex-start; }
.multiples { display: flex; flex-wrap: wrap; gap: 8px 16px; margin-bottom: 24px; align-items: flex-start; }
.multiples svg { border: 1px solid var(--line); border-radius: 6px; }
figure { margin: 0; }
figcaption { font-weight: 600; margin-bottom: 4px; }
.keys { margin: 0 0 8px; font-size: 12px; color: var(--muted); }
.key { display: inline-block; width: 12px; height: 12px; vertical-align: -2px; margin: 0 4px 0 10px; border-radius: 2px; }
.key.cases { background: #8fb5d9; } .key.failed { background: #d1242f; } .key.unknown { background: #bf8700; }
svg { display: block; max-width: 100%; height: auto; }
svg text { font-family: system-ui, "DejaVu Sans", sans-serif; fill: var(--ink); }
svg .tick { font-size: 11px; fill: var(--muted); }
svg .count { font-size: 10px; fill: var(--ink); }
svg .bad { fill: var(--fail); font-weight: 600; }
svg .axis-title { font-size: 11.5px; fill: var(--muted); }
svg .panel-title { font-size: 13px; font-weight: 600; }
svg .grid { stroke: #eaeef2; }
svg .axis { stroke: #8c959f; }
.bar-cases { fill: #8fb5d9; }
.bar-failed { fill: #d1242f; }
.bar-unknown { fill: #bf8700; }
.bar-work { fill: #4c78a8; }
.bar-dup { fill: #e37400; }
nav ul { margin: 4px 0; padding-left: 20px; columns: 2; }
.case { border: 1px solid var(--line); border-left: 4px solid var(--fail); border-radius: 6px; margin: 14px 0; padding: 10px 14px; }
.case.unknown { border-left-color: #bf8700; }
.case.unknown .verdict { background: #fff8c5; color: #7d4e00; }
.case h4 { margin: 0 0 2px; font-size: 14px; }
.case h4 code { font-size: 14px; }
.verdict { display: inline-block; font-size: 11px; text-transform: uppercase; padding: 0 6px; border-radius: 10px; background: var(--fail-bg); color: var(--fail); margin-left: 6px; vertical-align: 2px; }
.case .metrics { font-size: 12px; color: var(--muted); margin: 0 0 8px; }
.case .deploy { margin: 0 0 8px; font-weight: 600; color: var(--fail); }
.shrunk { margin: 6px 0 10px; padding: 6px 10px; border: 1px solid #d4a72c; background: #fff8c5; border-radius: 6px; }
.shrunk code { font-weight: 600; }
.case-body { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 16px; }
.violations { margin: 0; padding: 0; list-style: none; }
.violations li { margin-bottom: 6px; }
.prop { font-weight: 600; color: var(--fail); }
pre { margin: 4px 0; padding: 6px 8px; background: var(--soft); border-radius: 4px; overflow: auto; max-height: 28em; white-space: pre-wrap; overflow-wrap: anywhere; }
.facts { font-size: 12.5px; margin: 6px 0 0; }
.facts dt { font-weight: 600; }
.facts dd { margin: 0 0 4px 12px; white-space: pre-wrap; }
.trace { list-style: none; margin: 0; padding: 0; font-size: 12px; }
.trace li { display: grid; grid-template-columns: 42px 30px minmax(0, 1fr); gap: 6px; padding: 1px 6px; border-left: 4px solid; }
.trace .n { text-align: right; color: var(--muted); font-variant-numeric: tabular-nums; }
.trace .p { font-weight: 600; }
.trace .x { grid-column: 3; }
.trace li.gap { color: var(--muted); font-style: italic; border-left-style: dotted; border-left-color: var(--line); }
.trace li.start { margin-top: 4px; font-weight: 600; }
.trace li.fault { background: var(--fail-bg); border-left-color: var(--fail) !important; outline: 1px solid var(--fail); }
.trace .f { color: var(--fail); font-weight: 700; }
.trace .note { color: var(--muted); font-weight: 400; }
.p0 { border-left-color: #4c78a8 !important; } .p0 .p { color: #4c78a8; }
.p1 { border-left-color: #e37400 !important; } .p1 .p { color: #b35c00; }
.p2 { border-left-color: #2da44e !important; } .p2 .p { color: #1a7f37; }
.p3 { border-left-color: #8250df !important; } .p3 .p { color: #8250df; }
.p4 { border-left-color: #9d755d !important; } .p4 .p { color: #7a5a44; }
.p5 { border-left-color: #1b9e9e !important; } .p5 .p { color: #127575; }
.repro { margin: 8px 0 0; }
.diff-title { margin: 8px 0 0; font-size: 12px; color: var(--muted); }
.more { color: var(--muted); font-style: italic; }
@media (max-width: 900px) { .case-body { grid-template-columns: 1fr; } }
</style>
</head>
<body>
<header>
<h1>chaoskit report</h1>
<p class="meta">schema <b>{{.Schema}}</b> · {{.Campaign}}{{if .DurationMs}} · ran in {{seconds .DurationMs}} s{{end}}</p>
<p class="headline">{{.Headline}}</p>
<ul class="verdicts">{{range .Verdicts}}
<li{{if .Failed}} class="failed"{{end}}><b>{{if .Anchor}}<a href="#{{.Anchor}}">{{.Target}}</a>{{else}}{{.Target}}{{end}}</b>: <span class="line">{{.Line}}</span>{{with .Notes}}<div class="notes">{{range $i, $n := .}}{{if $i}} · {{end}}{{$n}}{{end}}</div>{{end}}</li>{{end}}
</ul>
<div class="cards">
<div class="card"><div class="v">{{.Targets}}</div><div class="k">targets</div></div>
<div class="card"><div class="v">{{.Totals.Cases}}</div><div class="k">cases</div></div>
<div class="card"><div class="v">{{.Totals.Passed}}</div><div class="k">passed</div></div>
<div class="card"><div class="v">{{.Totals.Failed}}</div><div class="k">failed</div></div>
<div class="card{{if .Totals.Unknown}} bad{{end}}"><div class="v">{{.Totals.Unknown}}</div><div class="k">unknown</div></div>
<div class="card"><div class="v">{{.Totals.Detected}}</div><div class="k">detected</div></div>
{{if .Totals.Refused}}<div class="card"><div class="v">{{.Totals.Refused}}</div><div class="k">refused</div></div>
{{end}}{{if .Totals.Unfired}}<div class="card"><div class="v">{{.Totals.Unfired}}</div><div class="k">unfired</div></div>
{{end}}<div class="card"><div class="v">{{.Totals.Duplicates}}</div><div class="k">duplicates</div></div>
<div class="card"><div class="v">{{.Totals.LostEffects}}</div><div class="k">lost effects</div></div>
{{if .Totals.FailedProcesses}}<div class="card"><div class="v">{{.Totals.FailedProcesses}}</div><div class="k">failed processes</div></div>
{{end}}</div>
</header>

<h2>Targets</h2>
{{template "table" .Summary}}

<h2>Charts</h2>
{{if .KindCharts}}<figure><figcaption>Cases and failures per fault kind, for each target</figcaption>
<p class="keys"><span class="key cases"></span>cases whose schedule has the kind <span class="key failed"></span>failed <span class="key unknown"></span>unknown · on a logarithmic scale, so that a few failures among thousands of cases show; the counts are exact</p>
<div class="multiples">
{{range .KindCharts}}{{template "chart" .}}
{{end}}</div></figure>{{end}}
<div class="charts">
{{with .WorkLost}}<figure><figcaption>Work lost: golden beats done again, over all cases</figcaption>{{template "chart" .}}</figure>{{end}}
<figure><figcaption>Duplicate effects per tool</figcaption>{{with .Duplicates}}{{template "chart" .}}{{else}}<p class="muted">No case applied an effect more often than the golden run.</p>{{end}}</figure>
</div>

<h2>By fault kind</h2>
{{template "table" .ByKind}}

<h2>Failing and unknown cases</h2>
{{if .NoProblems}}<p>None: every case passed.</p>{{else}}
<nav><ul>{{range .Problems}}<li><a href="#{{.Anchor}}">{{.Target}}</a>: {{.Counts}}</li>{{end}}</ul></nav>
{{range .Problems}}
<section id="{{.Anchor}}">
<h3>{{.Target}} <span class="muted">· {{.Counts}}</span></h3>
{{range .Cases}}{{template "case" .}}{{end}}
{{with .More}}<p class="more">{{.}}: every case, with its replay command, is in <a href="report.json">report.json</a> beside this page (<code>chaoskit replay --case 'TARGET:SCHEDULE' DIR</code> replays one).</p>{{end}}
</section>
{{end}}{{end}}
</body>
</html>
{{define "table"}}<table>
<thead><tr>{{range .Columns}}<th{{if .Numeric}} class="num"{{end}}>{{.Head}}</th>{{end}}</tr></thead>
<tbody>{{$cols := .Columns}}{{range .Rows}}
<tr>{{range $i, $cell := .}}<td{{if (index $cols $i).Numeric}} class="num"{{end}}>{{$cell}}</td>{{end}}</tr>{{end}}
</tbody>
</table>{{end}}
{{define "chart"}}<svg width="{{num .W}}" height="{{num .H}}" viewBox="0 0 {{num .W}} {{num .H}}" role="img" aria-label="{{.Title}}">
{{range .Lines}}<line x1="{{num .X1}}" y1="{{num .Y1}}" x2="{{num .X2}}" y2="{{num .Y2}}" class="{{.Class}}"/>
{{end}}{{range .Rects}}<rect x="{{num .X}}" y="{{num .Y}}" width="{{num .W}}" height="{{num .H}}" class="{{.Class}}">{{with .Tip}}<title>{{.}}</title>{{end}}</rect>
{{end}}{{range .Labels}}<text x="{{num .X}}" y="{{num .Y}}" class="{{.Class}}" text-anchor="{{.Anchor}}"{{if .Rotate}} transform="rotate(-90 {{num .X}} {{num .Y}})"{{end}}>{{.Text}}{{if .Tail}}<tspan class="{{.TailClass}}">{{.Tail}}</tspan>{{end}}</text>
{{end}}</svg>{{end}}
{{define "case"}}<article class="case {{.Verdict}}">
<h4><code>{{.Schedule}}</code><span class="verdict">{{.Verdict}}</span></h4>
<p class="metrics">{{.Metrics}}</p>
{{with .Deploy}}<p class="deploy">deploy: {{.}}</p>
{{end}}{{with .Shrunk}}<p class="shrunk">Shrunk to <code>{{.}}</code>, which still breaks {{$.Breaks}}{{with $.ShrunkRepro}}: replay it with <code>{{.}}</code>{{end}}</p>
{{end}}<div class="case-body">
<div>
{{if .Violations}}<ul class="violations">{{range .Violations}}<li><span class="prop">{{.Property}}</span><pre>{{.Detail}}</pre></li>{{end}}</ul>{{end}}
{{if or .Reason .Unfired .NotChecked}}<dl class="facts">
{{with .Reason}}<dt>unknown because</dt><dd>{{.}}</dd>{{end}}
{{with .Unfired}}<dt>faults that never fired</dt><dd>{{range $i, $f := .}}{{if $i}}, {{end}}<code>{{$f}}</code>{{end}}</dd>{{end}}
{{with .NotChecked}}<dt>not checked</dt>{{range .}}<dd>{{.}}</dd>{{end}}{{end}}
</dl>{{end}}
</div>
<div>{{if .Trace}}<ol class="trace" aria-label="the beats that explain the case">
{{range .Trace}}{{if .Skipped}}<li class="gap"><span class="n"></span><span class="p"></span><span class="x">{{.Skipped}}</span></li>
{{else if .Marker}}<li class="start p{{.Colour}}"><span class="n"></span><span class="p">p{{.Process}}</span><span class="x">process {{.Process}} starts</span></li>
{{else}}<li class="p{{.Colour}}{{if .Start}} start{{end}}{{if .Fault}} fault{{end}}"><span class="n">{{.Beat}}</span><span class="p">p{{.Process}}</span><span class="x"><span class="mono">{{.Label}}</span>{{with .Fault}} <span class="f">⚡ {{.}}</span>{{end}}{{with .Note}}<br><span class="note">{{.}}</span>{{end}}</span></li>
{{end}}{{end}}</ol>{{else}}<p class="muted">No trace recorded.</p>{{end}}</div>
</div>
<p class="repro">replay{{if .Shrunk}} as found{{end}}: <code>{{.Repro}}</code></p>
{{with .Diff}}<p class="diff-title">diff (-golden +faulty)</p><pre>{{.}}</pre>{{end}}
</article>
{{end}}`
