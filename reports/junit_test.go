package reports

import (
	"bytes"
	"encoding/xml"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/internal/needs"
	"github.com/chaoskit/chaoskit/oracle"
)

// The JUnit XML as a CI system reads it, declared apart from junit.go's types so that the test
// does not trust them. Required attributes are pointers, so that a missing one shows.
type parsedSuites struct {
	XMLName xml.Name `xml:"testsuites"`
	parsedTotals
	Suites []parsedSuite `xml:"testsuite"`
}

type parsedSuite struct {
	parsedTotals
	Skipped *int         `xml:"skipped,attr"`
	Cases   []parsedCase `xml:"testcase"`
}

// parsedTotals are the attributes that <testsuites> and <testsuite> share.
type parsedTotals struct {
	parsedNamed
	Tests    *int `xml:"tests,attr"`
	Failures *int `xml:"failures,attr"`
	Errors   *int `xml:"errors,attr"`
}

// parsedNamed are the attributes that every element but <failure> and <error> has.
type parsedNamed struct {
	Name *string `xml:"name,attr"`
	Time *string `xml:"time,attr"`
}

// totals returns the attributes, failing t when one is missing or time is not in seconds with
// three decimals.
func (p parsedTotals) totals(t *testing.T) (name string, tests, failures, errors int) {
	t.Helper()
	if p.Name == nil || p.Tests == nil || p.Failures == nil || p.Errors == nil || p.Time == nil {
		t.Fatalf("missing attributes: %+v", p)
	}
	if !secondsAttr.MatchString(*p.Time) {
		t.Errorf("time=%q, want seconds with three decimals", *p.Time)
	}
	return *p.Name, *p.Tests, *p.Failures, *p.Errors
}

type parsedCase struct {
	parsedNamed
	Classname *string        `xml:"classname,attr"`
	Failure   *parsedProblem `xml:"failure"`
	Error     *parsedProblem `xml:"error"`
	SystemOut *string        `xml:"system-out"`
}

type parsedProblem struct {
	Message *string `xml:"message,attr"`
	Type    *string `xml:"type,attr"`
	Text    string  `xml:",chardata"`
}

var secondsAttr = regexp.MustCompile(`^[0-9]+\.[0-9]{3}$`)

func TestJUnitParsesBack(t *testing.T) {
	r := demoReport(t)
	out := render(t, r, (*Report).JUnit)
	if !bytes.HasPrefix(out, []byte(`<?xml version="1.0" encoding="UTF-8"?>`)) {
		t.Errorf("no XML declaration: %.80s", out)
	}
	var doc parsedSuites
	if err := xml.Unmarshal(out, &doc); err != nil {
		t.Fatalf("JUnit XML does not parse: %v", err)
	}
	total := mustView(t, r).totals
	name, tests, failures, errors := doc.totals(t)
	if name != "chaoskit" || tests != total.Cases || failures != total.Failed || errors != total.Unknown {
		t.Errorf("testsuites name=%q tests=%d failures=%d errors=%d; want chaoskit, %d, %d, %d",
			name, tests, failures, errors, total.Cases, total.Failed, total.Unknown)
	}
	if *doc.Time != "0.568" {
		t.Errorf("testsuites time = %q, want the campaign's 0.568", *doc.Time)
	}
	if len(doc.Suites) != len(r.Summary.Targets) {
		t.Fatalf("%d testsuites, want one per target: %d", len(doc.Suites), len(r.Summary.Targets))
	}
	for i, s := range doc.Suites {
		checkSuite(t, s, &r.Summary.Targets[i], casesOf(r, r.Summary.Targets[i].Target))
	}
}

