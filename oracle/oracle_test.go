package oracle_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/oracle"
)

func effects(ids ...string) []oracle.Effect {
	var out []oracle.Effect
	for i, id := range ids {
		out = append(out, oracle.Effect{Tool: strings.Fields(id)[0], Identity: id, Beat: i})
	}
	return out
}

func done(eff []oracle.Effect) *oracle.Observation {
	return &oracle.Observation{Completed: true, Result: "ok", State: "s", Effects: eff, Beats: 10,
		Processes: []oracle.Process{{First: true}}}
}

func props(v oracle.Verdict) string {
	var p []string
	for _, x := range v.Violations {
		p = append(p, x.Property)
	}
	return strings.Join(p, ",")
}

func TestEffectsAreCountedByIdentity(t *testing.T) {
	golden := done(effects("po {a}", "po {b}", "mail {x}"))
	for _, tc := range []struct {
		name               string
		faulty             []oracle.Effect
		dup, lost, phantom int
		violations         string
	}{
		{"same", effects("po {a}", "po {b}", "mail {x}"), 0, 0, 0, ""},
		{"order does not matter", effects("mail {x}", "po {b}", "po {a}"), 0, 0, 0, ""},
		{"duplicate", effects("po {a}", "po {a}", "po {b}", "mail {x}"), 1, 0, 0, "no-duplicate-effects"},
		{"lost", effects("po {a}", "mail {x}"), 0, 1, 0, "no-lost-effects"},
		{"phantom", effects("po {a}", "po {b}", "po {c}", "mail {x}"), 0, 0, 1, "no-phantom-effects"},
		{"all three", effects("po {a}", "po {a}", "po {z}"), 1, 2, 1, "no-duplicate-effects,no-phantom-effects,no-lost-effects"},
	} {
		v := oracle.Check(golden, done(tc.faulty), oracle.Options{})
		m := v.Metrics
		if m.Duplicates != tc.dup || m.LostEffects != tc.lost || m.PhantomEffects != tc.phantom || props(v) != tc.violations {
			t.Errorf("%s: dup %d lost %d phantom %d violations %q; want %d %d %d %q", tc.name, m.Duplicates, m.LostEffects, m.PhantomEffects, props(v), tc.dup, tc.lost, tc.phantom, tc.violations)
		}
	}
}

// A duplicate's detail names the calls that applied it by the beats at which they were sent, in
// beat order, whatever order they landed in (a call that timed out lands after its retry).
func TestDuplicateNamesTheCallsInBeatOrder(t *testing.T) {
	golden := done(effects("po {a}"))
	faulty := done([]oracle.Effect{{Tool: "po", Identity: "po {a}", Beat: 2}, {Tool: "po", Identity: "po {a}", Beat: 0}})
	v := oracle.Check(golden, faulty, oracle.Options{})
	want := "po {a} applied 2× (golden 1×) by the calls sent at beat 0 (process 0), beat 2 (process 0)"
	if len(v.Violations) != 1 || v.Violations[0].Detail != want {
		t.Errorf("violations %+v, want one: %s", v.Violations, want)
	}
}

// An effect the golden run repeats (Options.Repeated: its workers both act) is held to the count
// fewer workers apply: applying it once loses nothing, applying it as often as the golden run
// is a duplicate, and the violation says that the golden run repeats it too.
func TestRepeatedEffectsAreHeldToFewerWorkers(t *testing.T) {
	golden := done(effects("po {a}", "po {a}", "mail {b}"))
	repeated := oracle.Options{Repeated: map[string]int{"po {a}": 1}}
	if v := oracle.Check(golden, done(effects("po {a}", "mail {b}")), repeated); v.Outcome != oracle.Pass {
		t.Errorf("applied as often as by fewer workers: %s %q", v.Outcome, props(v))
	}
	v := oracle.Check(golden, done(effects("po {a}", "po {a}", "mail {b}")), repeated)
	if props(v) != "no-duplicate-effects" || v.Metrics.Duplicates != 1 || v.DuplicatesByTool["po"] != 1 ||
		!strings.Contains(v.Violations[0].Detail, "the golden run itself, with no fault, applies po {a} 2×") {
		t.Errorf("applied as often as by the golden run: %q, %d duplicates, by tool %v: %+v", props(v), v.Metrics.Duplicates, v.DuplicatesByTool, v.Violations)
	}
	if v := oracle.Check(golden, done(effects("po {a}", "po {a}", "mail {b}")), oracle.Options{}); v.Outcome != oracle.Pass {
		t.Errorf("without Repeated the golden run is the reference: %s %q", v.Outcome, props(v))
	}
}

