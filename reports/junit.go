package reports

import (
	"cmp"
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"github.com/chaoskit/chaoskit/oracle"
)

// JUnit writes r as JUnit XML, the format CI systems (Jenkins, GitLab, GitHub test reporters)
// read test results in: a <testsuites> element named "chaoskit" holding one <testsuite> per
// target, in report order, holding one <testcase> per case, named by its schedule, with class
// name "chaoskit.TARGET". A failed case carries a <failure> whose message is its first violation
// and whose text lists every violation and the command that replays it; a failure that a random
// campaign shrank starts its message with the shrunk schedule ("shrunk to power@74: ...") and its
// text with the command that replays that schedule. An unknown case carries an <error> of type
// "unknown" with the reason; a case that passed by stopping loudly on an unrecoverable fault, or
// by refusing to go on, says so in its <system-out>. Times are in seconds: a test case's is the
// case's wall-clock time; <testsuites>'s is the campaign's, and each <testsuite>'s its share of
// it, in proportion to its cases' times (the cases run side by side, on several workers, so
// their times add up to more than the campaign took). A report without the campaign's time
// (DurationMs 0) gives each suite the sum of its cases' times.
//
// It reads r's cases twice, keeping none: once to count them, and once to write them.
func (r *Report) JUnit(w io.Writer) error {
	v, err := r.view(0)
	if err != nil {
		return err
	}
	return r.junit(v, w)
}

// junit writes r as JUnit XML, from v for the suites' counts and order: in one more pass over
// the cases when they come grouped by target, as chaoskit writes them, else one per suite.
func (r *Report) junit(v *view, w io.Writer) error {
	suites := make([]junitSuite, len(v.targets))
	at := map[string]int{}
	for i, t := range v.targets {
		suites[i] = junitSuite{Name: t.Target, Tests: t.tests, Failures: t.failures, Errors: t.errors, ms: t.ms, unmeasured: !t.WorkLostMeasured()}
		at[t.Target] = i
	}
	grouped := v.grouped
	var err error
	doc := junitSuites{Name: "chaoskit"}
	var caseMs float64
	for _, s := range suites {
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Errors += s.Errors
		caseMs += s.ms
	}
	doc.Time = seconds(cmp.Or(r.DurationMs, caseMs)) // the campaign's wall-clock time, when the report has it
	if r.DurationMs > 0 && caseMs > 0 {
		// Cases run side by side, so their times add up to more than the campaign took: each
		// suite gets its share of the campaign's wall-clock time, by its cases' times.
		for i := range suites {
			suites[i].ms = r.DurationMs * suites[i].ms / caseMs
		}
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	top := xml.StartElement{Name: xml.Name{Local: "testsuites"}, Attr: attrs("name", doc.Name, "tests", doc.Tests,
		"failures", doc.Failures, "errors", doc.Errors, "time", doc.Time)}
	if err := enc.EncodeToken(top); err != nil {
		return fmt.Errorf("writing JUnit XML: %w", err)
	}
	open := -1 // the suite whose element is open
	openSuite := func(i int) error {
		if open >= 0 {
			if err := enc.EncodeToken(xml.EndElement{Name: xml.Name{Local: "testsuite"}}); err != nil {
				return err
			}
		}
		for open++; open <= i; open++ {
			s := &suites[open]
			start := xml.StartElement{Name: xml.Name{Local: "testsuite"}, Attr: attrs("name", s.Name, "tests", s.Tests,
				"failures", s.Failures, "errors", s.Errors, "skipped", s.Skipped, "time", seconds(s.ms))}
			if err := enc.EncodeToken(start); err != nil {
				return err
			}
			if s.unmeasured {
				if err := enc.EncodeElement(junitProperties{[]junitProperty{{"work_lost_beats_mean", notMeasured + ": its cases made no progress marks"}}},
					xml.StartElement{Name: xml.Name{Local: "properties"}}); err != nil {
					return err
				}
			}
			if open < i {
				if err := enc.EncodeToken(start.End()); err != nil {
					return err
				}
			}
		}
		open = i
		return nil
	}
	testcase := xml.StartElement{Name: xml.Name{Local: "testcase"}}
	writeCase := func(c *Case) error { return enc.EncodeElement(junitCaseOf(c), testcase) }
	if grouped {
		err = r.Each(func(c *Case) error {
			if i := at[c.Target]; i != open {
				if err := openSuite(i); err != nil {
					return err
				}
			}
			return writeCase(c)
		})
	} else {
		for i := range suites {
			if err = openSuite(i); err != nil {
				break
			}
			err = r.Each(func(c *Case) error {
				if c.Target != suites[i].Name {
					return nil
				}
				return writeCase(c)
			})
			if err != nil {
				break
			}
		}
	}
	if err == nil && open < len(suites)-1 {
		err = openSuite(len(suites) - 1) // and those before it, with no cases
	}
	if err == nil && open >= 0 {
		err = enc.EncodeToken(xml.EndElement{Name: xml.Name{Local: "testsuite"}})
	}
	if err == nil {
		err = enc.EncodeToken(top.End())
	}
	if err == nil {
		err = enc.Flush()
	}
	if err != nil {
		return fmt.Errorf("writing JUnit XML: %w", err)
	}
	_, err = io.WriteString(w, "\n")
	return err
}

// attrs returns XML attributes from names and values, in order.
func attrs(pairs ...any) []xml.Attr {
	var out []xml.Attr
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, xml.Attr{Name: xml.Name{Local: pairs[i].(string)}, Value: fmt.Sprint(pairs[i+1])})
	}
	return out
}

