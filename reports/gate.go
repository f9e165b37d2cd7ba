package reports

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/chaoskit/chaoskit/oracle"
)

// Gate is a list of comparisons that a report's summary must satisfy, written
//
//	gate       = comparison { "," comparison }
//	comparison = metric [ "{" selector { "," selector } "}" ] op number
//	selector   = "target=" NAME | "target=" PREFIX "*" | "fault=" KIND
//	op         = "==" | "!=" | "<" | "<=" | ">" | ">="
//
// with spaces allowed between the parts, e.g.
//
//	duplicates==0, lost_effects==0, work_lost_beats_mean{fault=power}<=1, failed{target=reference}==0
//
// A metric is a field of the summary (StatFields: cases, failed, duplicates,
// work_lost_beats_mean, ...) or a property name (no-duplicate-effects, ...), which stands for
// the number of cases that violated it. Without a selector a comparison holds for every target,
// over its totals and over the totals of each fault kind; target= keeps the targets named (a
// trailing * matches every target with that prefix), fault= keeps only that fault kind's totals.
type Gate []comparison

// comparison is one comparison of a Gate.
type comparison struct {
	metric string
	target string // "" for every target; a trailing "*" matches a prefix
	fault  string // "" for the totals and every fault kind
	op     string
	value  float64
}

// gateOps are the comparison operators, longest first so that "<=" is not read as "<".
var gateOps = []string{"==", "!=", "<=", ">=", "<", ">"}

// GateSyntaxError reports a malformed gate, pointing at the offending byte, as
// faults.SyntaxError does for schedules.
type GateSyntaxError struct {
	Input string
	Pos   int // byte offset of the problem in Input
	Msg   string
}

func (e *GateSyntaxError) Error() string {
	return fmt.Sprintf("gate %q, column %d: %s", e.Input, e.Pos+1, e.Msg)
}

// gateParser parses a gate against the targets and fault kinds of a campaign, which its
// selectors must name.
type gateParser struct {
	in      string
	i       int
	targets []string
	faults  []string
}

// ParseGate parses a gate for a campaign of the given options, whose targets and fault kinds
// its selectors must name; the empty string is no gate (nil). Errors are *GateSyntaxError
// values.
func ParseGate(text string, opts Options) (Gate, error) {
	if strings.TrimSpace(text) == "" {
		return nil, nil
	}
	p := &gateParser{in: text, targets: opts.Targets, faults: opts.Faults}
	var g Gate
	for {
		c, err := p.comparison()
		if err != nil {
			return nil, err
		}
		g = append(g, c)
		p.space()
		if p.i == len(p.in) {
			return g, nil
		}
		if p.in[p.i] != ',' {
			return nil, p.errorf(p.i, "unexpected %q after a comparison (separate comparisons with commas)", p.in[p.i])
		}
		p.i++
	}
}

func (p *gateParser) errorf(pos int, format string, args ...any) error {
	return &GateSyntaxError{p.in, pos, fmt.Sprintf(format, args...)}
}

func (p *gateParser) space() {
	for p.i < len(p.in) && p.in[p.i] == ' ' {
		p.i++
	}
}

// take consumes the longest run of bytes that ok accepts and returns it.
func (p *gateParser) take(ok func(b byte) bool) string {
	start := p.i
	for p.i < len(p.in) && ok(p.in[p.i]) {
		p.i++
	}
	return p.in[start:p.i]
}

// next describes what comes next in the input, for error messages.
func (p *gateParser) next() string {
	if p.i == len(p.in) {
		return "the end"
	}
	return strconv.Quote(p.in[p.i : p.i+1])
}

func isNameByte(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '_' || b == '-'
}

func isValueByte(b byte) bool { return isNameByte(b) || strings.IndexByte("./:*+@", b) >= 0 }

func isDigit(b byte) bool { return '0' <= b && b <= '9' }

