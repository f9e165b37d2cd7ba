// Package reports is chaoskit's report format: the data model of a campaign's results
// (schema chaoskit.report/v2), reading and writing it, summarising it per target and per fault
// kind, and the gates CI checks it against.
//
// A report is the stable contract between chaoskit and whatever reads its output: CI gates,
// dashboards, the replay command. Every field is a pure function of the targets, the seed and the
// options, except the wall-clock fields, whose names all end in _ms, and the trailer, whose
// checksum covers them; two runs with the same command give byte-identical JSON once those are
// dropped.
//
// # Fields
//
// The top level holds, in this order, schema (always "chaoskit.report/v2"; Load refuses any
// other), provenance (chaoskit, its version; args, the command line), seed, options (targets, in
// the order they ran; mode; fault kinds; case count; shard, "I/N" in the report of one shard;
// only, in the report of a run of selected cases (chaoskit run --only, as the test runners
// make), how many it selected, the report holding those alone;
// restart, the policy for processes that fail on their own, "" for always, "never" or the most
// to restart; max_beats and max_virtual_time, the bounds of the golden runs when they are not the
// defaults (a count of beats, a Go duration); fs_model, the filesystem persistence model power
// and torn faults followed, absent for posix, else "ext4-ordered"; commands, for the targets that are commands run as processes: name, argv, dir,
// env, tools, state, ignore, disk, beats and digest; expect_fail, the targets meant to fail, each
// carrying a bug on purpose, as the demo's variants do, whose failures the renderings' headline
// counts apart), summary, cases, duration_ms and trailer.
//
// summary.targets has one entry per target: target, golden_beats, schedules (in an exhaustive
// campaign whose options.cases sampled the target's schedules, how many its whole list holds;
// absent otherwise), the totals of Stats over all its cases, and by_fault, the same totals over
// the cases whose schedule contains each kind.
// Stats are: cases, passed, failed, unknown, detected (passed by stopping loudly on an
// unrecoverable fault), unfired (cases with a fault that never fired, past the run's end or at a
// beat that does not admit its kind: they are judged on the faults that fired), duplicates, lost_effects, phantom_effects,
// state_mismatches (cases whose final durable state differs from the golden run's),
// work_lost_beats_mean and _max, resume_beats_mean (over the cases whose work lost was
// measured), restarts, failed_processes (processes that
// ended on their own with an error or a panic), model_calls_remade, violations (failed cases per
// property), not_checked (cases per property that could not be checked there) and
// work_lost_unmeasured (cases whose work lost was not measured, the target making no progress
// marks; absent when 0: when it is every case, work lost is not measured, Stats.WorkLostMeasured,
// and a gate on it fails saying so); and stranded, duplicated and replanned (the cases of a deploy
// of a next version marked so, oracle.Stranded ...; absent when 0).
//
// cases holds one entry per case, by target and then index: target; id (target:schedule, unique
// in a report); index (the case's place among its target's schedules, from 0); schedule;
// verdict (pass, fail or unknown); violations, each a property and a detail; detected; reason
// (why a case is unknown); not_checked (properties that could not be evaluated, with why);
// unfired (scheduled faults that did not fire: the run ended before their beat, or that beat is
// not one their kind fires at); shrunk (for a failure of a random campaign,
// the smallest schedule found that still breaks its first property: the one to read and
// replay); shrunk_repro (the command that replays it, when it is not the schedule itself); the
// metrics restarts, failed_processes, beats, golden_beats, work_lost_beats,
// resume_beats, duplicates, lost_effects, phantom_effects, state_mismatch and
// model_calls_remade, and work_lost_unmeasured (true when work lost could not be measured),
// stranded, duplicated and replanned (an upgrade case's, true when marked); duplicates_by_tool; trace (the beats around each fault, for cases that did
// not pass, each with beat, process, label, fault and note; reports written before the process
// was named so call it attempt, which is read as process); diff (the state or result difference, -golden +faulty); repro (the command that
// replays the case); duration_ms.
//
// After the cases come duration_ms, the campaign's wall-clock time, and last the trailer, on a
// line of its own at the end of the file:
//
//	  "trailer": {"cases": 327, "sha256": "1c78239d40d5…"}
//	}
//
// cases is the number of cases the report holds, and sha256 the SHA-256, in lower-case hex, of
// every byte of the file before the trailer's line (up to and including the newline that ends the
// line before it): head -c OFFSET report.json | sha256sum gives it. A report cut short has no
// trailer at its end, and a report with any byte changed has another checksum: OpenReport, Load,
// LoadHead and LoadStream verify the file against its trailer (Verify) before they read any of
// it, and refuse one that does not match with an error naming the file and wrapping ErrDamaged;
// verifying reads the file once and parses nothing, so a gate of a report of 600 MB costs about
// what sha256sum does. A Reader over a stream checks the trailer, and the count of cases it read,
// once it reaches the end. Whatever writes a report by other means must end it the same way.
// Version 1 of the format (chaoskit.report/v1) had no trailer: such a report is refused, naming
// its version; run its campaign again to have one this version reads.
//
// # Renderers
//
// Three methods turn a report into what people and CI systems read; each output is a pure function
// of the report. Markdown writes a summary for a pull-request comment or $GITHUB_STEP_SUMMARY: a
// table per target and per fault kind, and the first few failing cases of each target with the
// command that replays them. JUnit writes JUnit XML with a test suite per target and a test case
// per case, so that CI test reporters list each failing schedule with its violations and replay
// command. HTML writes one self-contained page, with no script and nothing loaded from elsewhere:
// the totals, SVG charts (cases and failures per fault kind, work lost, duplicate effects per
// tool), the summary tables and, for up to 30 failing or unknown cases per target, the violations
// beside a timeline of the beats around the fault. The renderers list a target's failing cases in
// the same order: failures before unknown cases, and the first case of each kind of problem (fault
// kinds and first violated property) before those that repeat one.
//
// # Gates, shards, baselines, files
//
// ParseGate reads the language of CI gates, comparisons a report's summary must satisfy
// (duplicates==0, work_lost_beats_mean{fault=power}<=1), and Gate.Check checks a report against
// one; a malformed gate is a *GateSyntaxError pointing at the offending byte. ParseTolerances
// reads the per-metric tolerances of a comparison with a baseline.
//
// Merge puts the reports of a campaign's shards (ParseShard: shard I of N holds the cases whose
// index is I-1 modulo N) back together into the report of the whole campaign. Compare lists the
// ways a report is worse than a baseline, per target and per fault kind, under per-metric
// Tolerances; StatFields and Stats.Value name the summary's numbers for gates. WriteAtomic
// replaces a file whole or not at all, through any filesystem that provides FS.
package reports
