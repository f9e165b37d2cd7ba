package eino_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/adapters/eino"
	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/chaoskittest"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
	"github.com/spf13/afero"
)

// counter saves three checkpoints through a Store, one per step, each holding the step's number,
// and resumes from the last one after a crash. Its state is the last checkpoint.
func counter() harness.Target {
	return harness.Func{
		RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
			s := eino.NewStore(env.FS(), "state/checkpoints", env.Mark)
			for {
				b, _, err := s.Get(ctx, "run/1") // an id that must be escaped
				if err != nil {
					return nil, err
				}
				n, _ := strconv.Atoi(string(b))
				if n == 3 {
					return n, nil
				}
				if err := s.Set(ctx, "run/1", []byte(strconv.Itoa(n+1))); err != nil {
					return nil, err // a full disk too: the supervisor restarts the process
				}
			}
		},
		StateFunc: func(fsys afero.Fs) (any, error) {
			b, _, err := eino.NewStore(fsys, "state/checkpoints", nil).Get(context.Background(), "run/1")
			return string(b), err
		},
	}
}

// The store survives a kill, a power loss, a full disk (for a minute: the run fails, and the
// supervisor restarts it until space is back) and a failing fsync at every beat: a checkpoint is
// the old one or the new one, whole, and the directories it lives in are durable before anything
// in them counts. (Its writes are shorter than a sector, so a torn one lands as a power loss
// leaves it: torn has no case, and asking for it would decide nothing.)
func TestStoreSurvivesEveryStorageFault(t *testing.T) {
	chaoskittest.Check(t, counter, campaign.Options{Faults: []faults.Kind{faults.Kill, faults.Power, faults.DiskFull, faults.FsyncFail}})
}

// A durable byte that flips is found by the checksum: the run stops loudly (detected), it never
// resumes from a damaged checkpoint.
func TestStoreDetectsCorruption(t *testing.T) {
	rn, err := sim.NewRunner(counter, sim.Options{Name: "counter"})
	if err != nil {
		t.Fatal(err)
	}
	cases, err := campaign.Explore(context.Background(), rn, campaign.Options{Faults: []faults.Kind{faults.Corrupt}})
	if err != nil {
		t.Fatal(err)
	}
	detected := 0
	for _, c := range cases {
		if c.Verdict.Outcome != oracle.Pass {
			t.Errorf("%s", c)
		}
		if c.Verdict.Detected != "" {
			detected++
			if !strings.Contains(c.Verdict.Detected, eino.ErrDamaged.Error()) {
				t.Errorf("%s: detected %q", c.ID(), c.Verdict.Detected)
			}
		}
	}
	if detected == 0 {
		t.Fatalf("no corruption detected in %d cases", len(cases))
	}
}

func TestStoreRecords(t *testing.T) {
	ctx := context.Background()
	fsys := afero.NewMemMapFs()
	var marks []string
	s := eino.NewStore(fsys, "cp", func(l string) { marks = append(marks, l) })
	if _, found, err := s.Get(ctx, "a b"); found || err != nil {
		t.Fatalf("empty store: found %v, %v", found, err)
	}
	for i := 1; i <= 2; i++ {
		if err := s.Set(ctx, "a b", []byte(fmt.Sprint("cp", i))); err != nil {
			t.Fatal(err)
		}
	}
	b, found, err := s.Get(ctx, "a b")
	if string(b) != "cp2" || !found || err != nil {
		t.Fatalf("Get = %q %v %v", b, found, err)
	}
	if seq, _ := s.Seq("a b"); seq != 2 {
		t.Fatalf("seq %d", seq)
	}
	if err := s.SetDone("a b", map[string]int{"n": 1}); err != nil {
		t.Fatal(err)
	}
	if out, done, _ := s.Done("a b"); !done || string(out) != `{"n":1}` {
		t.Fatalf("Done = %s %v", out, done)
	}
	if got := strings.Join(marks, "|"); got != "checkpoint a b #1|checkpoint a b #2|done a b" {
		t.Fatalf("marks %s", got)
	}
	names, _ := afero.ReadDir(fsys, "cp")
	var files []string
	for _, fi := range names {
		files = append(files, fi.Name())
	}
	if got := strings.Join(files, " "); got != "a%20b a%20b.done" {
		t.Fatalf("files %s", got)
	}
	raw, _ := afero.ReadFile(fsys, "cp/a%20b")
	raw[len(raw)-1] ^= 1
	afero.WriteFile(fsys, "cp/a%20b", raw, 0o644)
	if _, _, err := s.Get(ctx, "a b"); !errors.Is(err, eino.ErrDamaged) {
		t.Fatalf("damaged record: err = %v", err)
	}
}
