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
// by refusing to go on, says so in its <system-out>. Times are in seconds, from the report's
// wall-clock durations.
func (r *Report) JUnit(w io.Writer) error {
	doc := junitSuites{Name: "chaoskit"}
	var caseMs float64
	for _, t := range r.targets() {
		s := junitSuiteOf(t)
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Errors += s.Errors
		caseMs += s.ms
		doc.Suites = append(doc.Suites, s)
	}
	doc.Time = seconds(cmp.Or(r.DurationMs, caseMs)) // the campaign's wall-clock time, when the report has it
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("writing JUnit XML: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
	ms       float64
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

func junitSuiteOf(t *targetView) junitSuite {
	s := junitSuite{Name: t.Target}
	for _, c := range t.Cases {
		jc := junitCaseOf(c)
		s.Tests++
		if jc.Failure != nil {
			s.Failures++
		}
		if jc.Error != nil {
			s.Errors++
		}
		s.ms += c.DurationMs
		s.Cases = append(s.Cases, jc)
	}
	s.Time = seconds(s.ms)
	return s
}

func junitCaseOf(c *Case) junitCase {
	jc := junitCase{Classname: "chaoskit." + c.Target, Name: c.Schedule, Time: seconds(c.DurationMs)}
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
		jc.Error = &junitProblem{Message: firstLine(c.Reason), Type: "unknown", Text: failureText(c)}
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
