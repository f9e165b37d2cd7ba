package sim_test

import (
	"context"
	"testing"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
)

// A fault fires at the beat it names if that beat admits its kind, and at no other: a tool
// fault at a mark does not fire at the next tool call (so tool-ambiguous@0, @1 and @2 are not three
// names for the case of @2), and the case says so, quoting the beat.
func TestFaultFiresAtItsBeatOnly(t *testing.T) {
	target := harness.Func{ToolList: []harness.Tool{{Name: "po", Contract: harness.NotIdempotent}},
		RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
			env.Mark("a")
			env.Mark("b")
			_, err := env.Call(ctx, harness.Call{Tool: "po", Args: 1}) // beats 2 (sent) and 3 (applied)
			env.Mark("c")
			return nil, err
		}}
	rn := newRunner(t, target, sim.Options{})
	for _, tc := range []struct{ schedule, why string }{
		{"tool-ambiguous@0", "tool-ambiguous@0 did not fire: it fires only at a tool call, and beat 0 is \"mark a\""},
		{"tool-transient@1", "tool-transient@1 did not fire: it fires only at a tool call, and beat 1 is \"mark b\""},
		{"tool-ambiguous@3", "tool-ambiguous@3 did not fire: it fires only at a tool call, and beat 3 is \"tool po applied\""},
		{"diskfull@2:0", "diskfull@2:0 did not fire: it fires only at a write, and beat 2 is \"tool po sent\""},
		{"tool-ambiguous@2", ""},
	} {
		s, err := faults.ParseSchedule(tc.schedule)
		if err != nil {
			t.Fatal(err)
		}
		c := rn.Run(s)
		if tc.why == "" {
			if len(c.Unfired) != 0 || c.Beats[2].Fault != 1 {
				t.Errorf("%s did not fire at its beat: %s", tc.schedule, c)
			}
			continue
		}
		if len(c.Unfired) != 1 || c.Verdict.Outcome != oracle.Unknown || c.Verdict.Reason != "no fault fired, so the case tested nothing: "+tc.why {
			t.Errorf("%s: unfired %v, %s (%s)\nwant unknown: %s", tc.schedule, c.Unfired, c.Verdict.Outcome, c.Verdict.Reason, tc.why)
		}
	}
	// A replay asks for every fault: one that did not fire makes it unknown, quoting its beat.
	c := rn.Run(faults.Schedule{{Kind: faults.Kill, Beat: 1}, {Kind: faults.ToolTransient, Beat: 3}})
	c.RequireAll(5)
	if want := "not every fault fired: tool-transient@3 did not fire: it fires only at a tool call, and beat 3 is \"mark b\""; c.Verdict.Outcome != oracle.Unknown || c.Verdict.Reason != want {
		t.Fatalf("%s (%s), want unknown: %s", c.Verdict.Outcome, c.Verdict.Reason, want)
	}
}

// Faults that come after the run has ended are reported as unfired, not silently dropped.
func TestUnfiredFaultsAreReported(t *testing.T) {
	rn := newRunner(t, steps{n: 2}, sim.Options{})
	c := rn.Run(faults.Schedule{{Kind: faults.Kill, Beat: 1}, {Kind: faults.Power, Beat: 500}})
	if len(c.Unfired) != 1 || c.Unfired[0].Beat != 500 {
		t.Fatalf("unfired = %v", c.Unfired)
	}
	// campaign's TestReportCaseListsUnfiredFaults: the report lists them too.
}

// The recovery window of a depth-2 campaign reaches the beat after the recovery's first mark: a
// power cut at the mark lands before the mark counts, so only the one after it asks whether what
// the recovery declared durable is. Here it is not: the log's name was never made durable.
func TestRecoveryWindowReachesPastTheFirstMark(t *testing.T) {
	rn := newRunner(t, steps{n: 3, syncOnCreate: true}, sim.Options{})
	window := rn.Recovery(1) // kill@1: the log created, the directory not yet fsynced
	beats := rn.Beats(faults.Schedule{{Kind: faults.Kill, Beat: 1}}, 1)
	last := window[len(window)-1]
	if len(window) < 2 || beats[last-1].Kind != sim.BeatMark {
		t.Fatalf("Recovery(1) = %v: want it to end one beat after the recovery's first mark", window)
	}
	for _, j := range window {
		c := rn.Run(faults.Schedule{{Kind: faults.Kill, Beat: 1}, {Kind: faults.Power, Beat: j}})
		if want := j == last; c.Breaks(oracle.BoundedWorkLost) != want {
			t.Errorf("kill@1,power@%d breaks bounded-work-lost: %v, want %v\n%s", j, !want, want, c)
		}
	}
}
