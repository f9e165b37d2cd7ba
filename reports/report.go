package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/spf13/afero"
)

// Schema names the version of the report format this package reads and writes. Version 2 added
// the trailer (see Trailer); a report of version 1, which has none, is refused, naming its
// version.
const Schema = "chaoskit.report/v2"

// schemaV1 is the version before the trailer.
const schemaV1 = "chaoskit.report/v1"

// Report is a campaign's results: the stable contract between chaoskit and the tools that read
// its output. Every field except those ending in _ms is a pure function of the targets, the seed
// and the options.
type Report struct {
	Schema     string      `json:"schema"`                // always Schema
	Provenance *Provenance `json:"provenance,omitempty"`  // what made the report
	Seed       uint64      `json:"seed"`                  // the campaign's seed
	Options    Options     `json:"options"`               // how the campaign was run
	Summary    Summary     `json:"summary"`               // totals per target and per fault kind
	Cases      []Case      `json:"cases"`                 // every case, in run order
	DurationMs float64     `json:"duration_ms,omitempty"` // wall-clock time of the whole campaign

	// Source, if set, yields the report's cases in place of Cases, for a report too large to
	// hold them all in memory: it calls fn with each case in order (a case fn may keep), and
	// returns the first error fn returns or that reading a case meets. Every method of Report
	// reads the cases through Each, so it honours Source; encoding/json does not, so encode a
	// report with Marshal or WriteJSON.
	Source func(fn func(*Case) error) error `json:"-"`
}

// Options records how a campaign was run, so that it can be repeated.
type Options struct {
	// Targets lists the campaign's targets in the order they ran, including any a shard holds
	// no case of.
	Targets []string `json:"targets,omitempty"`
	Mode    string   `json:"mode"`            // "exhaustive" or "random"
	Faults  []string `json:"faults"`          // the fault kinds explored
	Cases   int      `json:"cases,omitempty"` // random mode: schedules per target
	Depth   int      `json:"depth,omitempty"` // exhaustive mode: 2 adds a kill, then a power cut in the recovery
	Shard   string   `json:"shard,omitempty"` // "I/N" when this report holds one shard
	// Only is, in the report of a run of selected cases (chaoskit run --only, as a test runner
	// makes), how many it selected: the report holds those cases alone, not the campaign's.
	Only int `json:"only,omitempty"`
	// Restart is the restart policy for processes that fail on their own: "" (always), "never",
	// or the most to restart.
	Restart string `json:"restart,omitempty"`
	// RestartBackoff is how long a process that failed on its own waits before its restart
	// (sim.Backoff's text form), "" for the default, 10s doubling to 5m.
	RestartBackoff string `json:"restart_backoff,omitempty"`
	// Grace is how long a deploy (an upgrade fault) let the old version's processes run after
	// SIGTERM before it killed them (a Go duration: sim.Options.Grace), "" for the default, 30s;
	// "0s" killed them at once.
	Grace string `json:"grace,omitempty"`
	// MaxBeats and MaxVirtualTime (a Go duration) bound the campaign's golden runs (chaoskit run
	// --max-beats, --max-virtual-time), when they are not the defaults (sim.DefaultMaxBeats,
	// DefaultMaxVirtualTime): recorded so that a resumed run and a replay accept the same golden
	// runs. They change no case, so reports under other bounds are of the same campaign.
	MaxBeats       int    `json:"max_beats,omitempty"`
	MaxVirtualTime string `json:"max_virtual_time,omitempty"`
	// FSModel is the filesystem persistence model power and torn faults followed: "" (posix, only
	// what fsync promises survives) or "ext4-ordered".
	FSModel string `json:"fs_model,omitempty"`
	// Commands describes the targets that are commands run as processes (chaoskit run --exec),
	// so that a resumed run, a merge and a replay run them the same way.
	Commands []Command `json:"commands,omitempty"`
	// ExpectFail names the targets meant to fail, each carrying a bug on purpose (the demo's
	// variants): the renderings' headline counts their failures apart from the others'. It
	// changes nothing else: not the verdicts, the exit code or a gate.
	ExpectFail []string `json:"expect_fail,omitempty"`
}