func (p *gateParser) comparison() (comparison, error) {
	var c comparison
	p.space()
	start := p.i
	if c.metric = p.take(isNameByte); c.metric == "" {
		if p.i == len(p.in) || p.in[p.i] == ',' {
			return c, p.errorf(p.i, "empty comparison (two commas in a row, or a trailing comma?)")
		}
		return c, p.errorf(p.i, "want a metric name, not %s", p.next())
	}
	if !slices.Contains(StatFields(), c.metric) && !slices.Contains(oracle.Properties(), c.metric) {
		return c, p.errorf(start, "unknown metric %q (known: %s; or a property: %s)", c.metric,
			strings.Join(StatFields(), ", "), strings.Join(oracle.Properties(), ", "))
	}
	p.space()
	if p.i < len(p.in) && p.in[p.i] == '{' {
		p.i++
		if err := p.selectors(&c); err != nil {
			return c, err
		}
		p.space()
	}
	for _, op := range gateOps {
		if strings.HasPrefix(p.in[p.i:], op) {
			c.op = op
			p.i += len(op)
			break
		}
	}
	if c.op == "" {
		if strings.HasPrefix(p.in[p.i:], "=") {
			return c, p.errorf(p.i, "a single = compares nothing: write ==")
		}
		return c, p.errorf(p.i, "want a comparison (%s) after %s, not %s", strings.Join(gateOps, " "), c.metric, p.next())
	}
	p.space()
	numStart := p.i
	num := p.take(isDigit)
	if num != "" && p.i < len(p.in) && p.in[p.i] == '.' {
		p.i++
		frac := p.take(isDigit)
		if frac == "" {
			return c, p.errorf(p.i, "want digits after the decimal point")
		}
		num += "." + frac
	}
	if num == "" {
		return c, p.errorf(numStart, "want a number after %s, not %s", c.op, p.next())
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return c, p.errorf(numStart, "number %s is out of range", num)
	}
	c.value = v
	return c, nil
}

// selectors parses the selectors of c, after its "{", through the closing "}".
func (p *gateParser) selectors(c *comparison) error {
	for {
		p.space()
		keyStart := p.i
		key := p.take(isNameByte)
		if key != "target" && key != "fault" {
			if key == "" {
				return p.errorf(keyStart, "want target= or fault= in {…}, not %s", p.next())
			}
			return p.errorf(keyStart, "unknown selector %q: want target= or fault=", key)
		}
		p.space()
		if p.i == len(p.in) || p.in[p.i] != '=' {
			return p.errorf(p.i, "want = after %s, not %s", key, p.next())
		}
		p.i++
		p.space()
		valStart := p.i
		val := p.take(isValueByte)
		if val == "" {
			return p.errorf(valStart, "want a %s name after %s=, not %s", key, key, p.next())
		}
		if err := p.selector(c, key, val, keyStart, valStart); err != nil {
			return err
		}
		p.space()
		switch {
		case p.i == len(p.in):
			return p.errorf(p.i, "{ is never closed: want }")
		case p.in[p.i] == '}':
			p.i++
			return nil
		case p.in[p.i] != ',':
			return p.errorf(p.i, "unexpected %s in {…}: want , or }", p.next())
		}
		p.i++
	}
}

// selector sets c's selector key to val, checking that the campaign has what val names.
func (p *gateParser) selector(c *comparison, key, val string, keyStart, valStart int) error {
	field := &c.target
	if key == "fault" {
		field = &c.fault
	}
	if *field != "" {
		return p.errorf(keyStart, "%s= given twice", key)
	}
	*field = val
	if key == "fault" && !slices.Contains(p.faults, val) {
		return p.errorf(valStart, "fault kind %q is not in this campaign (its fault kinds: %s)", val, strings.Join(p.faults, ", "))
	}
	if key == "target" && !slices.ContainsFunc(p.targets, c.selects) {
		return p.errorf(valStart, "target %q is not in this campaign (its targets: %s)", val, strings.Join(p.targets, ", "))
	}
	return nil
}

// selects reports whether c applies to the named target.
func (c *comparison) selects(target string) bool {
	if prefix, ok := strings.CutSuffix(c.target, "*"); ok {
		return strings.HasPrefix(target, prefix)
	}
	return c.target == "" || c.target == target
}

// String returns the comparison in its canonical text form.
func (c comparison) String() string {
	var sel []string
	if c.target != "" {
		sel = append(sel, "target="+c.target)
	}
	if c.fault != "" {
		sel = append(sel, "fault="+c.fault)
	}
	s := c.metric
	if len(sel) > 0 {
		s += "{" + strings.Join(sel, ",") + "}"
	}
	return s + c.op + strconv.FormatFloat(c.value, 'f', -1, 64)
}

