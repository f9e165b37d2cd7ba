package sim

import (
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
)

// Options configure how a Runner runs cases. The zero value is valid: one worker, seed 0.
type Options struct {
	// Name names the target in cases and their replay commands; the default is "target".
	Name string
	// NextVersion, if set, builds the next version of the target: the version a deploy puts in
	// place mid-run (an upgrade fault, upgrade@N). Every process started after the fault runs
	// it, on the disk and the world the old version left, and the case is judged against the
	// golden run of the next version run from the start. It declares the same tools as the old
	// version (the world is the old version's). Without it, an upgrade fault cannot apply.
	NextVersion func() harness.Target
	// Seed seeds everything random in a case: the processes' random sources, the scheduler's
	// choices between threads, torn garbage, the choice of a corrupted byte.
	Seed uint64
	// Workers is how many workers of the target run at once against the one disk and world,
	// as a fleet does (default 1): they take turns under a seeded cooperative scheduler,
	// switching only at beats, so every interleaving is reproducible.
	Workers int
	// FleetWorkers is how many workers run the cases with a fleet fault (lease, deploy,
	// switch), which take several to mean anything (default 2, and at least Workers). Their
	// cases are judged against a golden run of as many workers; if that golden run applies an
	// effect more often than the golden run of Workers workers, the workers repeat effects
	// with no fault at all (no lease), and such a case is held to the count of Workers workers
	// (oracle.Options.Repeated).
	FleetWorkers int
	// MaxRestarts is how many restarts a case may take before its run counts as not
	// completing (default 10): restarts after a crash, and after a failure of a process that
	// no fault disturbed. A process that failed while a fault was in force (a full disk that has
	// not got its space back) is restarted however many times that takes.
	MaxRestarts int
	// RestartFailed is the restart policy for a process that fails on its own (returns an
	// error, panics, exits with another status than 0): RestartAlways (the default) restarts it
	// after RestartBackoff, as a supervisor would, until it fails twice in a row the same way
	// with every fault over (see Backoff); RestartNever ends the run there, failed; a positive
	// number restarts at most that many failed processes. A crashed process is always
	// restarted. Reports count failed processes (failed_processes) whatever the policy.
	RestartFailed int
	// RestartBackoff is how long a process that failed on its own waits, in virtual time, before
	// it is restarted; the zero value is DefaultBackoff (Kubernetes': 10s doubling to 5m). For a
	// restart at once, set only Reset: Backoff{Reset: DefaultBackoff.Reset}.
	RestartBackoff Backoff
	// Timeout is how long, in wall-clock time, a process may go without a beat before it counts
	// as hung and its case as unknown (default 30s; the detector notices within a sixteenth of it
	// more), and in a case at least 20 times (hangFactor) the longest time the golden runs took
	// between two beats, so that a target slow on a loaded machine is never taken for a hung
	// one. A hang that shows in virtual terms (every thread waiting for something that will
	// never come) is decided at once, as stuck, whatever Timeout is.
	Timeout time.Duration
	// Grace is how long, in virtual time, a deploy (an upgrade fault) lets a process of the old
	// version run after asking it to stop, as Kubernetes' terminationGracePeriodSeconds and
	// systemd's TimeoutStopSec do: a command gets SIGTERM, a Go target's context is cancelled
	// with harness.ErrTerminated as its cause. A process still running when it ends is killed,
	// as by SIGKILL. The default (0) is DefaultGrace, 30s; NoGrace (any negative duration) kills
	// every process at once, without asking.
	Grace time.Duration
	// RestartDelay is the virtual time a restart takes (default 1s).
	RestartDelay time.Duration
	// WorkLostSlack is how many beats beyond the work in flight a restart may redo (default 0).
	WorkLostSlack int
	// Sector is the unit at which writes tear (default 512 bytes).
	Sector int
	// FSModel is the filesystem persistence model power and torn crashes follow: faults.POSIX
	// (the default: only what fsync promises survives) or faults.Ext4Ordered (what ext4 with its
	// default options keeps). See faults.FSModel.
	FSModel faults.FSModel
	// NoDerive makes every case re-run the golden prefix instead of deriving its crash state
	// from the recorded golden run. Results are the same, only slower; it exists to check that.
	NoDerive bool
	// NoShare makes every case run its own recovery. Otherwise cases whose crash state is the
	// same (the disk after the crash, the world, the clock: see Runner.Run) share one recovery
	// run, each judged on its own, with the same verdict and report as if it had run alone.
	NoShare bool
	// KeepBeats keeps the beats of every case, a passing one's too, so that its Trace shows what
	// happened (chaoskit replay --trace); otherwise only a case that did not simply pass keeps them.
	KeepBeats bool
	// Repro, if set, returns the command that replays a case (Case.Repro): package campaign's
	// ReplayCommand for the command line, a go test command in package chaoskittest.
	Repro func(schedule faults.Schedule) string
	// MaxBeats bounds a golden run in beats, and MaxVirtualTime in virtual time: a golden run that
	// reaches either without finishing is refused with a *BoundError, for it has no other
	// reference for its length (a case is bounded by its golden run's). The defaults,
	// DefaultMaxBeats and DefaultMaxVirtualTime, are far above what real harnesses need; a harness
	// that needs more sets them higher. Neither changes a case: they decide only whether a golden
	// run is accepted.
	MaxBeats       int
	MaxVirtualTime time.Duration
	// OnGolden, if set, is called as a golden run goes on, a few times a second of wall-clock
	// time at most, on the goroutine of the target's thread: for a progress display. It must
	// return quickly and must not call the Runner.
	OnGolden func(GoldenProgress)
}

