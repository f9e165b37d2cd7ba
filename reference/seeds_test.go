package reference_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/reference"
)

// beatOf returns the golden beat whose label is the n-th (from 1) to contain substr.
func beatOf(t *testing.T, rn *tested, substr string, n int) int {
	t.Helper()
	for i, label := range rn.golden().Trace() {
		if strings.Contains(label, substr) {
			if n--; n == 0 {
				return i
			}
		}
	}
	t.Fatalf("the golden run has no beat %q", substr)
	return -1
}

// Burr write-up: five steps, each appending a line to a log (not idempotent), the process
// killed during step three. Restarting from scratch wastes three steps (gather, plan and build
// run twice); checkpointing after every step wastes one (build, whose effect landed before its
// checkpoint). Both still finish.
func TestSeedBurr_KillInStep3Of5_Wasted_Scratch3_Checkpointed1(t *testing.T) {
	for _, tc := range []struct {
		variant reference.Variant
		wasted  int
	}{
		{reference.InMemory, 3},    // restart from scratch
		{reference.ActThenSave, 1}, // Burr's persister: a checkpoint after each completed step
	} {
		rn := runner(t, tc.variant, reference.Pipeline(), campaign.Options{})
		// Step three's line is in the log, its checkpoint is not: kill as the reply comes back.
		kill := beatOf(t, rn, " applied", 3)
		c := rn.Run(faults.Schedule{{Kind: faults.Kill, Beat: kill}})
		if c.Breaks(oracle.Completes) {
			t.Errorf("%s did not finish: %s", tc.variant, c)
		}
		if got := c.Verdict.Metrics.Duplicates; got != tc.wasted {
			t.Errorf("%s: %d steps ran twice, the write-up measured %d\n%s", tc.variant, got, tc.wasted, c)
		}
		t.Logf("%-14s killed at beat %d (step 3 of 5): %d wasted step(s)", tc.variant, kill, c.Verdict.Metrics.Duplicates)
	}
}

// dojo write-up: kill at a random beat on every one of 30 tasks, resume, compare with an
// uninterrupted run. In-memory state survives 0/30 kills; checkpointing after the act survives
// all 30 but duplicates side effects; recording the intent and acting idempotently survives all
// 30 with no duplicate and at most the beat in flight lost.
func TestSeedDojo_KillAtRandomBeatOn30Tasks(t *testing.T) {
	tasks := reference.Tasks(30, 2026)
	rng := rand.New(rand.NewPCG(30, 30))
	type row struct{ survived, duplicates, lost, bounded int }
	rows := map[reference.Variant]*row{}
	order := []reference.Variant{reference.InMemory, reference.ActThenSave, reference.Correct}
	for _, task := range tasks {
		step := 1 + rng.IntN(len(task.Steps)-1) // a step after the first, so there is progress to lose
		pick := rng.Float64()
		for _, v := range order {
			rn := runner(t, v, task, campaign.Options{})
			// A random beat inside that step: after the previous step's commit, up to its own.
			from := beatOf(t, rn, "committed", step) + 1
			to := beatOf(t, rn, "committed", step+1)
			kill := from + int(pick*float64(to-from+1))
			c := rn.Run(faults.Schedule{{Kind: faults.Kill, Beat: kill}})
			r := rows[v]
			if r == nil {
				r = &row{}
				rows[v] = r
			}
			// Surviving a kill means resuming from the checkpoint rather than starting over.
			if !c.Breaks(oracle.Completes) && !c.Breaks(oracle.BoundedWorkLost) {
				r.survived++
			}
			if !c.Breaks(oracle.BoundedWorkLost) {
				r.bounded++
			}
			r.duplicates += c.Verdict.Metrics.Duplicates
			r.lost += c.Verdict.Metrics.WorkLostBeats
		}
	}
	t.Logf("%-14s %9s %11s %18s", "agent", "survived", "duplicates", "mean beats lost")
	for _, v := range order {
		r := rows[v]
		name := string(v)
		if v == reference.Correct {
			name = "reference"
		}
		t.Logf("%-14s %6d/30 %11d %18.2f", name, r.survived, r.duplicates, float64(r.lost)/30)
	}
	if r := rows[reference.InMemory]; r.survived != 0 {
		t.Errorf("in-memory state survived %d/30 kills, want 0/30", r.survived)
	}
	if r := rows[reference.ActThenSave]; r.survived != 30 || r.duplicates == 0 {
		t.Errorf("act-then-save survived %d/30 with %d duplicates, want 30/30 with some duplicates", r.survived, r.duplicates)
	}
	if r := rows[reference.Correct]; r.survived != 30 || r.duplicates != 0 || r.bounded != 30 {
		t.Errorf("the reference survived %d/30 with %d duplicates, %d/30 within the beat in flight; want 30/30, 0, 30/30", r.survived, r.duplicates, r.bounded)
	}
}