// junitSuites and junitSuite are the attributes of <testsuites> and <testsuite>.
type junitSuites struct {
	Name                    string
	Tests, Failures, Errors int
	Time                    string
}

type junitSuite struct {
	Name                             string
	Tests, Failures, Errors, Skipped int
	ms                               float64
	unmeasured                       bool // its work lost was not measured: said in a property
}

// junitProperties is a suite's <properties>: what it says of the suite beyond its cases.
type junitProperties struct {
	Property []junitProperty `xml:"property"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Classname string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure"`
	Error     *junitProblem `xml:"error"`
	SystemOut string        `xml:"system-out,omitempty"`
}

// junitProblem is a <failure> or an <error>.
type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

func junitCaseOf(c *Case) junitCase {
	jc := junitCase{Classname: "chaoskit." + c.Target, Name: c.Schedule.String(), Time: seconds(c.DurationMs)}
	switch {
	case c.Verdict == oracle.Fail:
		jc.Failure = &junitProblem{Message: headline(c), Type: "fail", Text: failureText(c)}
		if len(c.Violations) > 0 {
			jc.Failure.Message = oneLine(c.Violations[0])
			jc.Failure.Type = c.Violations[0].Property
		}
		if s := shrunk(c); s != "" {
			jc.Failure.Message = "shrunk to " + s + ": " + jc.Failure.Message
		}
	case c.Verdict != oracle.Pass:
		jc.Error = &junitProblem{Message: gist(c.Reason), Type: "unknown", Text: failureText(c)}
	case c.Detected != "":
		jc.SystemOut = "passed by stopping loudly on an unrecoverable fault: " + c.Detected
	case c.Refused != "":
		jc.SystemOut = "passed by refusing to go on without a person: " + c.Refused
	}
	return jc
}

// failureText is the body of a case's <failure> or <error>: every violation, or the reason it is
// unknown, then what else a reader needs to reproduce it.
func failureText(c *Case) string {
	var b strings.Builder
	if s := shrunk(c); s != "" { // the schedule to read and replay first
		fmt.Fprintf(&b, "shrunk to %s, which still breaks %s\n", s, firstProperty(c))
		if cmd := shrunkRepro(c); cmd != "" {
			fmt.Fprintf(&b, "replay shrunk: %s\n", cmd)
		}
		fmt.Fprintf(&b, "as found, %s:\n", c.Schedule)
	}
	for _, v := range c.Violations {
		fmt.Fprintf(&b, "%s: %s\n", v.Property, strings.TrimSpace(v.Detail))
	}
	if c.Verdict == oracle.Unknown {
		fmt.Fprintf(&b, "unknown: %s\n", strings.TrimSpace(c.Reason))
	}
	for _, n := range c.NotChecked {
		fmt.Fprintf(&b, "not checked: %s\n", n)
	}
	fmt.Fprintf(&b, "replay: %s\n", c.Repro)
	return b.String()
}
