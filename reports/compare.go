package reports

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
)

// regressionMetrics are the Stats fields Compare checks: for each, more is worse.
var regressionMetrics = []string{"failed", "unknown", "duplicates", "lost_effects", "phantom_effects",
	"state_mismatches", "work_lost_beats_mean", "work_lost_beats_max", "resume_beats_mean", "model_calls_remade",
	"failed_processes", "refused"}

// RegressionMetrics lists the Stats fields that Compare checks, each one worse when higher:
// failed, unknown, duplicates, lost_effects, phantom_effects, state_mismatches,
// work_lost_beats_mean, work_lost_beats_max, resume_beats_mean, model_calls_remade,
// failed_processes and refused.
func RegressionMetrics() []string { return slices.Clone(regressionMetrics) }

// Tolerance is how much worse than the baseline a metric may get before Compare calls it a
// regression: an absolute amount plus a fraction of the baseline's value. The zero Tolerance
// allows nothing.
type Tolerance struct {
	Abs float64 // e.g. 2 (duplicates) or 0.5 (beats)
	Rel float64 // e.g. 0.1: 10% of the baseline's value
}

// allows returns the most a metric may reach from baseline under t.
func (t Tolerance) allows(baseline float64) float64 { return baseline + t.Abs + baseline*t.Rel }

// CompareOptions configure Compare.
type CompareOptions struct {
	// Tolerances holds the tolerance of a metric (one of RegressionMetrics) or of a property
	// (its violation count), by name. The others get Default.
	Tolerances map[string]Tolerance
	Default    Tolerance
}

func (o CompareOptions) tolerance(name string) Tolerance {
	if t, ok := o.Tolerances[name]; ok {
		return t
	}
	return o.Default
}

// Regression is one way a report is worse than its baseline.
type Regression struct {
	Target string
	Fault  string // the fault kind whose totals regressed, or "" for the target's totals
	// Missing says the target (or its fault kind) is in the baseline and not in the report;
	// Metric, Baseline and Current are then unset.
	Missing bool
	// Metric is a field of Stats (one of RegressionMetrics) or a property name, for the count of
	// cases that violated it.
	Metric   string
	Baseline float64
	Current  float64
	Allowed  float64 // the most Current could have been, under the tolerance
	// NotMeasured says the baseline measured Metric (work lost) and the report does not (its
	// cases made no progress marks); Current and Allowed are then unset.
	NotMeasured bool
}

// String describes the regression on one line, e.g.
// "reference/act-then-save [kill]: duplicates 0 → 12 (allowed 0)".
func (g Regression) String() string {
	where := g.Target
	if g.Fault != "" {
		where += " [" + g.Fault + "]"
	}
	if g.Missing {
		return where + ": in the baseline, missing from the report"
	}
	if g.NotMeasured {
		return fmt.Sprintf("%s: %s %s → not measured (no progress marks)", where, g.Metric, num3(g.Baseline))
	}
	return fmt.Sprintf("%s: %s %s → %s (allowed %s)", where, g.Metric, num3(g.Baseline), num3(g.Current), num3(g.Allowed))
}

// num3 formats a count or a mean with at most three decimals.
func num3(x float64) string { return strconv.FormatFloat(round3(x), 'f', -1, 64) }

// Compare lists the ways current is worse than baseline, target by target (the baseline's
// targets, in its order) and, within each, over the target's totals and then each fault kind's:
// a metric of RegressionMetrics that grew beyond its tolerance, a property violated in more
// cases than the tolerance allows, or a target or fault kind of the baseline that current lacks.
// Targets and fault kinds only current has are new, not worse, and are not compared. Compare
// returns nil when current is no worse than baseline.
func Compare(baseline, current *Report, opts CompareOptions) []Regression {
	var out []Regression
	now := map[string]*TargetSummary{}
	sums, _ := current.summaries()
	for i := range sums {
		now[sums[i].Target] = &sums[i]
	}
	olds, kinds := baseline.summaries()
	for _, old := range olds {
		cur, ok := now[old.Target]
		if !ok {
			out = append(out, Regression{Target: old.Target, Missing: true})
			continue
		}
		out = append(out, compareStats(old.Target, "", &old.Stats, &cur.Stats, opts)...)
		for _, kind := range kinds {
			o, ok := old.ByFault[kind]
			if !ok {
				continue
			}
			c, ok := cur.ByFault[kind]
			if !ok {
				out = append(out, Regression{Target: old.Target, Fault: kind, Missing: true})
				continue
			}
			out = append(out, compareStats(old.Target, kind, &o, &c, opts)...)
		}
	}
	return out
}

// compareStats lists the metrics and properties in which cur is worse than old.
func compareStats(target, fault string, old, cur *Stats, opts CompareOptions) []Regression {
	var out []Regression
	check := func(metric string, o, c float64) {
		if allowed := opts.tolerance(metric).allows(o); c > allowed+1e-9 {
			out = append(out, Regression{Target: target, Fault: fault, Metric: metric, Baseline: o, Current: c, Allowed: round3(allowed)})
		}
	}
	for _, m := range regressionMetrics {
		o, _ := old.Value(m)
		c, _ := cur.Value(m)
		switch {
		case !old.Measured(m): // nothing to be worse than
		case !cur.Measured(m): // measured before, not now: no longer known to be no worse
			out = append(out, Regression{Target: target, Fault: fault, Metric: m, Baseline: o, NotMeasured: true})
		default:
			check(m, o, c)
		}
	}
	props := maps.Clone(old.Violations)
	if props == nil {
		props = map[string]int{}
	}
	maps.Copy(props, cur.Violations)
	for _, p := range slices.Sorted(maps.Keys(props)) {
		check(p, float64(old.Violations[p]), float64(cur.Violations[p]))
	}
	return out
}