// Command is a target that is a command run as a process: what it runs and how.
type Command struct {
	Name   string   `json:"name"`             // the target's name in this report
	Argv   []string `json:"argv"`             // the command and its arguments
	Dir    string   `json:"dir,omitempty"`    // its working directory, absolute
	Env    []string `json:"env,omitempty"`    // variables added to its environment, KEY=VALUE
	Tools  []string `json:"tools,omitempty"`  // its tools, as --tool writes them
	State  []string `json:"state,omitempty"`  // the command that prints its state as JSON
	Ignore []string `json:"ignore,omitempty"` // JSON paths left out of comparisons
	Disk   string   `json:"disk,omitempty"`   // how its state directory reaches the disk: plain or fuse
	Beats  string   `json:"beats,omitempty"`  // with fuse: which of its doings are beats, all or calls
	Clock  string   `json:"clock,omitempty"`  // the clock its own sleeps and clock reads see: wall ("" for virtual)
	// Cassette is the file of the model's answers its model API serves (absolute), and HTTP
	// its REST service doubles, as --http writes them.
	Cassette string   `json:"cassette,omitempty"`
	HTTP     []string `json:"http,omitempty"`
	// Upgrade is the command of its next version, the one an upgrade fault deploys mid-run
	// (--upgrade-exec), and UpgradeState that version's state command (--upgrade-state; empty:
	// State). The next version shares every other field.
	Upgrade      []string `json:"upgrade,omitempty"`
	UpgradeState []string `json:"upgrade_state,omitempty"`
	// Digest is the SHA-256 of the files its command lines name (its script, its binary, its
	// next version's) and of its cassette, as they were when the campaign ran: it changes when the target does.
	Digest string `json:"digest,omitempty"`
}

// Provenance says what made a report: chaoskit's version and the command line.
type Provenance struct {
	Chaoskit string   `json:"chaoskit"`       // chaoskit's version
	Args     []string `json:"args,omitempty"` // the command line, less the program's name
}

// Summary holds the totals of a report, one entry per target in run order.
type Summary struct {
	Targets []TargetSummary `json:"targets"`
}

// TargetSummary totals one target's cases, overall and per fault kind.
type TargetSummary struct {
	Target      string `json:"target"`
	GoldenBeats int    `json:"golden_beats"` // beats of the uninterrupted run
	// Schedules is, in an exhaustive campaign whose Options.Cases sampled the target's
	// schedules, how many its whole exhaustive list holds (its cases are that many at most);
	// 0 otherwise.
	Schedules int              `json:"schedules,omitempty"`
	Stats                      // totals over every case of the target
	ByFault   map[string]Stats `json:"by_fault"` // totals over the cases whose schedule has that kind
	// NoCase lists the fault kinds the campaign asked for (Options.Faults) of which the target has
	// no case at all, in the order asked: nothing was decided about them (a kind with no beat
	// where it applies, say). A report of one shard leaves it empty: the other shards may hold
	// them.
	NoCase []string `json:"no_case,omitempty"`
}

// Stats totals a set of cases.
type Stats struct {
	Cases             int     `json:"cases"`
	Passed            int     `json:"passed"`
	Failed            int     `json:"failed"`
	Unknown           int     `json:"unknown"`
	Detected          int     `json:"detected"` // passed by failing loudly on an unrecoverable fault
	Unfired           int     `json:"unfired"`  // cases with a fault that never fired (past the run's end): judged on the others
	Refused           int     `json:"refused"`  // passed by refusing to go on without a person
	Duplicates        int     `json:"duplicates"`
	LostEffects       int     `json:"lost_effects"`
	PhantomEffects    int     `json:"phantom_effects"`
	StateMismatches   int     `json:"state_mismatches"`
	WorkLostBeatsMean float64 `json:"work_lost_beats_mean"`
	WorkLostBeatsMax  int     `json:"work_lost_beats_max"`
	ResumeBeatsMean   float64 `json:"resume_beats_mean"`
	Restarts          int     `json:"restarts"`
	FailedProcesses   int     `json:"failed_processes"`
	ModelCallsRemade  int     `json:"model_calls_remade"`
	// WorkLostUnmeasured counts the cases whose work lost was not measured, their target making
	// no progress marks (oracle.Metrics.WorkLostUnmeasured). The means and the maximum of work
	// lost and resume beats are over the other cases; when there are none, they are 0 for want
	// of a measure, and renderings and gates say "not measured" (WorkLostMeasured).
	WorkLostUnmeasured int `json:"work_lost_unmeasured,omitempty"`
	// Stranded, Duplicated and Replanned count the cases of a deploy of a next version (upgrade)
	// marked so (oracle.Metrics.Stranded, Duplicated, Replanned): the new version could not read
	// the old one's checkpoint, redid effects the old one had applied, or took another path than
	// either version.
	Stranded   int `json:"stranded,omitempty"`
	Duplicated int `json:"duplicated,omitempty"`
	Replanned  int `json:"replanned,omitempty"`
	// Violations counts failed cases by the property they broke.
	Violations map[string]int `json:"violations,omitempty"`
	// NotChecked counts the cases in which a property could not be checked, by property (see
	// Case.NotChecked for why): a pass does not vouch for it there.
	NotChecked map[string]int `json:"not_checked,omitempty"`

	workLost, resume int // sums behind the means
}