func TestStateDiffIsGoldenMinusFaultyPlus(t *testing.T) {
	g, f := done(nil), done(nil)
	g.State, f.State = map[string]int{"po": 1}, map[string]int{"po": 2}
	v := oracle.Check(g, f, oracle.Options{})
	if props(v) != "same-state" || !v.Metrics.StateMismatch {
		t.Fatalf("violations %q", props(v))
	}
	if v.Diff != `["po"]: -1 +2` {
		t.Fatalf("diff:\n%s", v.Diff)
	}
}

// A diff names each difference by its path, with the golden value and the faulty one, in text
// that depends on nothing but the values: the same from run to run and process to process.
func TestDiffIsStableText(t *testing.T) {
	type entry struct {
		Step   int
		Status string
		Next   *entry
	}
	type state struct {
		Phase  string
		Ledger []entry
		Tags   map[string]int
	}
	g, f := done(nil), done(nil)
	g.State = state{Phase: "running", Ledger: []entry{{0, "committed", nil}, {1, "pending", nil}}, Tags: map[string]int{"a": 1}}
	f.State = state{Phase: "running", Ledger: []entry{{0, "committed", nil}, {1, "committed", &entry{Step: 9}}, {2, "pending", nil}}, Tags: map[string]int{"a": 2}}
	want := `.Ledger[1].Status: -"pending" +"committed"
.Ledger[1].Next: -<nil> +{Step:9 Status: Next:<nil>}
.Ledger[2]: -(none) +{Step:2 Status:pending Next:<nil>}
.Tags["a"]: -1 +2`
	for range 3 {
		if v := oracle.Check(g, f, oracle.Options{}); v.Diff != want {
			t.Fatalf("diff:\n%s\nwant:\n%s", v.Diff, want)
		}
	}
}

