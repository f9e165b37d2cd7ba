package reports_test

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/faults"
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
			Schedule:   faults.MustParseSchedule(rapid.SampledFrom([]string{"kill@3", "power@17", "kill@4,power@9", "diskfull@2:10"}).Draw(t, "schedule")),
			Verdict:    rapid.SampledFrom([]oracle.Outcome{oracle.Pass, oracle.Fail, oracle.Unknown}).Draw(t, "verdict"),
			Violations: []oracle.Violation{},
			Repro:      "chaoskit replay ...",
		}
		c.ID = c.Target + ":" + c.Schedule.String()
		if c.Verdict == oracle.Fail {
			c.Violations = append(c.Violations, oracle.Violation{Property: "no-duplicate-effects", Detail: rapid.String().Draw(t, "detail")})
			c.Duplicates = rapid.IntRange(1, 5).Draw(t, "dups")
			c.DuplicatesByTool = map[string]int{"create_po": c.Duplicates}
			c.Trace = []reports.TraceBeat{{Beat: 3, Process: rapid.IntRange(0, 3).Draw(t, "process"), Label: "tool create_po applied", Fault: "kill@3", Note: "crashed"}}
		}
		c.WorkLostBeats = rapid.IntRange(0, 30).Draw(t, "lost")
		c.StateMismatch = rapid.Bool().Draw(t, "mismatch")
		r.Cases = append(r.Cases, c)
	}
	r.Summarize(nil)
	return r
}

