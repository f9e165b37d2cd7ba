package sim_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
)

// run builds the beats of a made-up run: filler beats (sleeps) up to n, with the given beats put
// in at their places, each of process 0 unless it says otherwise.
type runBuilder struct {
	beats []sim.Beat
	notes map[int]string
}

func newRun(n int) *runBuilder {
	r := &runBuilder{beats: make([]sim.Beat, n), notes: map[int]string{}}
	for i := range r.beats {
		r.beats[i] = sim.Beat{Kind: sim.BeatSleep, Dur: time.Second}
	}
	return r
}

// from makes beats i and on belong to process proc of worker.
func (r *runBuilder) from(i, proc, worker int) *runBuilder {
	for j := i; j < len(r.beats); j++ {
		r.beats[j].Process, r.beats[j].Worker = proc, worker
	}
	return r
}

func (r *runBuilder) set(i int, b sim.Beat) *runBuilder {
	b.Process, b.Worker = r.beats[i].Process, r.beats[i].Worker
	r.beats[i] = b
	return r
}

func (r *runBuilder) tool(i int, name, key string) *runBuilder {
	r.set(i, sim.Beat{Kind: sim.BeatToolSent, Name: name, Key: key})
	return r.set(i+1, sim.Beat{Kind: sim.BeatToolApplied, Name: name, Key: key})
}

func (r *runBuilder) mark(i int, label string) *runBuilder {
	return r.set(i, sim.Beat{Kind: sim.BeatMark, Name: label})
}

// crash puts a kill at beat i, with the notes the run makes: the process ends there and the next
// one starts after it.
func (r *runBuilder) crash(i int) (*runBuilder, faults.Schedule) {
	r.beats[i].Fault = 1
	r.notes[i] = fmt.Sprintf("process %d crashed by kill@%d", r.beats[i].Process, i)
	r.from(i+1, r.beats[i].Process+1, r.beats[i].Worker)
	r.notes[len(r.beats)-1] = fmt.Sprintf("process %d completed", r.beats[i].Process+1)
	return r, faults.Schedule{{Kind: faults.Kill, Beat: i}}
}

func (r *runBuilder) kase(s faults.Schedule, v oracle.Verdict) *sim.Case {
	return &sim.Case{Target: "t", Seed: 1, Schedule: s, Verdict: v, Beats: r.beats, Notes: r.notes}
}

func fail(props ...string) oracle.Verdict {
	v := oracle.Verdict{Outcome: oracle.Fail}
	for _, p := range props {
		v.Violations = append(v.Violations, oracle.Violation{Property: p, Detail: "detail"})
	}
	return v
}

// traced returns the trace as beat number -> note, with "" for a beat without one.
func traced(c *sim.Case) map[int]string {
	out := map[int]string{}
	for _, t := range c.Trace() {
		out[t.Beat] = t.Note
	}
	return out
}

func wantBeats(t *testing.T, c *sim.Case, want map[int]string) {
	t.Helper()
	got := traced(c)
	for b, note := range want {
		n, ok := got[b]
		switch {
		case !ok:
			t.Errorf("beat %d (%s) is not in the trace:\n%s", b, c.Beats[b].Label(), c)
		case note != "" && !strings.Contains(n, note):
			t.Errorf("beat %d has note %q, want one with %q", b, n, note)
		}
	}
}

func TestTraceProcessStarts(t *testing.T) {
	r := newRun(200)
	r, s := r.crash(100)
	c := r.kase(s, fail(oracle.SameState))
	wantBeats(t, c, map[int]string{0: "process 0 starts", 101: "process 1 starts", 199: "process 1 completed"})
	if _, ok := traced(c)[50]; ok {
		t.Errorf("beat 50, far from anything, is in the trace:\n%s", c)
	}
	// A beat the run noted keeps its note.
	r.notes[0] = "something happened"
	if got := traced(r.kase(s, fail(oracle.SameState)))[0]; got != "something happened" {
		t.Errorf("beat 0's note is %q, want the run's", got)
	}
}

// excess returns the effects of tool applied at the given sent beats, by process, as the
// oracle's Verdict.Excess lists them.
func excess(tool, identity string, at ...[2]int) []oracle.Effect {
	var out []oracle.Effect
	for _, a := range at {
		out = append(out, oracle.Effect{Tool: tool, Identity: identity, Beat: a[0], Process: a[1]})
	}
	return out
}

// The second application of a duplicated effect is far from the fault, after the restart: the
// trace shows both calls (the oracle's Verdict.Excess names them), and the second says it
// applies the effect again.
func TestTraceDuplicateEffects(t *testing.T) {
	r := newRun(300).tool(10, "create_po", "po-1").tool(20, "notify", "n-1")
	r, s := r.crash(100)
	r.tool(150, "create_po", "po-1:b").tool(160, "notify", "n-1")
	v := fail(oracle.NoDuplicateEffects)
	v.Excess = excess("create_po", `create_po {"n":1}`, [2]int{10, 0}, [2]int{150, 1})
	c := r.kase(s, v)
	wantBeats(t, c, map[int]string{10: "", 11: "", 150: "applied again: first at beat 10 (process 0)", 151: ""})
	if got := traced(c); got[20] != "" || got[160] != "" {
		t.Errorf("the calls of notify, which had no duplicate, are in the trace:\n%s", c)
	}

	// A tool called a thousand times keeps a few calls.
	r = newRun(10_000)
	for i := 0; i < 9000; i += 9 {
		r.tool(i, "create_po", "")
		v.Excess = append(v.Excess, oracle.Effect{Tool: "create_po", Identity: "po", Beat: i})
	}
	r, s = r.crash(9500)
	if n := len(r.kase(s, v).Trace()); n > 60 {
		t.Errorf("the trace of a tool called 1000 times holds %d beats", n)
	}
}