// A state decoded from JSON (a process target's state command) reads as JSON in a diff: numbers
// as written, not quoted; a whole object or list as JSON, not Go's map syntax.
func TestDiffOfJSONReadsAsJSON(t *testing.T) {
	decode := func(s string) any {
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	g, f := done(nil), done(nil)
	g.State = decode(`{"step": 0, "ledger": [{"tool": "search", "n": 1.5, "note": "<a>"}]}`)
	f.State = decode(`{"step": 1, "ledger": []}`)
	want := `["ledger"][0]: -{"n":1.5,"note":"<a>","tool":"search"} +(none)
["step"]: -0 +1`
	if v := oracle.Check(g, f, oracle.Options{}); v.Diff != want {
		t.Fatalf("diff:\n%s\nwant:\n%s", v.Diff, want)
	}
	// Values of a Go harness's own print as before: Go's formatting, <nil> for nil.
	type state struct{ F float64 }
	g.State, f.State = map[string]any{"s": state{F: 1e6}}, map[string]any{"s": state{F: 2e-7}}
	if v := oracle.Check(g, f, oracle.Options{}); v.Diff != `["s"].F: -1e+06 +2e-07` {
		t.Fatalf("diff of Go values:\n%s", v.Diff)
	}
	g.State, f.State = map[string]any{"e": nil}, map[string]any{"e": 1.5}
	if v := oracle.Check(g, f, oracle.Options{}); v.Diff != `["e"]: -<nil> +1.5` {
		t.Fatalf("diff of Go values:\n%s", v.Diff)
	}
}

type opaque struct{ hidden int }

// Values go-cmp cannot compare make the verdict unknown, saying why, not a panic; a violation
// found besides still fails the case.
func TestIncomparableStateIsUnknown(t *testing.T) {
	g, f := done(nil), done(nil)
	g.State, f.State = opaque{1}, opaque{2}
	v := oracle.Check(g, f, oracle.Options{})
	if v.Outcome != oracle.Unknown || !strings.Contains(v.Reason, "cannot compare states") || len(v.NotChecked) != 2 {
		t.Fatalf("verdict %s reason %q not checked %q", v.Outcome, v.Reason, v.NotChecked)
	}
	f.Effects = effects("po {a}")
	if v := oracle.Check(g, f, oracle.Options{}); v.Outcome != oracle.Fail || props(v) != "no-phantom-effects" {
		t.Fatalf("with a phantom effect too: verdict %s, violations %q", v.Outcome, props(v))
	}
}

// Addresses go-cmp prints differ from run to run; the diff leaves them out.
func TestDiffsLeaveOutAddresses(t *testing.T) {
	type node struct{ Next *node }
	g, f := done(nil), done(nil)
	g.State, f.State = &node{}, &node{Next: &node{}}
	v := oracle.Check(g, f, oracle.Options{})
	if strings.Contains(v.Diff, "0x") && !strings.Contains(v.Diff, "0x…") {
		t.Fatalf("diff keeps an address:\n%s", v.Diff)
	}
}

func TestNotCompletingSkipsComparisons(t *testing.T) {
	f := done(nil)
	f.Completed, f.Err, f.State = false, "the last process failed: disk on fire", "other"
	v := oracle.Check(done(effects("po {a}")), f, oracle.Options{})
	if props(v) != "completes" || len(v.NotChecked) != 4 || !strings.HasPrefix(v.NotChecked[1], "same-state: the run did not complete") {
		t.Fatalf("violations %q not checked %q", props(v), v.NotChecked)
	}
	// After a corruption, stopping loudly is acceptable: it is reported as detected. Being
	// given up by the harness (stuck, looping) is not stopping loudly.
	f.Unrecoverable = true
	if v = oracle.Check(done(effects("po {a}")), f, oracle.Options{}); v.Outcome != oracle.Fail {
		t.Fatalf("a run given up after a corruption: verdict %s detected %q", v.Outcome, v.Detected)
	}
	f.Stopped = true
	v = oracle.Check(done(effects("po {a}")), f, oracle.Options{})
	if v.Outcome != oracle.Pass || v.Detected == "" {
		t.Fatalf("verdict %s detected %q", v.Outcome, v.Detected)
	}
}

// Work lost is measured from marks. Golden: marks m0..m3 at beats 2, 5, 8, 11 of 12, so each
// declares 3 beats of work. The first process crashed at beat 7, one beat after m1 (5); its
// restart made the given marks.
func TestWorkLost(t *testing.T) {
	golden := done(nil)
	golden.Beats = 12
	golden.Marks = []oracle.Mark{{Beat: 2, Label: "m0"}, {Beat: 5, Label: "m1"}, {Beat: 8, Label: "m2"}, {Beat: 11, Label: "m3"}}
	faulty := func(restart ...string) *oracle.Observation {
		f := done(nil)
		f.Beats = 30
		f.Marks = []oracle.Mark{{Beat: 2, Label: "m0"}, {Beat: 5, Label: "m1"}}
		for i, l := range restart {
			f.Marks = append(f.Marks, oracle.Mark{Beat: 10 + 3*i, Label: l, Process: 1})
		}
		f.Processes = []oracle.Process{
			{First: true, Crashed: true, Marks: 2, SinceMark: 1},
			{Marks: len(restart), ToFirstMark: 2},
		}
		return f
	}
	for _, tc := range []struct {
		name       string
		restart    []string
		lost       int
		violations string
	}{
		{"resumes after m1: loses the beat in flight", []string{"m2", "m3"}, 1, ""},
		{"restarts from scratch", []string{"m0", "m1", "m2", "m3"}, 1 + 3 + 3, "bounded-work-lost"},
		{"goes back one mark", []string{"m1", "m2", "m3"}, 1 + 3, "bounded-work-lost"},
	} {
		v := oracle.Check(golden, faulty(tc.restart...), oracle.Options{})
		if v.Metrics.WorkLostBeats != tc.lost || props(v) != tc.violations || v.Metrics.ResumeBeats != 2 {
			t.Errorf("%s: lost %d resume %d violations %q; want %d 2 %q", tc.name, v.Metrics.WorkLostBeats, v.Metrics.ResumeBeats, props(v), tc.lost, tc.violations)
		}
	}
	v := oracle.Check(golden, faulty("m0", "m1", "m2", "m3"), oracle.Options{WorkLostSlack: 6})
	if props(v) != "" {
		t.Errorf("with slack 6, redoing m0 and m1 (6 beats) is within bounds, got %q", props(v))
	}
	unmarked := done(nil)
	if v := oracle.Check(unmarked, faulty("m0"), oracle.Options{}); len(v.NotChecked) != 1 || !strings.HasPrefix(v.NotChecked[0], "bounded-work-lost") {
		t.Errorf("without golden marks, not checked = %q", v.NotChecked)
	}
}

// With several workers the rule is the same: a mark made twice, by whichever worker, is
// durable work done twice.
func TestWorkLostAcrossWorkers(t *testing.T) {
	golden := done(nil)
	golden.Marks = []oracle.Mark{{Beat: 2, Label: "a"}, {Beat: 6, Label: "b"}}
	f := done(nil)
	f.Marks = []oracle.Mark{{Beat: 2, Label: "a"}, {Beat: 7, Label: "b", Process: 0}, {Beat: 9, Label: "b", Process: 1}}
	f.Processes = []oracle.Process{{First: true, Marks: 2}, {First: true, Marks: 1}}
	v := oracle.Check(golden, f, oracle.Options{})
	if props(v) != "bounded-work-lost" || v.Metrics.WorkLostBeats != 4 || !strings.Contains(v.Violations[0].Detail, `"b" was made again at beat 9 (process 1)`) {
		t.Fatalf("violations %q lost %d: %+v", props(v), v.Metrics.WorkLostBeats, v.Violations)
	}
}

// A worker frozen by a lease fault in the middle of a step, whose step another worker took over
// and marked, finishes that step when it wakes: its mark repeats the other's but redoes nothing
// durable, unless a call of its own was applied after it woke (it did the step again), or it
// woke before the other's mark, or it was never frozen, or the freeze came before its mark of a.
func TestWorkLostExcusesAFrozenWorkersStepInFlight(t *testing.T) {
	golden := done(nil)
	golden.Marks = []oracle.Mark{{Beat: 2, Label: "a"}, {Beat: 6, Label: "b"}}
	for _, tc := range []struct {
		name   string
		frozen []oracle.Freeze
		want   string
	}{
		{"frozen after its mark of a, b marked by the other meanwhile", []oracle.Freeze{{At: 4, Woke: 10}}, ""},
		{"the same, but a call of its own applied after it woke", []oracle.Freeze{{At: 4, Woke: 10, Acted: true}}, "bounded-work-lost"},
		{"woke before the other marked b", []oracle.Freeze{{At: 4, Woke: 8}}, "bounded-work-lost"},
		{"never frozen", nil, "bounded-work-lost"},
		{"frozen before its mark of a", []oracle.Freeze{{At: 1, Woke: 10}}, "bounded-work-lost"},
		{"frozen after the other had marked b", []oracle.Freeze{{At: 10, Woke: 11}}, "bounded-work-lost"},
	} {
		f := done(nil)
		f.Marks = []oracle.Mark{{Beat: 2, Label: "a", Process: 0}, {Beat: 9, Label: "b", Process: 1}, {Beat: 12, Label: "b", Process: 0}}
		f.Processes = []oracle.Process{{First: true, Marks: 2, Frozen: tc.frozen}, {First: true, Marks: 1}}
		if v := oracle.Check(golden, f, oracle.Options{}); props(v) != tc.want {
			t.Errorf("%s: violations %q, want %q: %+v", tc.name, props(v), tc.want, v.Violations)
		}
	}
}

func TestModelCallsRemade(t *testing.T) {
	g, f := done(nil), done(nil)
	g.ModelCalls = []string{"plan 0", "plan 1", "plan 2"}
	f.ModelCalls = []string{"plan 0", "plan 1", "plan 1", "plan 2", "plan 2"}
	if n := oracle.Check(g, f, oracle.Options{}).Metrics.ModelCallsRemade; n != 2 {
		t.Fatalf("model calls remade = %d, want 2", n)
	}
}

func TestDeterministicNamesTheFirstDivergentBeat(t *testing.T) {
	a, b := done(nil), done(nil)
	a.Trace = []string{"fs.create a", "fs.write a +1B @0", "mark x"}
	b.Trace = []string{"fs.create a", "fs.write a +2B @0", "mark x"}
	v := oracle.CheckDeterministic(a, b, oracle.Options{})
	if len(v) != 1 || v[0].Property != oracle.Deterministic || !strings.Contains(v[0].Detail, `diverge at beat 1: the first did "fs.write a +1B @0", the second "fs.write a +2B @0"`) {
		t.Fatalf("%+v", v)
	}
	if v := oracle.CheckDeterministic(a, a, oracle.Options{}); len(v) != 0 {
		t.Fatalf("a run differs from itself: %+v", v)
	}
}

// Effects of ordered tools must come in the golden run's order; others may come in any order.
func TestOrderedEffects(t *testing.T) {
	golden := done(effects("reserve {a}", "ship {a}", "mail {x}"))
	for _, tc := range []struct {
		name       string
		faulty     []oracle.Effect
		violations string
	}{
		{"same order", effects("reserve {a}", "mail {x}", "ship {a}"), ""},
		{"shipped first", effects("ship {a}", "reserve {a}", "mail {x}"), "ordered-effects"},
		{"a repeat after the fact does not reorder", effects("reserve {a}", "ship {a}", "reserve {a}", "mail {x}"), "no-duplicate-effects"},
		{"only ordered tools count", effects("mail {x}", "reserve {a}", "ship {a}"), ""},
	} {
		v := oracle.Check(golden, done(tc.faulty), oracle.Options{Ordered: map[string]bool{"reserve": true, "ship": true}})
		if props(v) != tc.violations {
			t.Errorf("%s: violations %q, want %q", tc.name, props(v), tc.violations)
		}
		if tc.violations == "ordered-effects" && v.Violations[0].Detail != "ship {a} was applied before reserve {a}, which the golden run applied first" {
			t.Errorf("%s: %s", tc.name, v.Violations[0].Detail)
		}
	}
	if v := oracle.Check(golden, done(effects("ship {a}", "reserve {a}", "mail {x}")), oracle.Options{}); props(v) != "" {
		t.Errorf("without ordered tools, order does not matter: %q", props(v))
	}
}

// go-cmp aligns slices in a direction it draws once per process; the diff's text must not
// follow it. Five processes print the diff of a slice with an element inserted at its front:
// the same text each time.
func TestDiffIsTheSameInEveryProcess(t *testing.T) {
	if os.Getenv("CHAOSKIT_DIFF_CHILD") != "" {
		g, f := done(nil), done(nil)
		g.State = []string{"b", "c", "d", "b", "c"}
		f.State = []string{"a", "b", "c", "d", "b", "c", "e"}
		fmt.Print(oracle.Check(g, f, oracle.Options{}).Diff)
		return
	}
	var first string
	for i := range 5 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestDiffIsTheSameInEveryProcess$")
		cmd.Env = append(os.Environ(), "CHAOSKIT_DIFF_CHILD=1")
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		text, _, _ := strings.Cut(string(out), "PASS")
		if i == 0 {
			first = text
		} else if text != first {
			t.Fatalf("process %d printed\n%s\nprocess 0\n%s", i, text, first)
		}
	}
	if !strings.HasPrefix(first, `[0]: -"b" +"a"`) {
		t.Fatalf("diff:\n%s", first)
	}
}

// Without progress marks in the golden run, work lost is not measured, and the metrics say so
// rather than report 0 beats; with them it is measured, even at 0.
func TestWorkLostUnmeasuredWithoutMarks(t *testing.T) {
	if v := oracle.Check(done(nil), done(nil), oracle.Options{}); !v.Metrics.WorkLostUnmeasured {
		t.Errorf("no marks: %+v, want work lost not measured", v.Metrics)
	}
	golden := done(nil)
	golden.Marks = []oracle.Mark{{Beat: 2, Label: "m0"}}
	faulty := done(nil)
	faulty.Marks = golden.Marks
	if v := oracle.Check(golden, faulty, oracle.Options{}); v.Metrics.WorkLostUnmeasured {
		t.Errorf("marks: %+v, want work lost measured", v.Metrics)
	}
}
