package sim_test

import (
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/sim"
	"pgregory.net/rapid"
)

// A back-off's text form reads back as the same back-off; the delays double from Initial and
// stop at Max.
func TestBackoffText(t *testing.T) {
	for text, want := range map[string]sim.Backoff{
		"10s..5m":            sim.DefaultBackoff,
		"5s":                 {Initial: 5 * time.Second, Max: 5 * time.Second, Reset: 10 * time.Minute},
		"0":                  {Reset: 10 * time.Minute},
		"1s..1h30m,reset=1h": {Initial: time.Second, Max: 90 * time.Minute, Reset: time.Hour},
	} {
		got, err := sim.ParseBackoff(text)
		if err != nil || got != want {
			t.Errorf("ParseBackoff(%q) = %+v, %v; want %+v", text, got, err, want)
		}
		if want.String() != text && !(text == "0" && want.String() == "0s") {
			t.Errorf("%+v is written %q, want %q", want, want.String(), text)
		}
	}
	if got := []time.Duration{sim.DefaultBackoff.Delay(1), sim.DefaultBackoff.Delay(2), sim.DefaultBackoff.Delay(3), sim.DefaultBackoff.Delay(6), sim.DefaultBackoff.Delay(60)}; got[0] != 10*time.Second || got[1] != 20*time.Second || got[2] != 40*time.Second || got[3] != 5*time.Minute || got[4] != 5*time.Minute {
		t.Errorf("delays %v, want 10s 20s 40s 5m 5m", got)
	}
	rapid.Check(t, func(t *rapid.T) {
		unit := []time.Duration{time.Millisecond, time.Second, time.Minute, time.Hour}
		d := func(label string) time.Duration {
			return time.Duration(rapid.IntRange(0, 500).Draw(t, label)) * rapid.SampledFrom(unit).Draw(t, label+" unit")
		}
		b := sim.Backoff{Initial: d("initial"), Reset: d("reset")}
		b.Max = b.Initial + d("more")
		got, err := sim.ParseBackoff(b.String())
		if err != nil || got != b {
			t.Fatalf("%+v written %q reads back as %+v, %v", b, b.String(), got, err)
		}
	})
}
