package reports_test

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/reports"
	"pgregory.net/rapid"

	"github.com/chaoskit/chaoskit/oracle"
)

// genReport draws a report whose summary is computed from its cases, as chaoskit writes them.
func genReport(t *rapid.T) *reports.Report {
	word := rapid.StringMatching(`[a-z][a-z0-9/-]{0,12}`)
	r := &reports.Report{Schema: reports.Schema, Seed: rapid.Uint64().Draw(t, "seed"),
		Options: reports.Options{Mode: rapid.SampledFrom([]string{"exhaustive", "random"}).Draw(t, "mode"), Faults: []string{"kill", "power"}}}
	n := rapid.IntRange(0, 12).Draw(t, "cases")
	for i := 0; i < n; i++ {
		c := reports.Case{
			Target:     word.Draw(t, "target"),
			Schedule:   rapid.SampledFrom([]string{"kill@3", "power@17", "kill@4,power@9", "diskfull@2:10"}).Draw(t, "schedule"),
			Verdict:    rapid.SampledFrom([]oracle.Outcome{oracle.Pass, oracle.Fail, oracle.Unknown}).Draw(t, "verdict"),
			Violations: []oracle.Violation{},
			Repro:      "chaoskit replay ...",
		}
		c.ID = c.Target + ":" + c.Schedule
		if c.Verdict == oracle.Fail {
			c.Violations = append(c.Violations, oracle.Violation{Property: "no-duplicate-effects", Detail: rapid.String().Draw(t, "detail")})
			c.Duplicates = rapid.IntRange(1, 5).Draw(t, "dups")
			c.DuplicatesByTool = map[string]int{"create_po": c.Duplicates}
			c.Trace = []reports.TraceBeat{{Beat: 3, Label: "tool create_po applied", Fault: "kill@3", Note: "crashed"}}
		}
		c.WorkLostBeats = rapid.IntRange(0, 30).Draw(t, "lost")
		c.StateMismatch = rapid.Bool().Draw(t, "mismatch")
		r.Cases = append(r.Cases, c)
	}
	r.Summarize(nil)
	return r
}

// A report written and loaded back is the same report, and writing it again gives the same
// bytes.
func TestReportRoundTrips(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := genReport(t)
		b, err := r.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		back, err := reports.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%v\n%s", err, b)
		}
		again, err := back.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, again) {
			t.Fatalf("re-encoding changed the report:\n%s\n%s", b, again)
		}
		back.Summarize(nil)
		if !reflect.DeepEqual(back.Summary, r.Summary) {
			t.Fatalf("summary recomputed from the loaded cases differs:\n%+v\n%+v", back.Summary, r.Summary)
		}
	})
}

func TestLoadRefusesWhatIsNotAV1Report(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		path, want string
	}{
		{filepath.Join(dir, "missing.json"), "no such file"},
		{write("garbage.json", "{not json"), "garbage.json: not a chaoskit report"},
		{write("other.json", `{"name":"x"}`), `other.json: not a chaoskit report: no "schema" field`},
		{write("v2.json", `{"schema":"chaoskit.report/v2"}`), `report schema is "chaoskit.report/v2"; this chaoskit reads "chaoskit.report/v1"`},
		{write("typo.json", `{"schema":"chaoskit.report/v1","cases":[{"verdcit":"pass"}]}`), `malformed chaoskit.report/v1 report: json: unknown field "verdcit"`},
		{write("type.json", `{"schema":"chaoskit.report/v1","seed":"one"}`), "malformed chaoskit.report/v1 report"},
	} {
		_, err := reports.Load(tc.path)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("Load(%s) = %v, want one line containing %q", filepath.Base(tc.path), err, tc.want)
		}
	}
}

func TestSummarizeByFault(t *testing.T) {
	r := &reports.Report{Cases: []reports.Case{
		{Target: "a", Schedule: "kill@1", Verdict: oracle.Pass, Metrics: oracle.Metrics{WorkLostBeats: 2}},
		{Target: "a", Schedule: "kill@2,power@5", Verdict: oracle.Fail, Metrics: oracle.Metrics{Duplicates: 1, WorkLostBeats: 3},
			Violations: []oracle.Violation{{Property: "no-duplicate-effects"}}},
		{Target: "b", Schedule: "power@1", Verdict: oracle.Unknown},
	}}
	r.Summarize(map[string]int{"a": 40})
	if len(r.Summary.Targets) != 2 || r.Summary.Targets[0].Target != "a" || r.Summary.Targets[0].GoldenBeats != 40 {
		t.Fatalf("%+v", r.Summary.Targets)
	}
	a := r.Summary.Targets[0]
	if a.Cases != 2 || a.Failed != 1 || a.Duplicates != 1 || a.WorkLostBeatsMean != 2.5 || a.Violations["no-duplicate-effects"] != 1 {
		t.Errorf("a: %+v", a.Stats)
	}
	if a.ByFault["kill"].Cases != 2 || a.ByFault["power"].Cases != 1 || a.ByFault["power"].Failed != 1 {
		t.Errorf("a by fault: %+v", a.ByFault)
	}
	if b := r.Summary.Targets[1]; b.Unknown != 1 {
		t.Errorf("b: %+v", b.Stats)
	}
}