// ShanClaw write-up: kill the agent between a mid-turn checkpoint and the next one and reload
// from disk: the in-progress flag survived, the transcript holds the user's message and the
// tool batch (three messages), and the metadata is in step with the messages.
func TestSeedShanClaw_MidTurnCrash_InProgress_Transcript3_MetaInStep(t *testing.T) {
	rn := runner(t, reference.Correct, reference.Onboarding(), campaign.Options{})
	kill := beatOf(t, rn, "step 0 collect_w9 committed", 1) + 1
	got, err := rn.CrashState(faults.Fault{Kind: faults.Kill, Beat: kill})
	if err != nil {
		t.Fatal(err)
	}
	st := got.(reference.State)
	if !st.InProgress {
		t.Error("the in-progress flag did not survive on disk")
	}
	if len(st.Messages) != 3 {
		t.Errorf("transcript has %d messages, want 3 (task, tool_use, tool_result): %+v", len(st.Messages), st.Messages)
	}
	if len(st.Meta) != len(st.Messages) {
		t.Errorf("%d metadata entries for %d messages", len(st.Meta), len(st.Messages))
	}
}

// And once the resumed run completes, its final save clears the flag.
func TestSeedShanClaw_ResumeAfterCrash_FinalSaveClears(t *testing.T) {
	rn := runner(t, reference.Correct, reference.Onboarding(), campaign.Options{})
	kill := beatOf(t, rn, "step 0 collect_w9 committed", 1) + 1
	c := rn.Run(faults.Schedule{{Kind: faults.Kill, Beat: kill}})
	if c.Verdict.Outcome != oracle.Pass {
		t.Fatalf("%s", c)
	}
	if st := c.State.(reference.State); st.InProgress || st.Phase != "completed" {
		t.Errorf("after the resumed run: in_progress=%v phase=%q, want false, completed", st.InProgress, st.Phase)
	}
}

// The bug the ShanClaw write-up says failed most often: append-only metadata. After the
// transcript is compacted, a crash and reload leaves the metadata out of step with the messages
// and the resumed run finishes with misattributed metadata. Without a crash nothing shows.
func TestSeedShanClaw_AppendOnlyMetaDriftsOnlyOnCrash(t *testing.T) {
	rn := runner(t, reference.MetaDrift, reference.Onboarding(), campaign.Options{})
	kill := beatOf(t, rn, "step 5 create_po planned", 1) + 1 // after the compaction
	got, err := rn.CrashState(faults.Fault{Kind: faults.Kill, Beat: kill})
	if err != nil {
		t.Fatal(err)
	}
	st := got.(reference.State)
	if len(st.Meta) == len(st.Messages) {
		t.Fatalf("after a crash past the compaction, %d metadata entries for %d messages: no drift", len(st.Meta), len(st.Messages))
	}
	c := rn.Run(faults.Schedule{{Kind: faults.Kill, Beat: kill}})
	if !c.Breaks(oracle.SameState) {
		t.Errorf("the resumed run's state matches the golden run's:\n%s", c)
	}
	t.Logf("reloaded %d metadata entries for %d messages; the resumed run ends with misattributed metadata", len(st.Meta), len(st.Messages))
}
