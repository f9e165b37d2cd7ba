package campaign_test

import (
	"context"
	"errors"
	"testing"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/internal/sharecheck"
	"github.com/chaoskit/chaoskit/reference"
	"github.com/chaoskit/chaoskit/sim"
	"github.com/spf13/afero"
)

// wallClock matches a report's wall-clock fields and its trailer (whose checksum covers them).
var wallClock = sharecheck.WallClock

// A campaign whose context is done stops at once, during its golden runs or its cases (shrinking
// included), keeps its journal, and journals no case it did not finish: resumed, it writes the
// report of an uninterrupted run.
func TestInterruptedCampaignResumes(t *testing.T) {
	cause := errors.New("SIGTERM")
	newCampaign := func() *campaign.Campaign {
		c := &campaign.Campaign{
			Targets: []campaign.Target{{Name: "reference/act-then-save", New: func() harness.Target {
				return reference.New(reference.ActThenSave, reference.Onboarding())
			}}},
			Options: campaign.Options{Faults: []faults.Kind{faults.Kill, faults.Power}, Mode: campaign.Random, Cases: 8},
		}
		c.Options.Seed = 7 // failures to shrink among the cases
		return c
	}
	report := func(fsys afero.Fs, st *campaign.JournalState) string {
		t.Helper()
		rep, err := newCampaign().Run(context.Background(), campaign.RunOptions{FS: fsys, Dir: "D", Resume: st})
		if err != nil {
			t.Fatal(err)
		}
		b, err := rep.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return wallClock.ReplaceAllString(string(b), "")
	}
	want := report(afero.NewMemMapFs(), nil)

	for _, during := range []string{"golden run", "cases"} {
		t.Run(during, func(t *testing.T) {
			fsys := afero.NewMemMapFs()
			ctx, cancel := context.WithCancelCause(context.Background())
			c := newCampaign()
			ro := campaign.RunOptions{FS: fsys, Dir: "D"}
			if during == "golden run" {
				c.Options.OnGolden = func(sim.GoldenProgress) { cancel(cause) }
			} else {
				ro.Progress = func(done, total, failed int) {
					if done >= 2 {
						cancel(cause)
					}
				}
			}
			rep, err := c.Run(ctx, ro)
			if rep != nil || !errors.Is(err, campaign.ErrInterrupted) || !errors.Is(err, cause) {
				t.Fatalf("report %v, err %v; want none, and ErrInterrupted with the cause", rep != nil, err)
			}
			st, err := campaign.ReadJournal(fsys, campaign.JournalPath("D"))
			if err != nil {
				t.Fatalf("no journal to resume: %v", err)
			}
			if done := st.Len(); during == "golden run" && done != 0 || during == "cases" && (done < 2 || done >= 8) {
				t.Fatalf("the journal holds %d cases", done)
			}
			if got := report(fsys, st); got != want {
				t.Fatalf("resumed, the report differs from an uninterrupted run's:\n%s\nwant\n%s", got, want)
			}
		})
	}
}
