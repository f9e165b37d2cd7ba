package reports

import (
	"math"
	"testing"
)

// mustView returns what the renderers see of r, every problem case kept.
func mustView(t testing.TB, r *Report) *view {
	t.Helper()
	v, err := r.view(math.MaxInt)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// casesOf returns the cases of r's target, in run order.
func casesOf(r *Report, target string) []*Case {
	var out []*Case
	for i := range r.Cases {
		if r.Cases[i].Target == target {
			out = append(out, &r.Cases[i])
		}
	}
	return out
}
