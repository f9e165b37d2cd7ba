package campaign_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/chaoskit/chaoskit/sim"
	"pgregory.net/rapid"
)

// A campaign's identity reads back from its text form as it was written.
func TestIdentityTextRoundTrips(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		kinds := faults.AllKinds()
		id := campaign.Identity{
			Targets: []string{rapid.SampledFrom([]string{"reference", "orders"}).Draw(t, "target")},
			Mode:    campaign.Mode(rapid.IntRange(0, 1).Draw(t, "mode")),
			Cases:   rapid.IntRange(0, campaign.MaxCases).Draw(t, "cases"),
			Restart: rapid.SampledFrom([]int{sim.RestartAlways, sim.RestartNever, 3}).Draw(t, "restart"),
		}
		for _, i := range rapid.SliceOfNDistinct(rapid.IntRange(0, len(kinds)-1), 1, 4, rapid.ID[int]).Draw(t, "kinds") {
			id.Faults = append(id.Faults, kinds[i])
		}
		if rapid.Bool().Draw(t, "shard") {
			n := rapid.IntRange(1, 9).Draw(t, "n")
			id.Shard = reports.Shard{I: rapid.IntRange(1, n).Draw(t, "i"), N: n}
		}
		if rapid.Bool().Draw(t, "backoff") {
			id.Backoff = sim.Backoff{Initial: time.Second, Max: time.Minute, Reset: time.Hour}
		}
		id.Grace = rapid.SampledFrom([]time.Duration{0, sim.NoGrace, 5 * time.Second}).Draw(t, "grace")
		if rapid.Bool().Draw(t, "ext4") {
			id.FSModel = faults.Ext4Ordered
		}
		text, err := id.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back campaign.Identity
		if err := back.UnmarshalText(text); err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		if !reflect.DeepEqual(back, id) {
			t.Fatalf("%s reads back as %+v, not %+v", text, back, id)
		}
	})
}

// A malformed parameter is refused naming it first, as the command line's flag spells it.
func TestParseIdentityNamesTheParameter(t *testing.T) {
	for want, o := range map[string]reports.Options{
		"faults: ":          {Faults: []string{"kil"}, Mode: "exhaustive"},
		"mode: ":            {Faults: []string{"kill"}, Mode: "sideways"},
		"cases -1: ":        {Faults: []string{"kill"}, Mode: "random", Cases: -1},
		"depth 2 is for ":   {Faults: []string{"kill", "power"}, Mode: "random", Depth: 2},
		"shard: ":           {Faults: []string{"kill"}, Mode: "exhaustive", Shard: "3/2"},
		"restart: ":         {Faults: []string{"kill"}, Mode: "exhaustive", Restart: "sometimes"},
		"restart-backoff: ": {Faults: []string{"kill"}, Mode: "exhaustive", RestartBackoff: "soon"},
		"fs-model: ":        {Faults: []string{"kill"}, Mode: "exhaustive", FSModel: "xfs"},
		"grace \"-1s\": ":   {Faults: []string{"kill"}, Mode: "exhaustive", Grace: "-1s"},
	} {
		if _, err := campaign.ParseIdentity(o); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%+v: %v, want an error starting %q", o, err, want)
		}
	}
}

// A deploy's grace period is recorded only when it is not the default, 30s, and a case's replay
// command gives it: "0s" for none (sim.NoGrace), which reads back as none.
func TestIdentityRecordsTheGracePeriod(t *testing.T) {
	for _, tc := range []struct {
		grace time.Duration
		text  string
	}{{0, ""}, {sim.DefaultGrace, ""}, {sim.NoGrace, "0s"}, {90 * time.Second, "1m30s"}} {
		id := campaign.Identity{Faults: []faults.Kind{faults.Upgrade}, Grace: tc.grace}
		if got := id.Options().Grace; got != tc.text {
			t.Errorf("grace %v is recorded as %q, want %q", tc.grace, got, tc.text)
		}
		flags := id.ReplayFlags()
		if want := " --grace " + tc.text; tc.text != "" && !strings.Contains(flags, want) || tc.text == "" && strings.Contains(flags, "--grace") {
			t.Errorf("grace %v: replay flags %q", tc.grace, flags)
		}
		back, err := campaign.ParseCaseParams(id.Options())
		if err != nil {
			t.Fatal(err)
		}
		var o sim.Options
		back.ApplyCase(&o)
		if want := tc.grace; want == sim.DefaultGrace && o.Grace != 0 || want != sim.DefaultGrace && o.Grace != want {
			t.Errorf("grace %v reads back as %v", tc.grace, o.Grace)
		}
	}
}
