package reports

import (
	"errors"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/oracle"
)

// gateCampaign is the campaign the gate tests parse against.
var gateCampaign = Options{Targets: []string{"reference", "reference/act-then-save"}, Faults: []string{"kill", "power"}}

func TestParseGate(t *testing.T) {
	for _, tc := range []struct{ in, canonical string }{
		{"duplicates==0", "duplicates==0"},
		{" duplicates == 0 , lost_effects==0,state_mismatches==0,work_lost_beats_mean<=1 ", "duplicates==0,lost_effects==0,state_mismatches==0,work_lost_beats_mean<=1"},
		{"failed{target=reference}==0", "failed{target=reference}==0"},
		{"work_lost_beats_mean{ fault = power , target=reference/act-then-save }<2.50", "work_lost_beats_mean{target=reference/act-then-save,fault=power}<2.5"},
		{"no-duplicate-effects{target=reference/*}!=3", "no-duplicate-effects{target=reference/*}!=3"},
		{"cases>0,passed>=1", "cases>0,passed>=1"},
		{"", ""},
	} {
		g, err := ParseGate(tc.in, gateCampaign)
		if err != nil || g.String() != tc.canonical {
			t.Errorf("ParseGate(%q) = %q, %v; want %q", tc.in, g, err, tc.canonical)
		}
	}
}

// A malformed gate is refused with the column of the offending character.
func TestParseGateErrors(t *testing.T) {
	for _, tc := range []struct {
		in     string
		column int
		msg    string
	}{
		{"dupes==0", 1, `unknown metric "dupes"`},
		{"duplicates==0,lost==0", 15, `unknown metric "lost"`},
		{"duplicates==0,,failed==0", 15, "empty comparison"},
		{"duplicates==0,", 15, "empty comparison"},
		{"duplicates", 11, "want a comparison"},
		{"duplicates=0", 11, "a single = compares nothing: write =="},
		{"duplicates=>0", 11, "a single ="},
		{"duplicates==", 13, "want a number after =="},
		{"duplicates==x", 13, `want a number after ==, not "x"`},
		{"duplicates==-1", 13, "want a number"},
		{"duplicates==1.", 15, "want digits after the decimal point"},
		{"duplicates==1 2", 15, `unexpected '2' after a comparison`},
		{"duplicates==0;failed==0", 14, `unexpected ';'`},
		{"==0", 1, "want a metric name"},
		{"duplicates{==0", 12, "want target= or fault="},
		{"duplicates{agent=x}==0", 12, `unknown selector "agent"`},
		{"duplicates{target}==0", 18, "want = after target"},
		{"duplicates{target=}==0", 19, "want a target name after target="},
		{"duplicates{target=nope}==0", 19, `target "nope" is not in this campaign`},
		{"duplicates{target=x/*}==0", 19, `target "x/*" is not in this campaign`},
		{"duplicates{fault=lease}==0", 18, `fault kind "lease" is not in this campaign (its fault kinds: kill, power)`},
		{"duplicates{fault=kill,fault=power}==0", 23, "fault= given twice"},
		{"duplicates{fault=kill", 22, "{ is never closed"},
		{"duplicates{fault=kill;}==0", 22, `unexpected ";" in {…}`},
		{"duplicates==99999999999999999999999999999999999999" + strings.Repeat("9", 300), 13, "out of range"},
	} {
		_, err := ParseGate(tc.in, gateCampaign)
		var se *GateSyntaxError
		if !errors.As(err, &se) || se.Pos+1 != tc.column || !strings.Contains(se.Msg, tc.msg) {
			t.Errorf("ParseGate(%q): %v; want column %d and %q", tc.in, err, tc.column, tc.msg)
			continue
		}
		if want := "gate " + `"` + tc.in[:min(len(tc.in), 10)]; !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("error %q does not quote the gate on one line", err)
		}
	}
}

// The parser never panics; its errors point inside the input (or just past its end); and what
// it accepts prints to a canonical form that parses back to the same gate.
func FuzzParseGate(f *testing.F) {
	for _, seed := range []string{"duplicates==0", "duplicates==0,lost_effects==0,state_mismatches==0,work_lost_beats_mean<=1",
		"failed{target=reference,fault=kill}>=1.5", "no-duplicate-effects{target=reference/*}!=0", "x{", "a==0,", "{}=="} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		g, err := ParseGate(in, gateCampaign)
		if err != nil {
			var se *GateSyntaxError
			if !errors.As(err, &se) || se.Pos < 0 || se.Pos > len(in) || se.Input != in {
				t.Fatalf("ParseGate(%q): %#v", in, err)
			}
			return
		}
		back, err := ParseGate(g.String(), gateCampaign)
		if err != nil || back.String() != g.String() || len(back) != len(g) {
			t.Fatalf("ParseGate(%q) = %q, which parses back to %q, %v", in, g, back, err)
		}
	})
}

