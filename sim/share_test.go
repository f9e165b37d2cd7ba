package sim_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/sim"
	"github.com/spf13/afero"
)

// lostAppends creates a log durably, waits a second, appends three records to it without an
// fsync, fsyncs it and looks its order up with a read-only tool; restarted, it is done once the
// log holds the three.
type lostAppends struct{ logState }

func (lostAppends) Tools() []harness.Tool {
	return []harness.Tool{{Name: "status", Contract: harness.ReadOnly}}
}

func (lostAppends) Run(ctx context.Context, env *harness.Env) (any, error) {
	fsys := env.FS()
	if b, _ := afero.ReadFile(fsys, "log"); len(b) == 3 {
		return "done", nil
	}
	f, err := openLog(fsys, os.O_TRUNC)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := env.Sleep(ctx, time.Second); err != nil {
		return nil, err
	}
	for _, rec := range "abc" {
		if _, err := f.Write([]byte{byte(rec)}); err != nil {
			return nil, err
		}
	}
	if err := f.Sync(); err != nil {
		return nil, err
	}
	if _, err := env.Call(ctx, harness.Call{Tool: "status", Args: "log"}); err != nil {
		return nil, err
	}
	return "done", nil
}

// logState is the state of a target whose durable state is the file "log".
type logState struct{}

func (logState) State(fsys afero.Fs) (any, error) {
	b, err := afero.ReadFile(fsys, "log")
	return string(b), err
}

// openLog opens the file "log" for writing, creating it, with flag added, and fsyncs its
// directory, so that it survives a power cut.
func openLog(fsys afero.Fs, flag int) (afero.File, error) {
	f, err := fsys.OpenFile("log", os.O_CREATE|os.O_WRONLY|flag, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syncDir(fsys); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Crashes that leave what a process can see the same share one recovery: power cuts at each of
// the appends and at the fsync (each lost what was appended, bytes and modification time alike),
// and kills at the fsync and at either beat of the look-up (the page cache is the same; what is
// durable differs, and the look-up is in the world's log but changes nothing in it). Each case
// comes out as it does alone.
func TestCrashesOfOneVisibleStateShareARecovery(t *testing.T) {
	probe := newRunner(t, lostAppends{}, sim.Options{})
	g, err := probe.Golden(nil)
	if err != nil {
		t.Fatal(err)
	}
	at := func(prefix string) []int {
		var beats []int
		for i, l := range g.Trace() {
			if strings.HasPrefix(l, prefix) {
				beats = append(beats, i)
			}
		}
		return beats
	}
	writes, syncs, status := at("fs.write log"), at("fs.sync log"), at("tool status")
	if len(writes) != 3 || len(syncs) != 1 || len(status) != 2 {
		t.Fatalf("golden run %q: want three writes of the log, its fsync and two beats of the look-up", g.Trace())
	}
	for _, group := range []faults.Schedule{
		schedules(faults.Power, append(writes, syncs...)),
		schedules(faults.Kill, append(syncs, status...)),
	} {
		shared, alone := newRunner(t, lostAppends{}, sim.Options{}), newRunner(t, lostAppends{}, sim.Options{NoShare: true})
		for _, f := range group {
			s, o := shared.Run(faults.Schedule{f}), alone.Run(faults.Schedule{f})
			got, want := fmt.Sprintf("%s %+v %v", s.Verdict.Outcome, s.Verdict.Metrics, s.State), fmt.Sprintf("%s %+v %v", o.Verdict.Outcome, o.Verdict.Metrics, o.State)
			if got != want {
				t.Errorf("%s: shared %s, alone %s", f, got, want)
			}
		}
		if tl := shared.Tally(); tl.Runs != 1 || tl.Shared != len(group)-1 {
			t.Errorf("%v: %+v; want one run, every other case deciding from it", group, tl)
		}
	}
}

// schedules returns a fault of kind at each of the beats.
func schedules(kind faults.Kind, beats []int) faults.Schedule {
	var s faults.Schedule
	for _, b := range beats {
		s = append(s, faults.Fault{Kind: kind, Beat: b})
	}
	return s
}

// syncedRecords appends records to a log, each written and fsynced before the next; restarted,
// it appends what the log lacks.
type syncedRecords struct {
	logState
	n int
}

func (syncedRecords) Tools() []harness.Tool { return nil }

func (s syncedRecords) Run(ctx context.Context, env *harness.Env) (any, error) {
	fsys := env.FS()
	b, _ := afero.ReadFile(fsys, "log")
	f, err := openLog(fsys, os.O_APPEND)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	for i := len(b); i < s.n; i++ {
		if _, err := f.Write([]byte{'a' + byte(i)}); err != nil {
			return nil, err
		}
		if err := f.Sync(); err != nil {
			return nil, err
		}
	}
	return "done", nil
}

// A power cut that loses only the write it fell on leaves what a kill before that write left:
// it shares the kill's recovery even when many other recoveries ran in between, as they do in a
// campaign that lists every kill before the power cuts.
func TestARecoveryIsKeptForCasesFarDownTheList(t *testing.T) {
	const records = 20
	target := syncedRecords{n: records}
	shared, alone := newRunner(t, target, sim.Options{}), newRunner(t, target, sim.Options{NoShare: true})
	g, err := shared.Golden(nil)
	if err != nil {
		t.Fatal(err)
	}
	n := len(g.Trace())
	var kills, powers faults.Schedule
	for b := range n {
		kills = append(kills, faults.Fault{Kind: faults.Kill, Beat: b})
		powers = append(powers, faults.Fault{Kind: faults.Power, Beat: b})
	}
	var afterKills sim.Tally
	for _, f := range append(kills, powers...) {
		if f == powers[0] {
			afterKills = shared.Tally()
		}
		s, o := shared.Run(faults.Schedule{f}), alone.Run(faults.Schedule{f})
		got, want := fmt.Sprintf("%s %+v %v", s.Verdict.Outcome, s.Verdict.Metrics, s.State), fmt.Sprintf("%s %+v %v", o.Verdict.Outcome, o.Verdict.Metrics, o.State)
		if got != want {
			t.Errorf("%s: shared %s, alone %s", f, got, want)
		}
	}
	// A kill stops the process before its beat's operation, so a kill at an fsync and one at the
	// next write leave the same page cache: the create alone, the directory's fsync with the
	// first write, each fsync of the log with the next write, the last fsync alone.
	tl := shared.Tally()
	if want := records + 2; afterKills.Runs != want || tl.Runs != want || tl.States != want || tl.StatesAtMost {
		t.Errorf("%d kills took %d recoveries, %d power cuts %d more (%+v); want %d crash states, a recovery each, none for the power cuts", len(kills), afterKills.Runs, len(powers), tl.Runs-afterKills.Runs, tl, want)
	}
}
