package oracle

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/google/go-cmp/cmp"
)

// maxDiffLines bounds the differences a diff lists; the rest are counted.
const maxDiffLines = 20

// maxValueLen bounds how much of one value a diff line shows.
const maxValueLen = 160

// diff describes how y differs from x, one line per difference, "PATH: -X +Y", or returns ""
// when they are equal under opts. go-cmp decides equality, honouring the target's options, but
// the text is not go-cmp's: its report is deliberately unstable (it switches between spaces and
// non-breaking spaces from one process to the next, and aligns slices in a direction it draws at
// random), and reports must be byte-identical from run to run. The text comes from a walk of the
// two values of its own, in a fixed order (struct fields in order, map keys sorted, slices index
// by index), descending wherever go-cmp finds the two sides unequal. Addresses are never
// printed.
//
// Identical values are equal whatever the options, so reflect.DeepEqual answers first: go-cmp,
// which is slow, runs only when there is a difference to explain or an option to apply. diff
// panics, as go-cmp does, on values it cannot compare (unexported fields without an option).
func diff(x, y any, opts []cmp.Option) string {
	if reflect.DeepEqual(x, y) || cmp.Equal(x, y, opts...) {
		return ""
	}
	w := differ{opts: opts}
	w.walk("", reflect.ValueOf(x), reflect.ValueOf(y))
	lines := w.lines
	if len(lines) > maxDiffLines {
		lines = append(lines[:maxDiffLines:maxDiffLines], fmt.Sprintf("… and %d more differences", len(w.lines)-maxDiffLines))
	}
	return strings.Join(lines, "\n")
}

// differ walks two values that differ, recording a line for each difference it reaches.
type differ struct {
	opts  []cmp.Option
	lines []string
}

// equal reports whether two values are equal under the options.
func (d *differ) equal(x, y reflect.Value) bool {
	if !x.IsValid() || !y.IsValid() {
		return x.IsValid() == y.IsValid()
	}
	if x.CanInterface() && y.CanInterface() {
		return cmp.Equal(x.Interface(), y.Interface(), d.opts...)
	}
	return reflect.DeepEqual(x, y) // an unexported field: its struct's options already applied
}

func (d *differ) leaf(path string, x, y reflect.Value) {
	if path == "" {
		path = "(value)"
	}
	d.lines = append(d.lines, path+": -"+formatValue(x)+" +"+formatValue(y))
}

// walk records the differences between x and y, which differ, at path.
func (d *differ) walk(path string, x, y reflect.Value) {
	before := len(d.lines)
	if x.IsValid() && y.IsValid() && x.Type() == y.Type() {
		switch x.Kind() {
		case reflect.Pointer, reflect.Interface:
			if !x.IsNil() && !y.IsNil() {
				d.walk(path, x.Elem(), y.Elem())
			}
		case reflect.Struct:
			for i := range x.NumField() {
				if fx, fy := x.Field(i), y.Field(i); !d.equal(fx, fy) {
					d.walk(path+"."+x.Type().Field(i).Name, fx, fy)
				}
			}
		case reflect.Map:
			keys := map[string]reflect.Value{}
			for _, k := range append(x.MapKeys(), y.MapKeys()...) {
				keys[formatValue(k)] = k
			}
			for _, name := range slices.Sorted(maps.Keys(keys)) {
				k := keys[name]
				if vx, vy := x.MapIndex(k), y.MapIndex(k); !d.equal(vx, vy) {
					d.walk(path+"["+name+"]", vx, vy)
				}
			}
		case reflect.Slice, reflect.Array:
			for i := range max(x.Len(), y.Len()) {
				var vx, vy reflect.Value
				if i < x.Len() {
					vx = x.Index(i)
				}
				if i < y.Len() {
					vy = y.Index(i)
				}
				if !d.equal(vx, vy) {
					d.walk(path+"["+strconv.Itoa(i)+"]", vx, vy)
				}
			}
		}
	}
	if len(d.lines) == before { // a leaf, or unequal as a whole (a comparer said so)
		d.leaf(path, x, y)
	}
}

// formatValue prints a value on one line, without addresses, clipped to maxValueLen.
func formatValue(v reflect.Value) string {
	var s string
	switch {
	case !v.IsValid():
		return "(none)"
	case v.Type() == jsonNumber:
		s = v.String() // a number as JSON wrote it: 3, not "3"
	case v.Kind() == reflect.String:
		s = strconv.Quote(v.String())
	default:
		for v.Kind() == reflect.Pointer && !v.IsNil() || v.Kind() == reflect.Interface && !v.IsNil() {
			v = v.Elem()
		}
		if v.Kind() == reflect.String {
			return formatValue(v)
		}
		if js, ok := asJSON(v); ok { // a state command's document, or one like it
			s = js
			break
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

var jsonNumber = reflect.TypeFor[json.Number]()

// asJSON prints v as JSON if it is a JSON object or list as encoding/json decodes one into an
// any (map[string]any or []any, not nil, made only of what decodedJSON accepts), with < and >
// as they are.
func asJSON(v reflect.Value) (string, bool) {
	if !v.CanInterface() || (v.Kind() != reflect.Map && v.Kind() != reflect.Slice) || v.IsNil() || !decodedJSON(v.Interface()) {
		return "", false
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v.Interface()); err != nil {
		return "", false
	}
	return strings.TrimSuffix(b.String(), "\n"), true
}

// decodedJSON reports whether v is made only of what encoding/json decodes into an any (maps of
// strings, slices, strings, numbers, booleans, nil), so that printing it as JSON shows all of it.
func decodedJSON(v any) bool {
	switch v := v.(type) {
	case nil, string, json.Number, float64, bool:
		return true
	case map[string]any:
		for _, e := range v {
			if !decodedJSON(e) {
				return false
			}
		}
		return true
	case []any:
		for _, e := range v {
			if !decodedJSON(e) {
				return false
			}
		}
		return true
	}
	return false
}