func TestTracePhantomEffects(t *testing.T) {
	r := newRun(300).tool(10, "create_po", "po-1").tool(20, "notify", "n-1")
	r, s := r.crash(100)
	r.tool(150, "create_po", "po-1")
	v := fail(oracle.NoPhantomEffects)
	v.Excess = excess("create_po", `create_po {"n":2}`, [2]int{150, 1})
	c := r.kase(s, v)
	wantBeats(t, c, map[int]string{150: "", 151: ""})
	if _, ok := traced(c)[20]; ok {
		t.Errorf("a call with nothing to do with the phantom is in the trace:\n%s", c)
	}
}

func TestTraceMarksMadeAgain(t *testing.T) {
	r := newRun(400)
	for k := range 8 {
		r.mark(10+10*k, fmt.Sprintf("step %d", k))
	}
	r, s := r.crash(100)
	for k := range 8 {
		r.mark(200+10*k, fmt.Sprintf("step %d", k))
	}
	c := r.kase(s, fail(oracle.BoundedWorkLost))
	wantBeats(t, c, map[int]string{200: "made again: first made at beat 10 (process 0)", 270: "first made at beat 80"})
	if _, ok := traced(c)[230]; ok {
		t.Errorf("a mark made again between the first and the last is in the trace:\n%s", c)
	}
	if _, ok := traced(r.kase(s, fail(oracle.SameState)))[200]; ok {
		t.Error("marks made again are shown when bounded-work-lost held")
	}
}

// A frozen worker's lease is taken over by the other: the acquisition that took it is shown,
// the ones the lease service refused are not.
func TestTraceTakeover(t *testing.T) {
	r := newRun(300).from(0, 0, 0).from(150, 1, 1)
	r.set(0, sim.Beat{Kind: sim.BeatLease, Name: "run", Key: "acquire"}).mark(1, "started")
	r.set(10, sim.Beat{Kind: sim.BeatSleep, Dur: time.Hour, Fault: 1}) // the freeze
	r.notes[10] = "process 0 frozen for 2h"
	for i := 150; i < 200; i += 2 {
		r.set(i, sim.Beat{Kind: sim.BeatLease, Name: "run", Key: "acquire", Refused: i < 198})
	}
	r.mark(199, "taken over")
	r.notes[299] = "process 1 completed; process 0 completed"
	c := r.kase(faults.Schedule{{Kind: faults.Lease, Beat: 10, Dur: 2 * time.Hour}}, fail(oracle.NoDuplicateEffects))
	wantBeats(t, c, map[int]string{0: "process 0 starts", 150: "process 1 starts", 198: ""})
	if _, ok := traced(c)[170]; ok {
		t.Errorf("an acquisition that waited is in the trace:\n%s", c)
	}
}

// A long run with a fault, restarts, duplicates and work redone keeps a short trace.
func TestTraceShort(t *testing.T) {
	r := newRun(10_000)
	for k := range 2000 {
		r.mark(4*k+1, fmt.Sprintf("step %d", k%500))
		r.tool(4*k+2, []string{"a", "b", "c"}[k%3], fmt.Sprint(k%700))
	}
	r, s := r.crash(5001)
	v := fail(oracle.NoDuplicateEffects, oracle.NoPhantomEffects, oracle.BoundedWorkLost)
	for k := range 2000 {
		v.Excess = append(v.Excess, oracle.Effect{Tool: "a", Identity: fmt.Sprint(k % 700), Beat: 4*k + 2})
	}
	if n := len(r.kase(s, v).Trace()); n > 80 {
		t.Errorf("a 10,000-beat case keeps %d beats in its trace", n)
	}
}

func TestStringWithoutFault(t *testing.T) {
	r := newRun(30)
	r.notes[29] = "process 0 completed"
	c := r.kase(nil, oracle.Verdict{Outcome: oracle.Pass})
	c.Repro = "chaoskit replay --target t --seed 1 --schedule ''"
	got := c.String()
	if !strings.HasPrefix(got, "t with no fault (seed 1): pass\n") {
		t.Errorf("a case with no fault starts %q", got[:strings.Index(got, "\n")])
	}
	for _, odd := range []string{"under ", "around the fault", ">> ", "<- "} {
		if strings.Contains(got, odd) {
			t.Errorf("a case with no fault says %q:\n%s", odd, got)
		}
	}
}

// A fleet fault's case runs a second worker that the target never runs on its own: its trace
// says so where that worker's first process starts, so that a single-instance harness failing
// there is not a mystery.
func TestTraceNamesTheFleetsExtraWorker(t *testing.T) {
	notify := harness.Func{
		ToolList: []harness.Tool{{Name: "notify", Contract: harness.NotIdempotent}},
		RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
			if _, err := env.Call(ctx, harness.Call{Tool: "notify", Args: "started"}); err != nil {
				return nil, err
			}
			env.Mark("notified")
			return nil, nil
		},
	}
	rn := newRunner(t, notify, sim.Options{})
	c := rn.Run(faults.Schedule{{Kind: faults.Deploy, Beat: 3}})
	if c.Verdict.Outcome != oracle.Fail {
		t.Fatalf("a single-instance target notifying again after a deploy passed: %s", c)
	}
	var notes []string
	for _, tb := range c.Trace() {
		if strings.Contains(tb.Note, "beyond the target's 1") {
			notes = append(notes, tb.Note)
		}
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "on worker 1") {
		t.Fatalf("notes naming the extra worker: %q\n%s", notes, c)
	}
}