// Case is the outcome of running one schedule against one target.
type Case struct {
	Target string `json:"target"`
	ID     string `json:"id"` // unique in a report: target and schedule
	// Index is the case's position in its target's campaign, from 0: the order of its schedule
	// among all the target's schedules, whichever shard ran it.
	Index      int                `json:"index"`
	Schedule   faults.Schedule    `json:"schedule"` // the faults, in their text form
	Verdict    oracle.Outcome     `json:"verdict"`
	Violations []oracle.Violation `json:"violations"`
	// Detected is the error with which the target stopped on an unrecoverable fault.
	Detected string `json:"detected,omitempty"`
	// Refused is the error with which the target refused to go on, not knowing what was safe:
	// a pass, counted apart.
	Refused string `json:"refused,omitempty"`
	// Unknown says why the case could not be decided.
	Reason string `json:"reason,omitempty"`
	// NotChecked lists properties that could not be evaluated for this case, and why.
	NotChecked []string `json:"not_checked,omitempty"`
	// Reference, when set, names the run the case was judged against instead of the golden
	// run (oracle.Verdict.Reference).
	Reference string `json:"reference,omitempty"`
	// Unfired lists scheduled faults that never fired (the run ended first).
	Unfired []faults.Fault `json:"unfired,omitempty"`
	// Shrunk is, for a failure found by a random campaign, the smallest schedule found that
	// still breaks the first property this case broke (the schedule itself if nothing simpler
	// does), and ShrunkRepro the command that replays it, when it is not the schedule.
	Shrunk      faults.Schedule `json:"shrunk,omitempty"`
	ShrunkRepro string          `json:"shrunk_repro,omitempty"`
	oracle.Metrics
	// Effects lists, per tool, the effect applications beyond the golden run's.
	DuplicatesByTool map[string]int `json:"duplicates_by_tool,omitempty"`
	// Trace holds the beats around each fault of a case that did not pass.
	Trace []TraceBeat `json:"trace,omitempty"`
	// Diff is the state or result difference, "-golden +faulty".
	Diff       string  `json:"diff,omitempty"`
	Repro      string  `json:"repro"` // the command that replays this case exactly
	DurationMs float64 `json:"duration_ms,omitempty"`
}

// TraceBeat is one beat of a faulty run, as a report shows it.
type TraceBeat struct {
	Beat    int    `json:"beat"`
	Process int    `json:"process"` // 0 for the first process, then one more per process started
	Label   string `json:"label"`
	Fault   string `json:"fault,omitempty"` // the fault that fired at this beat
	Note    string `json:"note,omitempty"`  // what the fault did, or how the process ended
}

// UnmarshalJSON reads a trace beat as a report holds it, refusing a field it does not know, as
// the rest of a report is read. A report written before the field was named process calls it
// attempt, under the same schema: either name is read.
func (b *TraceBeat) UnmarshalJSON(data []byte) error {
	type fields TraceBeat // TraceBeat's fields without this method
	var v struct {
		fields
		Process *int `json:"process"`
		Attempt *int `json:"attempt"` // Process's name in earlier reports
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("trace beat: %w", err)
	}
	*b = TraceBeat(v.fields)
	switch {
	case v.Process != nil:
		b.Process = *v.Process
	case v.Attempt != nil:
		b.Process = *v.Attempt
	}
	return nil
}

// Kinds returns the distinct fault kinds in c's schedule, in order of appearance.
func (c *Case) Kinds() []string {
	var kinds []string
	for _, k := range c.Schedule.Kinds() {
		kinds = append(kinds, string(k))
	}
	return kinds
}