// checkSuite checks a testsuite against the target it stands for: its attributes, that they count
// its own children, and each of its testcases.
func checkSuite(t *testing.T, s parsedSuite, ts *TargetSummary, cases []*Case) {
	t.Helper()
	name, tests, failures, errors := s.totals(t)
	if name != ts.Target || tests != ts.Cases || failures != ts.Failed || errors != ts.Unknown {
		t.Errorf("testsuite name=%q tests=%d failures=%d errors=%d; want %q, %d, %d, %d",
			name, tests, failures, errors, ts.Target, ts.Cases, ts.Failed, ts.Unknown)
	}
	if s.Skipped == nil || *s.Skipped != 0 {
		t.Errorf("testsuite %q: skipped=%v, want 0", name, s.Skipped)
	}
	if len(s.Cases) != len(cases) {
		t.Fatalf("testsuite %q holds %d testcases, want %d", name, len(s.Cases), len(cases))
	}
	failed, unknown := 0, 0
	for i, pc := range s.Cases {
		if pc.Classname == nil || pc.Name == nil || pc.Time == nil {
			t.Fatalf("testcase %d of %q lacks an attribute", i, name)
		}
		if *pc.Classname != "chaoskit."+name || *pc.Name != cases[i].Schedule.String() || !secondsAttr.MatchString(*pc.Time) {
			t.Errorf("testcase classname=%q name=%q time=%q; want chaoskit.%s, %s and seconds",
				*pc.Classname, *pc.Name, *pc.Time, name, cases[i].Schedule)
		}
		if pc.Failure != nil {
			failed++
		}
		if pc.Error != nil {
			unknown++
		}
		checkJUnitCase(t, cases[i], pc)
	}
	if failed != failures || unknown != errors {
		t.Errorf("testsuite %q holds %d failures and %d errors; its attributes say %d and %d", name, failed, unknown, failures, errors)
	}
}

func checkJUnitCase(t *testing.T, c *Case, pc parsedCase) {
	t.Helper()
	switch c.Verdict {
	case oracle.Fail:
		f := pc.Failure
		if f == nil || pc.Error != nil || f.Message == nil || f.Type == nil || *f.Type != c.Violations[0].Property ||
			*f.Message != asXML(c.Violations[0].Property+": "+gist(c.Violations[0].Detail)) {
			t.Fatalf("failed case %s: failure %+v", c.ID, f)
		}
		for _, v := range c.Violations {
			if !strings.Contains(f.Text, v.Property+": ") {
				t.Errorf("failed case %s: failure text lacks violation %s", c.ID, v.Property)
			}
		}
		if !strings.Contains(f.Text, "\nreplay: "+asXML(c.Repro)+"\n") {
			t.Errorf("failed case %s: failure text lacks the replay line:\n%s", c.ID, f.Text)
		}
	case oracle.Unknown:
		e := pc.Error
		if e == nil || pc.Failure != nil || e.Type == nil || *e.Type != "unknown" || e.Message == nil || *e.Message != asXML(gist(c.Reason)) ||
			!strings.Contains(e.Text, "replay: "+asXML(c.Repro)) {
			t.Errorf("unknown case %s: error %+v", c.ID, e)
		}
	default:
		if pc.Failure != nil || pc.Error != nil {
			t.Errorf("passing case %s has a failure or an error", c.ID)
		}
		if (c.Detected != "") != (pc.SystemOut != nil) ||
			(pc.SystemOut != nil && !strings.Contains(*pc.SystemOut, "stopping loudly")) {
			t.Errorf("passing case %s (detected %q): system-out %v", c.ID, c.Detected, pc.SystemOut)
		}
	}
}

// asXML returns s as it reads back from XML: with the characters XML cannot hold replaced.
func asXML(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' && r != '\n' && r != '\r' {
			return '\uFFFD'
		}
		return r
	}, s)
}

