package reports

import (
	"strings"
	"testing"
)

// The names of the fault kinds get the room the longest one drawn needs, the same in every
// chart, so that every chart's bars start at one place and share one scale; a name past
// kindLabelMax characters is clipped.
func TestKindChartsMakeRoomForTheNamesDrawn(t *testing.T) {
	view := func(name string, kinds ...string) *targetView {
		v := &targetView{TargetSummary: TargetSummary{Target: name, ByFault: map[string]Stats{}}}
		for _, k := range kinds {
			v.ByFault[k] = Stats{Cases: 5}
		}
		return v
	}
	barsAt := func(charts []*chart) []float64 {
		var xs []float64
		for _, c := range charts {
			xs = append(xs, c.Rects[0].X)
		}
		return xs
	}
	short := kindCharts([]*targetView{view("a", "kill"), view("b", "power")}, []string{"kill", "power"})
	if got, want := barsAt(short), kindLabelPad+kindCharW*5; got[0] != want || got[1] != want {
		t.Fatalf("bars of charts naming kill and power start at %v, want %v", got, want)
	}
	long := strings.Repeat("x", kindLabelMax+10)
	mixed := kindCharts([]*targetView{view("a", "kill"), view("b", long)}, []string{"kill", long})
	if got, want := barsAt(mixed), kindLabelPad+kindCharW*kindLabelMax; got[0] != want || got[1] != want {
		t.Fatalf("bars start at %v, want %v in both charts", got, want)
	}
	drawn := false
	for _, l := range mixed[1].Labels {
		if strings.HasPrefix(l.Text, "xxx") {
			drawn = true
			if len([]rune(l.Text)) != kindLabelMax {
				t.Fatalf("a long kind's name is drawn as %q", l.Text)
			}
		}
	}
	if !drawn {
		t.Fatal("the long kind's name is not drawn")
	}
}
