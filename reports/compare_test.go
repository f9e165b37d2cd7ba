package reports_test

import (
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/reports"
	"pgregory.net/rapid"
)

// A report is never worse than itself, and Compare and Merge agree with what they claim on
// random reports.
func TestCompareWithItself(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := genReport(t)
		if g := reports.Compare(r, r, reports.CompareOptions{}); len(g) > 0 {
			t.Fatalf("a report regresses against itself: %v", g)
		}
	})
}

func TestCompareTolerances(t *testing.T) {
	before, after := twoCases(0, "", 0, 1, 2, 3), twoCases(4, "", 0, 1, 2, 3)
	for _, tc := range []struct {
		opts reports.CompareOptions
		want int
	}{
		{reports.CompareOptions{}, 6},
		{reports.CompareOptions{Tolerances: map[string]reports.Tolerance{"duplicates": {Abs: 4}}}, 4},
		{reports.CompareOptions{Tolerances: map[string]reports.Tolerance{"duplicates": {Abs: 3.5}}}, 6},
		{reports.CompareOptions{Default: reports.Tolerance{Abs: 1}, Tolerances: map[string]reports.Tolerance{"duplicates": {Abs: 4}}}, 0},
		// A relative tolerance allows nothing over a baseline of zero.
		{reports.CompareOptions{Default: reports.Tolerance{Rel: 10}}, 6},
	} {
		if got := reports.Compare(before, after, tc.opts); len(got) != tc.want {
			t.Errorf("%+v: %d regressions, want %d: %v", tc.opts, len(got), tc.want, got)
		}
	}
	// Relative tolerance over a non-zero baseline.
	worse := twoCases(6, "", 0, 1, 2, 3)
	if got := reports.Compare(after, worse, reports.CompareOptions{Tolerances: map[string]reports.Tolerance{"duplicates": {Rel: 0.5}}}); len(got) != 0 {
		t.Errorf("6 duplicates regress against 4 with a 50%% tolerance: %v", got)
	}
	if got := reports.Compare(after, worse, reports.CompareOptions{Tolerances: map[string]reports.Tolerance{"duplicates": {Rel: 0.49}}}); len(got) != 2 {
		t.Errorf("6 duplicates against 4 with a 49%% tolerance: %v", got)
	}
}

func TestCompareMissing(t *testing.T) {
	before := twoCases(0, "", 0, 1)
	after := twoCases(0, "", 0, 1)
	for i := range after.Cases {
		after.Cases[i].Target = "other"
	}
	after.Options.Targets = []string{"other"}
	after.Summarize(nil)
	got := reports.Compare(before, after, reports.CompareOptions{})
	if len(got) != 1 || !got[0].Missing || got[0].String() != "agent: in the baseline, missing from the report" {
		t.Fatalf("%v", got)
	}
	// A target the baseline lacks is new, not worse.
	if got := reports.Compare(after, twoCases(5, "", 0, 1), reports.CompareOptions{}); len(got) != 1 || !strings.Contains(got[0].String(), "other") {
		t.Fatalf("%v", got)
	}
}

func TestMergeRefuses(t *testing.T) {
	other := twoCases(1, "2/2", 1)
	other.Seed = 8
	// The same command in both, its files' digests differing: another commit's shard.
	commands := func(r *reports.Report, digest string) *reports.Report {
		r.Options.Commands = []reports.Command{{Name: "app", Argv: []string{"./app"}, Dir: "/src/" + digest, Digest: digest}}
		return r
	}
	for _, tc := range []struct {
		shards []*reports.Report
		want   string
	}{
		{nil, "no reports"},
		{[]*reports.Report{twoCases(1, "", 0, 1)}, "not a shard"},
		{[]*reports.Report{twoCases(1, "1/2", 0), other}, "another campaign"},
		{[]*reports.Report{twoCases(1, "1/2", 0), twoCases(1, "1/2", 0)}, "given twice"},
		{[]*reports.Report{twoCases(1, "1/2", 0), twoCases(1, "2/3", 1)}, "split the campaign differently"},
		{[]*reports.Report{twoCases(1, "x/2", 0)}, `shard "x/2"`},
		{[]*reports.Report{commands(twoCases(1, "1/2", 0), "aaaa"), commands(twoCases(1, "2/2", 1), "bbbb")}, "shard 2/2 ran other code than shard 1/2: target app: its files' digest bbbb, not aaaa"},
	} {
		if _, err := reports.Merge(tc.shards...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Merge of %d shards: %v, want %q", len(tc.shards), err, tc.want)
		}
	}
}

func TestParseShardRoundTrips(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 1000).Draw(t, "n")
		s := reports.Shard{I: rapid.IntRange(1, n).Draw(t, "i"), N: n}
		back, err := reports.ParseShard(s.String())
		if err != nil || back != s {
			t.Fatalf("%v: %v, %v", s, back, err)
		}
		text := rapid.String().Draw(t, "text")
		if sh, err := reports.ParseShard(text); err == nil && sh.String() != text && text != "" {
			// Only canonical forms other than leading zeros or signs parse; they mean the same shard.
			again, _ := reports.ParseShard(sh.String())
			if again != sh {
				t.Fatalf("%q parses to %v, which does not round-trip", text, sh)
			}
		}
	})
}