// GoldenProgress is how far a golden run has got (Options.OnGolden).
type GoldenProgress struct {
	Target string // the target's name, with its number of workers when there are several
	// Run numbers the golden run: 1, counted as it goes (nothing of its beats is kept, so that a
	// run that never ends costs no memory until it reaches a bound); 2, recorded; 3, only when
	// the first two differ, to find where.
	Run     int
	Beats   int           // the beats it has made
	Virtual time.Duration // the virtual time that has passed in it
	// Of is how many beats the run should make, the first run's, once that is known (0 before).
	Of int
	// MaxBeats and MaxVirtualTime are the bounds it runs under (Options').
	MaxBeats       int
	MaxVirtualTime time.Duration
}

// DefaultMaxBeats and DefaultMaxVirtualTime are the default bounds of a golden run
// (Options.MaxBeats, Options.MaxVirtualTime), chosen far above what real harnesses need. The
// golden runs of this repository's targets make at most a few hundred beats: the reference agent
// 162 (216 with two workers, the longest of its variants), the Burr example 254 on a FUSE disk
// where every SQLite write is a beat, DBOS's workflow 132; chaoskit bench's largest synthetic
// agent makes 10,001. The longest in virtual time is the reference agent's, 52 hours, most of
// them a weekend's wait for an approval. A million beats is 4,000 times the examples' and 100
// times the synthetic agent's, and a target that never ends reaches it in a few seconds in
// process. A command (package process) takes 60 to 120 µs a beat, a round trip between two
// processes, and has a default of its own a tenth of this one (harness.Limits.MaxBeats,
// process.DefaultMaxBeats), which it reaches in seconds rather than minutes; docs/go.md gives
// the command that measures it. A
// year of virtual time lets a harness wait for approvals that take weeks, and outlive 24-hour
// key expiries, many times over, while a loop that sleeps an hour a turn is stopped after 8,760
// turns.
const (
	DefaultMaxBeats       = 1_000_000
	DefaultMaxVirtualTime = 365 * 24 * time.Hour
)

// DefaultTimeout is Options.Timeout's default, and hangFactor how many times the golden run's
// longest gap between beats a case waits for a beat before its process counts as hung.
const (
	DefaultTimeout = 30 * time.Second
	hangFactor     = 20
)

// The restart policies of Options.RestartFailed, besides a positive count.
const (
	RestartAlways = 0
	RestartNever  = -1
)

// withDefaults returns o with every field left zero set to its default.
func withDefaults(o Options) Options {
	if o.Name == "" {
		o.Name = "target"
	}
	if o.Workers <= 0 {
		o.Workers = 1
	}
	if o.FleetWorkers <= 0 {
		o.FleetWorkers = 2
	}
	if o.MaxRestarts <= 0 {
		o.MaxRestarts = 10
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.RestartBackoff == (Backoff{}) {
		o.RestartBackoff = DefaultBackoff
	}
	if o.RestartDelay <= 0 {
		o.RestartDelay = time.Second
	}
	if o.Sector <= 0 {
		o.Sector = 512
	}
	if o.MaxBeats <= 0 {
		o.MaxBeats = DefaultMaxBeats
	}
	if o.MaxVirtualTime <= 0 {
		o.MaxVirtualTime = DefaultMaxVirtualTime
	}
	m, err := faults.ParseFSModel(string(o.FSModel))
	if err != nil {
		panic("sim: Options.FSModel: " + err.Error())
	}
	o.FSModel = m
	return o
}
