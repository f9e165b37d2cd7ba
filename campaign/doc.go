// Package campaign runs campaigns: many cases of one or more targets under faults, the way the
// chaoskit command line and package chaoskittest both do, so that the same options give the
// same cases, verdicts and report whichever entry point runs them.
//
// Schedules lists a campaign's schedules: Exhaustive (every fault kind at every golden beat
// where it applies) or Random (Options.Cases schedules drawn from the seed by Draw, the one
// random engine). Run executes schedules against a sim.Runner, Options.Parallel at a time,
// and shrinks each Random failure (Shrink) to the smallest schedule that still breaks the same
// property; Explore does both for one target. Campaign runs several targets into a report
// (package reports), journaling each case as it finishes (cases.jsonl, ReadJournal) so that an
// interrupted campaign resumes where it stopped, and running only its Options.Shard of the
// cases when asked. ReportCase turns a case into a report's; Campaign.Report makes the report
// of a campaign's cases. The gates a CI checks a report against are package reports'.
//
// The package has no exit-code policy and prints nothing: its errors are typed
// (*JournalError, *UnsupportedError, ErrInterrupted, and *TargetError, wrapping
// sim.ErrNondeterministic for a target that is not deterministic) for a caller to map to its
// own.
package campaign
