package process_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/adapters/process"
	"github.com/chaoskit/chaoskit/harness"
	"pgregory.net/rapid"
)

func TestParseTool(t *testing.T) {
	got, err := process.ParseTool("create_po=idempotent,latency=1s,key-ttl=24h,fenced")
	want := harness.Tool{Name: "create_po", Contract: harness.IdempotentByKey, Latency: time.Second, KeyTTL: 24 * time.Hour, Fenced: true}
	if err != nil || got != want {
		t.Fatalf("got %+v, %v", got, err)
	}
	for text, msg := range map[string]string{
		"create_po":                 "want NAME=CONTRACT",
		"=read-only":                "want NAME=CONTRACT",
		"po=sometimes":              `unknown contract "sometimes"`,
		"po=read-only,latency=fast": `latency wants a duration such as 1s, not "fast"`,
		"po=read-only,fenced=yes":   "fenced takes no value",
		"po=read-only,retries=3":    `unknown option "retries=3"`,
		"po=read-only,latency=-1s":  "latency wants a duration",
		"po=not-idempotent,,fenced": `unknown option ""`,
	} {
		if _, err := process.ParseTool(text); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseTool(%q) = %v, want %q", text, err, msg)
		}
	}
}

// FormatTool's text reads back as the same tool.
func TestToolTextRoundTrips(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		tool := harness.Tool{
			Name:     rapid.StringMatching(`[a-z_]{1,12}`).Draw(rt, "name"),
			Contract: rapid.SampledFrom([]harness.Contract{harness.ReadOnly, harness.IdempotentByKey, harness.NotIdempotent}).Draw(rt, "contract"),
			Latency:  time.Duration(rapid.IntRange(0, 5000).Draw(rt, "latency")) * time.Millisecond,
			KeyTTL:   time.Duration(rapid.IntRange(0, 48).Draw(rt, "ttl")) * time.Hour,
			Async:    time.Duration(rapid.IntRange(0, 600).Draw(rt, "async")) * time.Second,
			Fenced:   rapid.Bool().Draw(rt, "fenced"),
			Ordered:  rapid.Bool().Draw(rt, "ordered"),
			Outcome:  rapid.StringMatching(`[a-z]{0,8}`).Draw(rt, "outcome"),
		}
		back, err := process.ParseTool(process.FormatTool(tool))
		if err != nil || back != tool {
			rt.Fatalf("%q read back as %+v, %v", process.FormatTool(tool), back, err)
		}
	})
}
