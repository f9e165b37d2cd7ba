package oracle

import (
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/google/go-cmp/cmp"
)

// maxDiffLines bounds the differences a diff lists; the rest are counted.
const maxDiffLines = 20

// maxValueLen bounds how much of one value a diff line shows.
const maxValueLen = 160

// diff describes how y differs from x, one line per difference, "PATH: -X +Y", or returns ""
// when they are equal under opts. It is built by a cmp.Reporter of its own rather than taken
// from cmp.Diff, whose text go-cmp deliberately keeps unstable (it even switches between
// spaces and non-breaking spaces from one process to the next): reports must be byte-identical
// from run to run. Addresses are never printed.
//
// Identical values are equal whatever the options, so reflect.DeepEqual answers first: go-cmp,
// which is slow, runs only when there is a difference to explain or an option to apply. diff
// panics, as go-cmp does, on values it cannot compare (unexported fields without an option).
func diff(x, y any, opts []cmp.Option) string {
	if reflect.DeepEqual(x, y) {
		return ""
	}
	var r diffReporter
	if cmp.Equal(x, y, append(opts[:len(opts):len(opts)], cmp.Reporter(&r))...) {
		return ""
	}
	lines := r.lines
	if len(lines) > maxDiffLines {
		lines = append(lines[:maxDiffLines:maxDiffLines], fmt.Sprintf("… and %d more differences", len(r.lines)-maxDiffLines))
	}
	if len(lines) == 0 { // unequal, yet no leaf differs: report the whole values
		lines = []string{"(value): -" + formatValue(reflect.ValueOf(x)) + " +" + formatValue(reflect.ValueOf(y))}
	}
	return strings.Join(lines, "\n")
}

// diffReporter records each difference go-cmp finds, with its path.
type diffReporter struct {
	path  cmp.Path
	lines []string
}

func (r *diffReporter) PushStep(ps cmp.PathStep) { r.path = append(r.path, ps) }

func (r *diffReporter) PopStep() { r.path = r.path[:len(r.path)-1] }

func (r *diffReporter) Report(rs cmp.Result) {
	if rs.Equal() {
		return
	}
	vx, vy := r.path.Last().Values()
	r.lines = append(r.lines, pathString(r.path)+": -"+formatValue(vx)+" +"+formatValue(vy))
}

// pathString writes a path as a reader would: ".Ledger[2].Status", `["po"]`, "[3->?]" for an
// element only the golden value has.
func pathString(p cmp.Path) string {
	var b strings.Builder
	for _, step := range p[1:] { // the first step is the root
		switch s := step.(type) {
		case cmp.StructField:
			b.WriteString("." + s.Name())
		case cmp.SliceIndex:
			ix, iy := s.SplitKeys()
			switch {
			case ix == iy:
				fmt.Fprintf(&b, "[%d]", ix)
			case iy < 0:
				fmt.Fprintf(&b, "[%d->?]", ix)
			case ix < 0:
				fmt.Fprintf(&b, "[?->%d]", iy)
			default:
				fmt.Fprintf(&b, "[%d->%d]", ix, iy)
			}
		case cmp.MapIndex:
			b.WriteString("[" + formatValue(s.Key()) + "]")
		case cmp.TypeAssertion, cmp.Indirect, cmp.Transform:
			// no text: the path reads the same through a pointer, interface or transform
		}
	}
	if b.Len() == 0 {
		return "(value)"
	}
	return b.String()
}

// formatValue prints a value on one line, without addresses, clipped to maxValueLen.
func formatValue(v reflect.Value) string {
	var s string
	switch {
	case !v.IsValid():
		return "(none)"
	case v.Kind() == reflect.String:
		s = strconv.Quote(v.String())
	default:
		for v.Kind() == reflect.Pointer && !v.IsNil() {
			v = v.Elem()
		}
		s = address.ReplaceAllString(fmt.Sprintf("%+v", v), "0x…")
		s = strings.ReplaceAll(s, "\n", `\n`)
	}
	if r := []rune(s); len(r) > maxValueLen {
		s = string(r[:maxValueLen-1]) + "…"
	}
	return s
}

var address = regexp.MustCompile(`0x[0-9a-f]{6,}`)
