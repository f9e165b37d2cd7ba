package reference_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
	"github.com/spf13/afero"
)

func bratRunner(t *testing.T, opts sim.Options) *sim.Runner {
	t.Helper()
	opts.Name = "brat"
	rn, err := sim.NewRunner(func() harness.Target { return newBrat() }, opts)
	if err != nil {
		t.Fatal(err)
	}
	return rn
}

// bratGolden is each session's events in a run without faults: the write-up's four session
// events in order, with the lease's acquisition, renewals and release between them.
var bratGolden = []string{"session.requested", "session.started", "lock.acquired",
	"lock.renewed", "session.heartbeat", "lock.renewed", "session.heartbeat",
	"session.completed", "lock.released"}

// brat, seed 001: the four session events are written in order (requested, started,
// heartbeat, completed), each durable before the next happens, and the view is the log's fold.
func TestSeedBrat_SessionEventsInOrder(t *testing.T) {
	rn := bratRunner(t, sim.Options{})
	c := rn.Run(nil)
	st := c.State.(bratState)
	if c.Verdict.Outcome != oracle.Pass || len(st.Sessions) != 2 || st.View != "current" {
		t.Fatalf("%s\nstate %+v", c, st)
	}
	for id, s := range st.Sessions {
		if !slices.Equal(s.Events, bratGolden) || st.Tasks[s.Task] != "done" {
			t.Errorf("%s: events %v, task %s; want %v and done", id, s.Events, st.Tasks[s.Task], bratGolden)
		}
	}
}

// bratCrashPoint classifies a crash state by the session it interrupted: "none" (no session
// under way), "requested" (requested, not started) or "started" (started, not completed), and
// returns that session.
func bratCrashPoint(st bratState) (string, string) {
	for id, s := range st.Sessions {
		switch {
		case s.started():
			return "started", id
		case slices.Contains(s.Events, "session.requested") && !slices.Contains(s.Events, "session.started"):
			return "requested", id
		}
	}
	return "none", ""
}

// brat, seed 001: what each crash point between the session events must lead to, as the
// write-up lists, at every beat, for a process killed, the power lost (keeping what was fsynced,
// or a subset of what was not), a write torn, a bit flipped:
//   - no session under way: the next run reconciles its view and carries on, as the golden run;
//   - between requested and started: the next replay sees a requested-but-not-started session
//     and reissues it; the spawn, keyed by the session, starts nothing twice;
//   - between started and completed: the Deacon waits for the session's lease to expire (the
//     process that held it is gone) before it declares it dead, writes lock.expired and reaps
//     it; the task fails and is not retried, the write-up's deliberate non-feature, so the run
//     ends otherwise than the golden one (same-state and same-result) and nothing else differs:
//     no effect duplicated or lost, nothing redone;
//   - an event damaged by a flipped bit stops the run loudly.
//
// With heartbeats gone stale by the time the Deacon looks (a restart a minute later), the lease
// has expired already and the session is reaped at once.
func TestSeedBrat_EveryCrashPointLeadsWhereTheWriteUpSays(t *testing.T) {
	for _, delay := range []time.Duration{time.Second, time.Minute} {
		rn := bratRunner(t, sim.Options{RestartDelay: delay})
		scheds, err := campaign.Schedules(rn, campaign.Options{Faults: []faults.Kind{faults.Kill, faults.Power, faults.Torn, faults.Corrupt}})
		if err != nil {
			t.Fatal(err)
		}
		count := map[string]int{}
		for _, s := range scheds {
			f := s[0]
			if f.Beat == faults.End {
				// A power cut after the end is no crash point of a process: nothing restarts to
				// rebuild the view, a cache this model writes without an fsync, so the state it
				// reads back says the view is missing or stale (it is, until the next command).
				continue
			}
			c := rn.Run(s)
			crashed, err := rn.CrashState(f)
			if err != nil { // the flipped bit hit an event: a loud stop
				count["event damaged"]++
				if f.Kind != faults.Corrupt || c.Verdict.Detected == "" || c.Verdict.Outcome != oracle.Pass {
					t.Errorf("crash state unreadable (%v) but the case did not stop loudly:\n%s", err, c)
				}
				continue
			}
			point, id := bratCrashPoint(crashed.(bratState))
			count[point]++
			if point != "started" {
				if c.Verdict.Outcome != oracle.Pass || c.Verdict.Detected != "" {
					t.Errorf("crash point %q %s: want the golden run's outcome:\n%s", point, id, c)
				}
				continue
			}
			final, _ := c.State.(bratState)
			s := final.Sessions[id]
			want := append(slices.Clone(crashed.(bratState).Sessions[id].Events), "lock.expired", "session.reaped")
			for _, v := range c.Verdict.Violations {
				if v.Property != oracle.SameState && v.Property != oracle.SameResult {
					t.Errorf("crash point started %s: violated %s:\n%s", id, v.Property, c)
				}
			}
			switch {
			case !slices.Equal(s.Events, want) || final.Tasks[s.Task] != "failed":
				t.Errorf("under %s session %s went %v (task %s), want %v and failed", f, id, s.Events, final.Tasks[s.Task], want)
			case delay == time.Second && s.Waited <= 0:
				t.Errorf("under %s the Deacon reaped %s without waiting for its lease to expire", f, id)
			case delay == time.Minute && s.Waited != 0:
				t.Errorf("under %s, restarted a minute later, the Deacon waited %s for a lease already expired", f, s.Waited)
			case final.View != "current":
				t.Errorf("under %s the view is %s", f, final.View)
			}
		}
		for _, point := range []string{"none", "requested", "started", "event damaged"} {
			if count[point] == 0 {
				t.Errorf("no case crashed at %q", point)
			}
		}
		t.Logf("restart after %s: %d cases by crash point: %v", delay, len(scheds), count)
	}
}

