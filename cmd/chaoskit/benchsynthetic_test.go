package main

import (
	"context"
	"strings"
	"testing"
)

// The synthetic agent's rows are measured rounds times, every case and bare run interleaved,
// and report each ratio as min/median/max over the rounds (not the times themselves: they are
// the machine's).
func TestSyntheticBenchIsRepeated(t *testing.T) {
	p, err := benchSynthetic(context.Background(), 10, 3)
	if err != nil {
		t.Fatal(err)
	}
	if p.Rounds != 3 || p.Cases != p.Beats || p.Beats < 10 {
		t.Fatalf("%+v: want 3 rounds of a case per golden beat", p)
	}
	for name, s := range map[string]benchSpread{"case": p.Ratio, "CPU": p.CPURatio, "late": p.LateRatio, "early": p.EarlyRatio} {
		if !(0 < s.Min && s.Min <= s.Median && s.Median <= s.Max) {
			t.Errorf("%s ratio %s: want three positive samples in order", name, s)
		}
	}
	if p.BareNs <= 0 || p.CaseNs <= 0 || p.LateCaseNs <= 0 || p.EarlyCaseNs <= 0 {
		t.Errorf("%+v: a time is missing", p)
	}
}

// The table prints each ratio's spread, and says how many rounds.
func TestSyntheticBenchTable(t *testing.T) {
	var b strings.Builder
	printScaling(&b, []benchPoint{{Beats: 100, Cases: 100, Rounds: 5, BareNs: 1_234_567, CaseNs: 987_654, LateCaseNs: 12_345, EarlyCaseNs: 1_000_000,
		Ratio: benchSpread{0.8, 0.9, 1.25}, CPURatio: benchSpread{0.75, 1, 1.5}, LateRatio: benchSpread{0.01, 0.02, 0.03}, EarlyRatio: benchSpread{0.7, 0.8, 0.9}}})
	want := "synthetic agent, an exhaustive kill campaign (a case per beat), beside bare runs, 5 rounds interleaved:\n" +
		"     beats   bare run       case   ratio min/median/max     CPU min/median/max late crash   ratio min/median/max      early   ratio min/median/max\n" +
		"       100      1.2ms      988µs      0.800/0.900/1.250      0.750/1.000/1.500       12µs      0.010/0.020/0.030        1ms      0.700/0.800/0.900\n"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
}
