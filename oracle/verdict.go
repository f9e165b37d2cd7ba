package oracle

// Outcome is what a verdict comes to: pass, fail or unknown.
type Outcome string

// The outcomes.
const (
	Pass    Outcome = "pass"    // every property held (or the target failed loudly on an unrecoverable fault)
	Fail    Outcome = "fail"    // a property was violated
	Unknown Outcome = "unknown" // the case could not be decided: the target hung, or its states could not be compared
)

// The properties, by their stable names. Reports and gates use these names.
const (
	Completes          = "completes"
	SameResult         = "same-result"
	SameState          = "same-state"
	NoDuplicateEffects = "no-duplicate-effects"
	NoLostEffects      = "no-lost-effects"
	NoPhantomEffects   = "no-phantom-effects"
	NoKeyReuse         = "no-key-reuse"
	BoundedWorkLost    = "bounded-work-lost"
	OrderedEffects     = "ordered-effects"
	Deterministic      = "deterministic"
)

// properties lists every property, in the order the package documentation gives them.
var properties = []string{Completes, SameResult, SameState, NoDuplicateEffects, NoLostEffects,
	NoPhantomEffects, NoKeyReuse, BoundedWorkLost, OrderedEffects, Deterministic}

// Properties lists the names of every property, in a stable order: what a gate or a tolerance
// may name.
func Properties() []string { return append([]string(nil), properties...) }

// Violation is one property a case broke.
type Violation struct {
	Property string `json:"property"` // a stable property name, e.g. "no-duplicate-effects"
	Detail   string `json:"detail"`   // what happened, in one or a few lines
}

// Metrics are the measurements of one case.
type Metrics struct {
	Restarts        int  `json:"restarts"`         // processes started after the first
	FailedProcesses int  `json:"failed_processes"` // processes that ended on their own with an error or a panic
	Beats           int  `json:"beats"`            // beats of the faulty run, restarts included
	GoldenBeats     int  `json:"golden_beats"`     // beats of the uninterrupted run
	WorkLostBeats   int  `json:"work_lost_beats"`  // golden beats done again after crashes
	ResumeBeats     int  `json:"resume_beats"`     // beats from restarts back to the progress the crashes interrupted
	Duplicates      int  `json:"duplicates"`       // effect applications beyond the golden run's
	LostEffects     int  `json:"lost_effects"`     // golden effect applications that never happened, in a run that completed
	PhantomEffects  int  `json:"phantom_effects"`  // applications of effects the golden run never made
	StateMismatch   bool `json:"state_mismatch"`   // the final durable state differs from the golden run's
	// ModelCallsRemade counts model calls made again after restarts, beyond the golden run's:
	// work lost in what costs tokens.
	ModelCallsRemade int `json:"model_calls_remade"`
	// WorkLostUnmeasured says that work lost could not be measured, for the target made no
	// progress marks: WorkLostBeats and ResumeBeats are then 0 for want of a measure, not 0
	// beats.
	WorkLostUnmeasured bool `json:"work_lost_unmeasured,omitempty"`
	// Stranded, Duplicated and Replanned name what went wrong in an upgrade case, in a team's
	// words (see Upgraded).
	Stranded   bool `json:"stranded,omitempty"`
	Duplicated bool `json:"duplicated,omitempty"`
	Replanned  bool `json:"replanned,omitempty"`
}