// brat, seed 001: the view is a cache, purely derivable: rebuilt from the log when a crash left
// it stale (caught up), missing (a power loss before its directory entry was durable) or
// damaged (a flipped bit), and the run goes on to the golden state. Every case ends with the
// view current.
func TestSeedBrat_ViewRebuiltFromTheLogAfterCrashes(t *testing.T) {
	rn := bratRunner(t, sim.Options{})
	cases, err := campaign.Explore(context.Background(), rn, campaign.Options{Faults: []faults.Kind{faults.Kill, faults.Power, faults.Corrupt}})
	if err != nil {
		t.Fatal(err)
	}
	views := map[string]int{}
	for _, c := range cases {
		if c.Schedule[0].Beat == faults.End {
			continue // after the end no process rebuilds the view (see above)
		}
		crashed, err := rn.CrashState(c.Schedule[0])
		if err != nil {
			continue // an event damaged: the test above
		}
		st := crashed.(bratState)
		if point, _ := bratCrashPoint(st); point == "started" {
			continue // reaped, not the golden state: the test above
		}
		views[st.View]++
		if c.Verdict.Outcome != oracle.Pass || c.State.(bratState).View != "current" {
			t.Errorf("with the view %s after %s:\n%s", st.View, c.Schedule, c)
		}
	}
	for _, v := range []string{"stale", "missing", "damaged"} {
		if views[v] == 0 {
			t.Errorf("no crash left the view %s (%v)", v, views)
		}
	}
	t.Logf("views found after the crashes, rebuilt or caught up: %v", views)
}

// brat, seed 001: a view deleted, damaged, of an old schema, or claiming more than the log
// holds is thrown away and rebuilt from the log, to the same bytes; the log is not touched.
func TestSeedBrat_ViewDeletedOrCorruptedIsRebuilt(t *testing.T) {
	run := func(fsys afero.Fs) {
		t.Helper()
		if _, err := sim.RunBare(func() harness.Target { return newBrat() }, fsys, sim.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	mem := afero.NewMemMapFs()
	run(mem)
	want, _ := afero.ReadFile(mem, bratViewFile)
	events, _ := readLog(mem)
	for name, damage := range map[string]func(fsys afero.Fs){
		"deleted": func(fsys afero.Fs) { fsys.Remove(bratViewFile) },
		"a bit flipped": func(fsys afero.Fs) {
			b, _ := afero.ReadFile(fsys, bratViewFile)
			b[len(b)/2] ^= 0x10
			afero.WriteFile(fsys, bratViewFile, b, 0o644)
		},
		"old schema": func(fsys afero.Fs) {
			v := newBratView()
			v.Schema = 1
			afero.WriteFile(fsys, bratViewFile, encodeView(v), 0o644)
		},
		"ahead of the log": func(fsys afero.Fs) {
			v, _ := readView(fsys, len(events))
			v.Head = 999
			afero.WriteFile(fsys, bratViewFile, encodeView(v), 0o644)
		},
		"truncated": func(fsys afero.Fs) {
			b, _ := afero.ReadFile(fsys, bratViewFile)
			afero.WriteFile(fsys, bratViewFile, b[:10], 0o644)
		},
	} {
		damage(mem)
		run(mem)
		got, _ := afero.ReadFile(mem, bratViewFile)
		again, _ := readLog(mem)
		if string(got) != string(want) || len(again) != len(events) {
			t.Errorf("view %s: rebuilt to %d bytes (want the %d it had), log %d events (want %d)", name, len(got), len(want), len(again), len(events))
		}
	}
}