// Add counts c into s.
func (s *Stats) Add(c *Case) {
	s.Cases++
	switch c.Verdict {
	case oracle.Pass:
		s.Passed++
		if c.Detected != "" {
			s.Detected++
		}
		if c.Refused != "" {
			s.Refused++
		}
	case oracle.Fail:
		s.Failed++
	default:
		s.Unknown++
	}
	if len(c.Unfired) > 0 {
		s.Unfired++
	}
	s.Duplicates += c.Duplicates
	s.LostEffects += c.LostEffects
	s.PhantomEffects += c.PhantomEffects
	if c.StateMismatch {
		s.StateMismatches++
	}
	if c.WorkLostUnmeasured {
		s.WorkLostUnmeasured++
	}
	for _, m := range []struct {
		n    *int
		mark bool
	}{{&s.Stranded, c.Stranded}, {&s.Duplicated, c.Duplicated}, {&s.Replanned, c.Replanned}} {
		if m.mark {
			*m.n++
		}
	}
	s.workLost += c.WorkLostBeats
	s.resume += c.ResumeBeats
	if measured := s.Cases - s.WorkLostUnmeasured; measured > 0 {
		s.WorkLostBeatsMean = round3(float64(s.workLost) / float64(measured))
		s.ResumeBeatsMean = round3(float64(s.resume) / float64(measured))
	}
	s.WorkLostBeatsMax = max(s.WorkLostBeatsMax, c.WorkLostBeats)
	s.Restarts += c.Restarts
	s.FailedProcesses += c.FailedProcesses
	s.ModelCallsRemade += c.ModelCallsRemade
	for _, v := range c.Violations {
		if s.Violations == nil {
			s.Violations = map[string]int{}
		}
		s.Violations[v.Property]++
	}
	for _, n := range c.NotChecked {
		if s.NotChecked == nil {
			s.NotChecked = map[string]int{}
		}
		p, _, _ := strings.Cut(n, ":")
		s.NotChecked[p]++
	}
}

// WorkLostMeasured reports whether s measures work lost: it has a case whose work lost was
// measured, or no case at all. Without one, work_lost_beats_mean, work_lost_beats_max and
// resume_beats_mean are 0 for want of a measure (the target makes no progress marks).
func (s *Stats) WorkLostMeasured() bool { return s.Cases == 0 || s.WorkLostUnmeasured < s.Cases }

// Each calls fn with every case of r in order, from r.Source if it is set, else from r.Cases.
// It stops at the first error, of fn or of reading a case, and returns it.
func (r *Report) Each(fn func(*Case) error) error {
	if r.Source != nil {
		return r.Source(fn)
	}
	for i := range r.Cases {
		if err := fn(&r.Cases[i]); err != nil {
			return err
		}
	}
	return nil
}

// add counts c into t's totals and those of each of its fault kinds.
func (t *TargetSummary) add(c *Case) {
	t.Stats.Add(c)
	for _, k := range c.Kinds() {
		s := t.ByFault[k]
		s.Add(c)
		t.ByFault[k] = s
	}
}

// Summarize recomputes r.Summary from r's cases (see Each), keeping targets in order of first
// appearance. goldenBeats gives each target's golden beat count (missing targets get 0). It
// returns the error of reading the cases, and leaves r.Summary as it was then.
func (r *Report) Summarize(goldenBeats map[string]int) error {
	var sum Summary
	index := map[string]int{}
	err := r.Each(func(c *Case) error {
		j, ok := index[c.Target]
		if !ok {
			j = len(sum.Targets)
			index[c.Target] = j
			sum.Targets = append(sum.Targets, TargetSummary{Target: c.Target, GoldenBeats: goldenBeats[c.Target], ByFault: map[string]Stats{}})
		}
		sum.Targets[j].add(c)
		return nil
	})
	if err != nil {
		return err
	}
	if r.Options.Shard == "" && r.Options.Only == 0 && len(r.Options.Targets) > 0 {
		sum.Targets = r.covered(sum.Targets, index, goldenBeats)
	}
	r.Summary = sum
	return nil
}

// covered returns the summaries of a whole campaign's targets in the campaign's order, a target
// without a single case included, each with the fault kinds it has no case of (NoCase).
// index gives each summary's position in have by target.
func (r *Report) covered(have []TargetSummary, index map[string]int, goldenBeats map[string]int) []TargetSummary {
	out := make([]TargetSummary, 0, len(r.Options.Targets))
	for _, name := range r.Options.Targets {
		t := TargetSummary{Target: name, GoldenBeats: goldenBeats[name], ByFault: map[string]Stats{}}
		if j, ok := index[name]; ok {
			t = have[j]
			delete(index, name)
		}
		for _, k := range r.Options.Faults {
			if t.ByFault[k].Cases == 0 {
				t.NoCase = append(t.NoCase, k)
			}
		}
		out = append(out, t)
	}
	for _, t := range have { // a target the options do not name: kept, in its order
		if _, ok := index[t.Target]; ok {
			out = append(out, t)
		}
	}
	return out
}

// Marshal encodes r as indented JSON with a trailing newline; see WriteJSON.
func (r *Report) Marshal() ([]byte, error) {
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// round3 rounds to three decimals, so that means print the same however they were computed.
func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// WriteFile writes r to path as JSON, through a temporary file and a rename, fsyncing both the
// file and its directory so that a crash leaves either the old report or the new one.
func (r *Report) WriteFile(path string) error {
	return WriteAtomicFunc(afero.NewOsFs(), path, r.WriteJSON)
}
