package reports

import (
	"fmt"
	"io"
	"strings"
	"unicode"
)

// markdownCasesPerTarget is how many failing cases Markdown lists for each target.
const markdownCasesPerTarget = 5

// Markdown writes a summary of r in GitHub-flavoured Markdown, fit for a pull-request comment or
// $GITHUB_STEP_SUMMARY: a heading with the campaign and its totals, a table with a row per target,
// a compact table with a row per fault kind, then, for each target with failing or unknown cases,
// the first few of them with their first violation and the command that replays them. The tables
// gain a column of the model calls asked again when a case asked one again, and columns of the
// upgrade cases marked stranded, duplicated and replanned when the report has upgrade cases; a
// failing upgrade case listed says its marks in words. The output is a pure function of r.
func (r *Report) Markdown(w io.Writer) error {
	v, err := r.view(markdownCasesPerTarget)
	if err != nil {
		return err
	}
	return r.markdown(v, w)
}

// markdown writes the Markdown summary of r from v, a view keeping at least
// markdownCasesPerTarget problems per target.
func (r *Report) markdown(v *view, w io.Writer) error {
	var b strings.Builder
	targets, total := v.targets, &v.totals
	fmt.Fprintf(&b, "# chaoskit report\n\n%s\n\n**%s**\n\n", mdText(r.campaignLine()), mdText(totalsLine(total, len(targets))))
	if len(r.Options.ExpectFail) > 0 { // failures that are meant: say so before a reader takes fright
		fmt.Fprintf(&b, "%s.\n\n", mdText(failedLine(total, targets, r.Options.ExpectFail)))
	}
	b.WriteString("## Targets\n\n")
	writeMarkdownTable(&b, v.targetTable())
	writeMarkdownNotes(&b, targets)
	b.WriteString("\n## By fault kind\n\n")
	writeMarkdownTable(&b, v.kindTable())
	b.WriteString("\n## Failures\n")
	if total.Failed+total.Unknown == 0 {
		b.WriteString("\nNone: every case passed.\n")
	}
	for _, t := range targets {
		writeMarkdownProblems(&b, t)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeMarkdownTable(b *strings.Builder, t table) {
	head, rule := make([]string, len(t.Columns)), make([]string, len(t.Columns))
	for i, c := range t.Columns {
		head[i], rule[i] = mdText(c.Head), "---"
		if c.Numeric {
			rule[i] = "---:"
		}
	}
	writeMarkdownRow(b, head)
	writeMarkdownRow(b, rule)
	for _, row := range t.Rows {
		cells := make([]string, len(row))
		for i, cell := range row {
			cells[i] = mdText(cell)
		}
		writeMarkdownRow(b, cells)
	}
}

func writeMarkdownRow(b *strings.Builder, cells []string) {
	fmt.Fprintf(b, "| %s |\n", strings.Join(cells, " | "))
}

// writeMarkdownNotes writes, under the table of targets, a line per target with what its
// verdicts do not say: the properties not checked in some cases and why, unfired faults, refusals,
// failed processes.
func writeMarkdownNotes(b *strings.Builder, targets []*targetView) {
	first := true
	for _, t := range targets {
		notes := targetNotes(t)
		if len(notes) == 0 {
			continue
		}
		if first {
			b.WriteString("\nNot checked, and other notes:\n\n")
			first = false
		}
		fmt.Fprintf(b, "- %s: %s\n", mdText(t.Target), mdText(strings.Join(notes, "; ")))
	}
}

func writeMarkdownProblems(b *strings.Builder, t *targetView) {
	if len(t.Problems) == 0 {
		return
	}
	fmt.Fprintf(b, "\n### %s: %s\n\n", mdText(t.Target), problemsLine(&t.Stats))
	shown := t.Problems[:min(len(t.Problems), markdownCasesPerTarget)]
	for _, c := range shown {
		fmt.Fprintf(b, "- %s — %s", mdCode(c.Schedule.String()), mdText(headline(c)))
		if marks := deployMarks(c); marks != "" {
			fmt.Fprintf(b, "\\\n  deploy: %s", mdText(marks))
		}
		if s := shrunk(c); s != "" {
			// The shrunk schedule is the one to read and replay: it comes first.
			fmt.Fprintf(b, "\\\n  **shrunk to %s**, which still breaks %s", mdCode(s), mdText(firstProperty(c)))
			if cmd := shrunkRepro(c); cmd != "" {
				fmt.Fprintf(b, "; replay it: %s", mdCode(cmd))
			}
		}
		fmt.Fprintf(b, "\\\n  replay: %s\n", mdCode(c.Repro))
	}
	if more := moreNotShown(t.Failed+t.Unknown, len(shown)); more != "" {
		fmt.Fprintf(b, "- %s\n", more)
	}
}

// mdEscaper escapes the characters that Markdown would read as formatting, and "|", which would
// end a table cell.
var mdEscaper = strings.NewReplacer(`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "~", `\~`,
	"[", `\[`, "]", `\]`, "<", `\<`, ">", `\>`, "|", `\|`)

// mdText returns s as Markdown text on one line that reads as s.
func mdText(s string) string { return mdEscaper.Replace(flatten(s)) }

// mdCode returns s as a Markdown code span on one line, fenced with more backticks than s holds
// in a row. (It is not for table cells: in a code span outside a table, "\|" would show as is.)
func mdCode(s string) string {
	s = blankControls(s)
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + s + fence
}

// flatten puts s on one line, with single spaces between its words.
func flatten(s string) string { return strings.Join(strings.Fields(blankControls(s)), " ") }

// blankControls turns the control characters of s, line breaks among them, into spaces.
func blankControls(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}
