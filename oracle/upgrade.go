package oracle

import "slices"

// The words a team uses for what went wrong when a new version took over a run the old one had
// checkpointed (an upgrade case: Metrics.Stranded, Duplicated, Replanned). Reports count them and
// gates may name them.
const (
	// Stranded: the new version cannot read the old version's checkpoint, and fails or starts
	// over.
	Stranded = "stranded"
	// Duplicated: the new version redoes effects the old one had applied, or sends one again
	// with other arguments under its key, which the tool refuses (no-key-reuse).
	Duplicated = "duplicated"
	// Replanned: the run took another path than a run of either version would have.
	Replanned = "replanned"
)

// Upgraded names, in v's metrics, what went wrong in an upgrade case: faulty, the run in which
// the next version took over at the process numbered next, judged in v against the golden run
// of the next version; old is the golden run of the old version, opts the options v was judged
// with. An effect the old version applied before the deploy is the same effect as the new
// version's when their tool and idempotency key match, as for any effect (Check).
func Upgraded(v *Verdict, old, faulty *Observation, next int, opts Options) {
	// A call of the next version under the key of an effect the old one applied, with other
	// arguments, is that effect done again: the tool refused it (no-key-reuse), and a key made
	// from the new arguments would have applied it twice. The new version read the checkpoint.
	resent := slices.ContainsFunc(faulty.KeyReuses, func(u KeyReuse) bool { return u.FirstProcess < next && u.Process >= next })
	stranded := !faulty.Completed || v.Breaks(BoundedWorkLost)
	for i, p := range faulty.Processes {
		stranded = stranded || i >= next && p.Failed
	}
	stranded = stranded && !resent
	v.Metrics.Stranded = stranded
	v.Metrics.Duplicated = v.Metrics.Duplicates > 0 || resent
	if stranded || !offPath(*v) {
		return
	}
	// Off the next version's path: replanned unless it is the old version's whole path, which a
	// run in flight may keep to (as a workflow engine's versioning keeps a started workflow on
	// its old code), and which is then excused.
	if v.Metrics.Replanned = offPath(Check(old, faulty, opts)); v.Metrics.Replanned {
		return
	}
	for _, p := range pathProperties {
		v.Excuse(p, "the run ended as the old version's golden run: a run in flight kept to the version it started on")
	}
}

// pathProperties are the properties that say where a run ended: its result, state and effects.
var pathProperties = []string{SameResult, SameState, NoLostEffects, NoPhantomEffects}

// offPath reports whether verdict v says the run ended elsewhere than its golden run: another
// result, state, or set of effects.
func offPath(v Verdict) bool {
	for _, p := range pathProperties {
		if v.Breaks(p) {
			return true
		}
	}
	return false
}