// String returns the gate in its canonical text form, which parses back to the same gate.
func (g Gate) String() string {
	parts := make([]string, len(g))
	for i, c := range g {
		parts[i] = c.String()
	}
	return strings.Join(parts, ",")
}

// holds reports whether x op c.value.
func (c comparison) holds(x float64) bool {
	switch c.op {
	case "==":
		return x == c.value
	case "!=":
		return x != c.value
	case "<":
		return x < c.value
	case "<=":
		return x <= c.value
	case ">":
		return x > c.value
	}
	return x >= c.value
}

// Check evaluates the gate over rep's summary and returns how many comparisons it made and a
// line for each that failed, naming the target, the fault kind and the actual value, e.g.
// "reference [power]: work_lost_beats_mean is 3.076, want <= 2".
func (g Gate) Check(rep *Report) (checked int, failures []string) {
	for _, c := range g {
		for _, t := range rep.Summary.Targets {
			if !c.selects(t.Target) {
				continue
			}
			if c.fault == "" {
				checked++
				failures = append(failures, c.failure(t.Target, &t.Stats)...)
			}
			for _, k := range rep.Options.Faults {
				if s, ok := t.ByFault[k]; ok && (c.fault == "" || c.fault == k) {
					checked++
					failures = append(failures, c.failure(t.Target+" ["+k+"]", &s)...)
				}
			}
		}
	}
	return checked, failures
}

// failure returns a line saying how s fails c, or nothing if it does not. A comparison of a
// metric that s does not measure (work lost, of a target that makes no progress marks) fails,
// saying so: a gate on work lost must not hold for want of a measure.
func (c comparison) failure(where string, s *Stats) []string {
	if !s.Measured(c.metric) {
		return []string{fmt.Sprintf("%s: %s was not measured: its cases made no progress marks (mark each durable step), so %s %s cannot be checked",
			where, c.metric, c.op, strconv.FormatFloat(c.value, 'f', -1, 64))}
	}
	x, ok := s.Value(c.metric)
	if !ok {
		x = float64(s.Violations[c.metric])
	}
	if c.holds(x) {
		return nil
	}
	return []string{fmt.Sprintf("%s: %s is %s, want %s %s", where, c.metric,
		strconv.FormatFloat(x, 'f', -1, 64), c.op, strconv.FormatFloat(c.value, 'f', -1, 64))}
}

// ParseTolerances parses the value of --tolerance: comma-separated NAME=AMOUNT, where NAME is
// one of RegressionMetrics, a property, or * for every other, and AMOUNT is an absolute
// amount (2, 0.5) or a percentage of the baseline's value (10%).
func ParseTolerances(list string) (CompareOptions, error) {
	var opts CompareOptions
	if strings.TrimSpace(list) == "" {
		return opts, nil
	}
	opts.Tolerances = map[string]Tolerance{}
	for _, item := range strings.Split(list, ",") {
		name, amount, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			return opts, fmt.Errorf("tolerance %q: %q is not NAME=AMOUNT", list, item)
		}
		if name != "*" && !slices.Contains(RegressionMetrics(), name) && !slices.Contains(oracle.Properties(), name) {
			return opts, fmt.Errorf("tolerance %q: unknown metric %q (known: %s; a property: %s; or * for the rest)", list, name,
				strings.Join(RegressionMetrics(), ", "), strings.Join(oracle.Properties(), ", "))
		}
		pct, rel := strings.CutSuffix(amount, "%")
		x, err := strconv.ParseFloat(pct, 64)
		if err != nil || !(x >= 0 && x <= 1e12) { // NaN fails too
			return opts, fmt.Errorf("tolerance %q: %s's amount %q is not a number of 0 or more, or a percentage such as 10%%", list, name, amount)
		}
		t := Tolerance{Abs: x}
		if rel {
			t = Tolerance{Rel: x / 100}
		}
		if name == "*" {
			opts.Default = t
		} else {
			opts.Tolerances[name] = t
		}
	}
	return opts, nil
}