func TestGateCheck(t *testing.T) {
	r := &Report{Options: gateCampaign}
	for _, c := range []Case{
		{Target: "reference", Schedule: faults.MustParseSchedule("kill@1"), Verdict: oracle.Pass, Metrics: oracle.Metrics{WorkLostBeats: 1}},
		{Target: "reference", Schedule: faults.MustParseSchedule("power@2"), Verdict: oracle.Pass, Metrics: oracle.Metrics{WorkLostBeats: 3}},
		{Target: "reference/act-then-save", Schedule: faults.MustParseSchedule("kill@1"), Verdict: oracle.Fail, Metrics: oracle.Metrics{Duplicates: 2},
			Violations: []oracle.Violation{{Property: "no-duplicate-effects"}}},
	} {
		r.Cases = append(r.Cases, c)
	}
	r.Summarize(nil)
	for _, tc := range []struct {
		gate     string
		checked  int
		failures []string
	}{
		{"duplicates==0", 5, []string{"reference/act-then-save: duplicates is 2, want == 0", "reference/act-then-save [kill]: duplicates is 2, want == 0"}},
		{"work_lost_beats_mean<=1", 5, []string{"reference: work_lost_beats_mean is 2, want <= 1", "reference [power]: work_lost_beats_mean is 3, want <= 1"}},
		{"work_lost_beats_mean{fault=kill}<=1", 2, nil},
		{"duplicates{target=reference}==0", 3, nil},
		{"no-duplicate-effects{target=reference/*,fault=kill}<1", 1, []string{"reference/act-then-save [kill]: no-duplicate-effects is 1, want < 1"}},
		{"cases>1", 5, []string{"reference [kill]: cases is 1, want > 1", "reference [power]: cases is 1, want > 1", "reference/act-then-save: cases is 1, want > 1", "reference/act-then-save [kill]: cases is 1, want > 1"}},
	} {
		g, err := ParseGate(tc.gate, gateCampaign)
		if err != nil {
			t.Fatal(err)
		}
		checked, failures := g.Check(r)
		if checked != tc.checked || strings.Join(failures, "\n") != strings.Join(tc.failures, "\n") {
			t.Errorf("%s: %d comparisons, failures:\n%s\nwant %d and:\n%s", tc.gate, checked, strings.Join(failures, "\n"), tc.checked, strings.Join(tc.failures, "\n"))
		}
	}
}

// The cases of a deploy of a next version marked stranded, duplicated or replanned are counted
// in the summary, and gateable by those names, per fault kind too.
func TestGateUpgradeWords(t *testing.T) {
	o := Options{Targets: []string{"app"}, Faults: []string{"kill", "upgrade"}}
	r := &Report{Options: o, Cases: []Case{
		{Target: "app", Schedule: faults.MustParseSchedule("kill@1"), Verdict: oracle.Pass},
		{Target: "app", Schedule: faults.MustParseSchedule("upgrade@2"), Verdict: oracle.Fail, Metrics: oracle.Metrics{Stranded: true, Duplicated: true, Duplicates: 1}},
		{Target: "app", Schedule: faults.MustParseSchedule("upgrade@3"), Verdict: oracle.Fail, Metrics: oracle.Metrics{Stranded: true}},
		{Target: "app", Schedule: faults.MustParseSchedule("upgrade@4"), Verdict: oracle.Fail, Metrics: oracle.Metrics{Replanned: true}},
	}}
	r.Summarize(nil)
	s := r.Summary.Targets[0]
	if s.Stranded != 2 || s.Duplicated != 1 || s.Replanned != 1 || s.ByFault["kill"].Stranded != 0 || s.ByFault["upgrade"].Stranded != 2 {
		t.Errorf("summary: stranded %d, duplicated %d, replanned %d, by fault %+v; want 2, 1, 1, all of them upgrade's", s.Stranded, s.Duplicated, s.Replanned, s.ByFault)
	}
	g, err := ParseGate("stranded{fault=upgrade}==0, duplicated<=1, replanned==0", o)
	if err != nil {
		t.Fatal(err)
	}
	_, failures := g.Check(r)
	want := []string{"app [upgrade]: stranded is 2, want == 0", "app: replanned is 1, want == 0", "app [upgrade]: replanned is 1, want == 0"}
	if strings.Join(failures, "\n") != strings.Join(want, "\n") {
		t.Errorf("failures:\n%s\nwant:\n%s", strings.Join(failures, "\n"), strings.Join(want, "\n"))
	}
}