// A report written and loaded back is the same report, and writing it again gives the same
// bytes; cut short anywhere, or with any one byte changed, it is refused, read as a stream or
// as a file.
func TestReportRoundTrips(t *testing.T) {
	path := filepath.Join(t.TempDir(), "report.json")
	rapid.Check(t, func(t *rapid.T) {
		r := genReport(t)
		r.DurationMs = float64(rapid.IntRange(0, 1e6).Draw(t, "ms")) / 10
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
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := reports.Load(path); err != nil {
			t.Fatal(err)
		}

		cut := rapid.IntRange(0, len(b)-1).Draw(t, "cut")
		if _, err := reports.Decode(bytes.NewReader(b[:cut])); !errors.Is(err, reports.ErrDamaged) {
			t.Fatalf("the report cut to its first %d of %d bytes, decoded: %v", cut, len(b), err)
		}
		if err := os.WriteFile(path, b[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := reports.LoadHead(path); !errors.Is(err, reports.ErrDamaged) || !strings.Contains(err.Error(), path) {
			t.Fatalf("the report cut to its first %d of %d bytes, loaded: %v", cut, len(b), err)
		}

		at := rapid.IntRange(0, len(b)-1).Draw(t, "at")
		altered := bytes.Clone(b)
		altered[at] ^= byte(rapid.IntRange(1, 255).Draw(t, "xor"))
		if _, err := reports.Decode(bytes.NewReader(altered)); err == nil {
			t.Fatalf("the report with byte %d of %d changed to %q decodes", at, len(b), altered[at])
		}
		if err := os.WriteFile(path, altered, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := reports.LoadHead(path); err == nil || !strings.Contains(err.Error(), path) {
			t.Fatalf("the report with byte %d of %d changed to %q loads: %v", at, len(b), altered[at], err)
		}
	})
}

// sealed returns body, a report's JSON object on indented lines as chaoskit writes them, with
// the trailer reports.Trailer documents as its last field, as a reader that knows only the
// documented format would write it.
func sealed(body string, cases int) string {
	body = strings.TrimSuffix(body, "\n}\n") + ",\n"
	return fmt.Sprintf("%s  \"trailer\": {\"cases\": %d, \"sha256\": \"%x\"}\n}\n", body, cases, sha256.Sum256([]byte(body)))
}

func TestLoadRefusesWhatIsNotAReportOfItsSchema(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	head := "{\n  \"schema\": \"" + reports.Schema + "\",\n"
	for _, tc := range []struct {
		path, want string
	}{
		{filepath.Join(dir, "missing.json"), "no such file"},
		{write("garbage.json", "{not json"), "garbage.json: not a chaoskit report"},
		{write("other.json", `{"name":"x"}`), `other.json: not a chaoskit report: no "schema" field`},
		{write("v3.json", `{"schema":"chaoskit.report/v3"}`), `v3.json: report schema is "chaoskit.report/v3"; this chaoskit reads "` + reports.Schema + `"`},
		{write("v1.json", `{"schema":"chaoskit.report/v1","seed":1,"cases":[]}`), `v1.json: report schema is "chaoskit.report/v1"; this chaoskit reads "chaoskit.report/v2" (a v1 report has no trailer to verify it by: run its campaign again)`},
		{write("typo.json", sealed(head+"  \"cases\": [{\"verdcit\": \"pass\"}]\n}\n", 1)), `typo.json: malformed ` + reports.Schema + ` report: json: unknown field "verdcit"`},
		{write("type.json", sealed(head+"  \"seed\": \"one\"\n}\n", 0)), "type.json: malformed " + reports.Schema + " report"},
		{write("tracetypo.json", sealed(head+"  \"cases\": [{\"trace\": [{\"beat\": 3, \"proces\": 1}]}]\n}\n", 1)), `tracetypo.json: malformed ` + reports.Schema + ` report: trace beat: json: unknown field "proces"`},
		{write("unsealed.json", head+"  \"seed\": 1,\n  \"cases\": []\n}\n"), "unsealed.json: truncated or altered: it does not end with the trailer"},
		{write("miscounted.json", sealed(head+"  \"cases\": []\n}\n", 2)), "miscounted.json: truncated or altered: it holds 0 cases, its trailer says 2"},
		{write("empty.json", ""), "empty.json: truncated or altered"},
	} {
		_, err := reports.Load(tc.path)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("Load(%s) = %v, want one line containing %q", filepath.Base(tc.path), err, tc.want)
		}
	}
	// The documented trailer is the one chaoskit writes.
	ok := write("ok.json", sealed(head+"  \"seed\": 1,\n  \"options\": {\"mode\": \"random\", \"faults\": null},\n  \"cases\": []\n}\n", 0))
	r, err := reports.Load(ok)
	if err != nil {
		t.Fatal(err)
	}
	r.Cases = append(r.Cases, reports.Case{Target: "a", ID: "a:kill@1", Schedule: faults.MustParseSchedule("kill@1"), Verdict: oracle.Pass})
	b, _ := r.Marshal()
	body, _, _ := strings.Cut(string(b), ",\n  \"trailer\": ")
	if want := sealed(body+"\n}\n", 1); string(b) != want {
		t.Errorf("chaoskit writes\n%s\nwhere the documented format is\n%s", b, want)
	}
}

func TestSummarizeByFault(t *testing.T) {
	r := &reports.Report{Cases: []reports.Case{
		{Target: "a", Schedule: faults.MustParseSchedule("kill@1"), Verdict: oracle.Pass, Metrics: oracle.Metrics{WorkLostBeats: 2}},
		{Target: "a", Schedule: faults.MustParseSchedule("kill@2,power@5"), Verdict: oracle.Fail, Metrics: oracle.Metrics{Duplicates: 1, WorkLostBeats: 3},
			Violations: []oracle.Violation{{Property: "no-duplicate-effects"}}},
		{Target: "b", Schedule: faults.MustParseSchedule("power@1"), Verdict: oracle.Unknown},
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

// A trace beat's process was called attempt in the reports of the same schema written before it
// was named process: such a report loads, each beat with its process, and is written back under
// the new name.
func TestTraceBeatsOfEarlierReportsKeepTheirProcess(t *testing.T) {
	head := "{\n  \"schema\": \"" + reports.Schema + "\",\n"
	trace := `[{"beat": 3, "attempt": 2, "label": "mark a"}, {"beat": 4, "process": 1, "label": "mark b"}, {"beat": 5, "label": "mark c"}]`
	path := filepath.Join(t.TempDir(), "earlier.json")
	if err := os.WriteFile(path, []byte(sealed(head+"  \"cases\": [{\"target\": \"a\", \"trace\": "+trace+"}]\n}\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := reports.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, b := range r.Cases[0].Trace {
		got = append(got, b.Process)
	}
	if !reflect.DeepEqual(got, []int{2, 1, 0}) {
		t.Fatalf("processes %v, want [2 1 0]", got)
	}
	b, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte(`"attempt"`)) || !bytes.Contains(b, []byte(`"process": 2`)) {
		t.Fatalf("written back as\n%s", b)
	}
}
