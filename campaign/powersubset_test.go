package campaign_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/chaoskit/chaoskit/sim"
	"github.com/spf13/afero"
)

// slotSize is the size of a record of pairLog: a line padded with dots.
const slotSize = 16

// pairLog is a small target whose steps each append a pair of records to a log of fixed-size
// slots, "step 3 part a" and "step 3 part b", each with a write of its own at its slot's offset,
// then fsync the log and mark the step. Its reader takes every well-formed slot it finds as
// valid and resumes after the last step whose part b it finds: part b is written after part a,
// so finding it must mean the step is whole. Redoing a step overwrites its slots in place.
//
// With syncBetween false, the two writes of a step go to the disk with no fsync between them,
// and a power loss may keep the second without the first: the reader then takes the step as
// done, skips it, and the run ends with part a missing for good. A plain power loss cannot show
// it (it keeps both writes or neither), nor a kill (both), nor a torn write (it tears the last
// write, part b, keeping part a); only a power loss that keeps a subset of what was not
// fsynced can. With syncBetween, part b is written only once part a is durable.
type pairLog struct {
	steps       int
	syncBetween bool
}

func slot(step int, part byte) []byte {
	s := fmt.Sprintf("step %d part %c", step, part)
	return []byte(s + strings.Repeat(".", slotSize-1-len(s)) + "\n")
}

// read returns the well-formed records of the log, in slot order, and the next step to do.
func (pairLog) read(fsys afero.Fs) (recs []string, next int) {
	b, _ := afero.ReadFile(fsys, "log")
	for i := 0; (i+1)*slotSize <= len(b); i++ {
		s := b[i*slotSize : (i+1)*slotSize]
		if step, part := i/2, byte('a'+i%2); bytes.Equal(s, slot(step, part)) {
			recs = append(recs, string(bytes.TrimRight(s, ".\n")))
			if part == 'b' {
				next = step + 1
			}
		}
	}
	return recs, next
}

func (l pairLog) Run(ctx context.Context, env *harness.Env) (any, error) {
	fsys := env.FS()
	_, next := l.read(fsys)
	f, err := fsys.OpenFile("log", os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := reports.SyncDir(fsys, "."); err != nil {
		return nil, err
	}
	for i := next; i < l.steps; i++ {
		for _, part := range []byte{'a', 'b'} {
			if _, err := f.WriteAt(slot(i, part), int64((2*i+int(part-'a'))*slotSize)); err != nil {
				return nil, err
			}
			if part == 'a' && !l.syncBetween {
				continue
			}
			if err := f.Sync(); err != nil {
				return nil, err
			}
		}
		env.Mark(fmt.Sprintf("step %d", i))
	}
	return l.steps, nil
}

func (l pairLog) State(fsys afero.Fs) (any, error) {
	recs, _ := l.read(fsys)
	return recs, nil
}

// The bug only a power loss keeping a subset catches: the log whose second record of a pair
// can be durable while the first is not. Every plain power loss, kill and torn write passes;
// some power@K:subset case fails same-state, shrinks to itself (the plain power loss at its
// beat passes), and the fixed log, fsynced between its two writes, passes them all.
func TestPowerSubsetCatchesAReorderedPair(t *testing.T) {
	kinds := []faults.Kind{faults.Kill, faults.Power, faults.Torn}
	rn := newRunner(t, harness.Fresh(pairLog{steps: 6}), sim.Options{Seed: 1})
	var caught *sim.Case
	subsets := 0
	for _, c := range explore(t, rn, campaign.Options{Faults: kinds}) {
		f := c.Schedule[0]
		if f.Kind != faults.Power || f.Mode != "subset" {
			if c.Verdict.Outcome != oracle.Pass {
				t.Errorf("%s does not show the bug, yet:\n%s", f, c)
			}
			continue
		}
		subsets++
		if c.Failed() && caught == nil {
			caught = c
		}
	}
	if caught == nil {
		t.Fatalf("none of the %d power@K:subset cases caught the log that reads a lone second record as valid", subsets)
	}
	if !caught.Breaks(oracle.SameState) {
		t.Fatalf("caught, but not by same-state:\n%s", caught)
	}
	if s := campaign.Shrink(rn, caught, campaign.Options{}); s.String() != caught.Schedule.String() {
		t.Errorf("%s shrank to %s, which does not show the bug", caught.Schedule, s)
	}
	t.Logf("%d power@K:subset cases; caught under %s:\n%s", subsets, caught.Schedule, caught)

	fixed := newRunner(t, harness.Fresh(pairLog{steps: 6, syncBetween: true}), sim.Options{Seed: 1})
	n := 0
	for _, c := range explore(t, fixed, campaign.Options{Faults: kinds}) {
		if c.Verdict.Outcome != oracle.Pass {
			t.Errorf("the log fsynced between its writes failed:\n%s", c)
		}
		if c.Schedule[0].Mode == "subset" {
			n++
		}
	}
	if n == 0 {
		t.Error("no power@K:subset case for the fixed log")
	}
}

// A power loss keeping a subset is drawn from the seed and the beat alone: the same case gives
// the same report, derived from the golden recording or re-run; and random campaigns draw it.
func TestPowerSubsetIsDeterministic(t *testing.T) {
	d := newRunner(t, harness.Fresh(pairLog{steps: 6}), sim.Options{Seed: 3})
	r := newRunner(t, harness.Fresh(pairLog{steps: 6}), sim.Options{Seed: 3, NoDerive: true})
	n := 0
	for _, s := range schedules(t, d, campaign.Options{Faults: []faults.Kind{faults.Power}}) {
		if s[0].Mode != "subset" {
			continue
		}
		n++
		first := reportJSON(t, d.Run(s))
		if again, rerun := reportJSON(t, d.Run(s)), reportJSON(t, r.Run(s)); again != first || rerun != first {
			t.Fatalf("under %s:\nfirst:   %s\nagain:   %s\nre-run:  %s", s, first, again, rerun)
		}
	}
	if n == 0 {
		t.Fatal("no power@K:subset case listed")
	}
	drawn := 0
	for _, s := range schedules(t, d, campaign.Options{Mode: campaign.Random, Cases: 50, Faults: []faults.Kind{faults.Power}}) {
		for _, f := range s {
			if f.Mode == "subset" {
				drawn++
			}
		}
	}
	if drawn == 0 {
		t.Fatal("a random campaign over power drew no power@K:subset")
	}
}