// TestJUnitSchema validates the JUnit XML against testdata/junit.xsd, which describes exactly
// the structure JUnit promises.
func TestJUnitSchema(t *testing.T) {
	xmllint := needs.Command(t, "xmllint", "JUnit XML not validated against testdata/junit.xsd (apt-get install libxml2-utils)")
	path := writeTemp(t, "junit.xml", render(t, demoReport(t), (*Report).JUnit))
	out, err := runTool(xmllint, "--noout", "--nonet", "--schema", filepath.Join("testdata", "junit.xsd"), path)
	if err != nil {
		t.Fatalf("xmllint: %v\n%s", err, out)
	}
}

// A shrunk failure names its shrunk schedule first, in its message and its text, with the
// command that replays it.
func TestJUnitShrunk(t *testing.T) {
	var doc parsedSuites
	if err := xml.Unmarshal(render(t, randomReport(t), (*Report).JUnit), &doc); err != nil {
		t.Fatal(err)
	}
	var f *parsedProblem
	for _, c := range doc.Suites[0].Cases {
		if *c.Name == "kill@7,lease@107+2h" {
			f = c.Failure
		}
	}
	if f == nil {
		t.Fatal("no failure for kill@7,lease@107+2h")
	}
	if want := "shrunk to power@7: same-result: the result differs from the golden run's (-golden +faulty): State{; -   Entry0: \"old\",; +   Entry0: \"new\","; !strings.HasPrefix(*f.Message, want) || !strings.HasSuffix(*f.Message, "; and 40 more lines") {
		t.Errorf("message = %q, want %q", *f.Message, want)
	}
	if want := "shrunk to power@7, which still breaks same-result\n" +
		"replay shrunk: chaoskit replay --target agent --seed 3 --schedule 'power@7'\n" +
		"as found, kill@7,lease@107+2h:\nsame-result: "; !strings.HasPrefix(f.Text, want) {
		t.Errorf("text starts %q, want %q", f.Text[:min(len(f.Text), 200)], want)
	}
	if !strings.HasSuffix(f.Text, "\nreplay: chaoskit replay --target agent --seed 3 --schedule 'kill@7,lease@107+2h'\n") {
		t.Errorf("text does not end with the replay command as found:\n%s", f.Text)
	}
}

// A suite's time is its share of the campaign's wall-clock time, by its cases' times, and not
// the sum of its cases' times, which ran side by side: the suites add up to the campaign's time.
// Without the campaign's time, a suite's is the sum of its cases'.
func TestJUnitSuiteTimesAddUpToTheCampaign(t *testing.T) {
	r := &Report{Schema: Schema, DurationMs: 1000, Cases: []Case{
		{Target: "a", ID: "a:kill@1", Schedule: faults.MustParseSchedule("kill@1"), Verdict: oracle.Pass, DurationMs: 900},
		{Target: "a", ID: "a:kill@2", Schedule: faults.MustParseSchedule("kill@2"), Verdict: oracle.Pass, DurationMs: 600},
		{Target: "b", ID: "b:kill@1", Schedule: faults.MustParseSchedule("kill@1"), Verdict: oracle.Pass, DurationMs: 500},
	}}
	r.Summarize(nil)
	for _, tc := range []struct {
		campaignMs     float64
		total, sa, sb  string
		caseA1, caseA2 string
	}{
		{1000, "1.000", "0.750", "0.250", "0.900", "0.600"},
		{0, "2.000", "1.500", "0.500", "0.900", "0.600"},
	} {
		r.DurationMs = tc.campaignMs
		var doc parsedSuites
		if err := xml.Unmarshal(render(t, r, (*Report).JUnit), &doc); err != nil {
			t.Fatal(err)
		}
		got := []string{*doc.Time, *doc.Suites[0].Time, *doc.Suites[1].Time, *doc.Suites[0].Cases[0].Time, *doc.Suites[0].Cases[1].Time}
		if want := []string{tc.total, tc.sa, tc.sb, tc.caseA1, tc.caseA2}; !slices.Equal(got, want) {
			t.Errorf("campaign of %v ms: times %v, want %v", tc.campaignMs, got, want)
		}
	}
}
