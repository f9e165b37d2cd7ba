package campaign_test

import (
	"context"
	"slices"
	"testing"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/sim"
)

// smallWrites fsyncs every write, and each fits in one sector: no write can tear otherwise than a
// plain power cut would leave it, so an exhaustive campaign lists no torn case.
var smallWrites = harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
	fsys := env.FS()
	f, err := fsys.Create("log")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	for _, step := range []string{"a", "b", "c"} {
		if _, err := f.WriteString(step); err != nil {
			return nil, err
		}
		if err := f.Sync(); err != nil {
			return nil, err
		}
		env.Mark(step)
	}
	return nil, nil
}}

// What a campaign decides nothing about: torn with no case is decided by the power cases of a
// whole exhaustive campaign, which are what torn's would be; not by those of one capped with
// Cases, which may have left torn cases out, nor without power; callback-dup without an
// asynchronous tool never is.
func TestNoCase(t *testing.T) {
	rn, err := sim.NewRunner(harness.Fresh(smallWrites), harness.Options{Name: "small"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		faults []faults.Kind
		cases  int
		want   []string
	}{
		{[]faults.Kind{faults.Power, faults.Torn}, 0, nil},
		{[]faults.Kind{faults.Power, faults.Torn}, 2, []string{"torn"}},
		{[]faults.Kind{faults.Torn}, 0, []string{"torn"}},
		{[]faults.Kind{faults.Kill, faults.CallbackDup}, 0, []string{"callback-dup"}},
	} {
		got, err := campaign.NoCase(rn, campaign.Options{Faults: tc.faults, Cases: tc.cases})
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("NoCase(%v, cases %d) = %v, %v; want %v", tc.faults, tc.cases, got, err, tc.want)
		}
	}
}
