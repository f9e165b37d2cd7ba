package reports

import "github.com/chaoskit/chaoskit/oracle"

// statField is a numeric field of Stats, by its JSON name.
type statField struct {
	name string
	get  func(s *Stats) float64
	// marks says the field is measured from progress marks: without them it is not measured
	// (Stats.WorkLostMeasured).
	marks bool
}

func countField(name string, n func(s *Stats) int) statField {
	return statField{name: name, get: func(s *Stats) float64 { return float64(n(s)) }}
}

func marksField(f statField) statField {
	f.marks = true
	return f
}

// statFields lists the numeric fields of Stats in the order of their JSON encoding.
var statFields = []statField{
	countField("cases", func(s *Stats) int { return s.Cases }),
	countField("passed", func(s *Stats) int { return s.Passed }),
	countField("failed", func(s *Stats) int { return s.Failed }),
	countField("unknown", func(s *Stats) int { return s.Unknown }),
	countField("detected", func(s *Stats) int { return s.Detected }),
	countField("unfired", func(s *Stats) int { return s.Unfired }),
	countField("refused", func(s *Stats) int { return s.Refused }),
	countField("duplicates", func(s *Stats) int { return s.Duplicates }),
	countField("lost_effects", func(s *Stats) int { return s.LostEffects }),
	countField("phantom_effects", func(s *Stats) int { return s.PhantomEffects }),
	countField("state_mismatches", func(s *Stats) int { return s.StateMismatches }),
	{"work_lost_beats_mean", func(s *Stats) float64 { return s.WorkLostBeatsMean }, true},
	marksField(countField("work_lost_beats_max", func(s *Stats) int { return s.WorkLostBeatsMax })),
	{"resume_beats_mean", func(s *Stats) float64 { return s.ResumeBeatsMean }, true},
	countField("restarts", func(s *Stats) int { return s.Restarts }),
	countField("failed_processes", func(s *Stats) int { return s.FailedProcesses }),
	countField("model_calls_remade", func(s *Stats) int { return s.ModelCallsRemade }),
	countField(oracle.Stranded, func(s *Stats) int { return s.Stranded }),
	countField(oracle.Duplicated, func(s *Stats) int { return s.Duplicated }),
	countField(oracle.Replanned, func(s *Stats) int { return s.Replanned }),
}

// StatFields lists the names of the numeric fields of Stats, as its JSON encoding spells them
// ("cases", "duplicates", "work_lost_beats_mean", ...), in that encoding's order. These are the
// names gates and Compare's tolerances use.
func StatFields() []string {
	names := make([]string, len(statFields))
	for i, f := range statFields {
		names[i] = f.name
	}
	return names
}

// Measured reports whether s measures the field that the JSON encoding names name: every field
// but those of work lost (work_lost_beats_mean, work_lost_beats_max, resume_beats_mean), which
// are measured from progress marks, when s has no case whose work lost was (see
// WorkLostMeasured).
func (s *Stats) Measured(name string) bool {
	for _, f := range statFields {
		if f.name == name && f.marks {
			return s.WorkLostMeasured()
		}
	}
	return true
}

// Value returns the numeric field of s that the JSON encoding names name (one of StatFields),
// and false if there is no such field. Counts of violated properties are in s.Violations.
func (s *Stats) Value(name string) (float64, bool) {
	for _, f := range statFields {
		if f.name == name {
			return f.get(s), true
		}
	}
	return 0, false
}
