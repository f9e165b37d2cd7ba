package campaign

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/chaoskit/chaoskit/sim"
)

// Identity is what decides a campaign's report besides its targets' code and its seed: the
// targets, the fault kinds, the mode, the case count and depth, the shard, the restart policy, a
// deploy's grace period, the bounds of the golden runs and the filesystem model.
// Its text form is the JSON in which a report and a journal record it (reports.Options), and
// ParseIdentity reads that form back, checking every parameter.
type Identity struct {
	Targets  []string          // the targets, in order: built-in ones and commands by name
	Commands []reports.Command // the targets that are commands, and how they run
	Faults   []faults.Kind
	Mode     Mode
	Cases    int // Options.Cases
	Depth    int // Options.Depth
	Shard    reports.Shard
	Restart  int         // sim.Options.RestartFailed
	Backoff  sim.Backoff // sim.Options.RestartBackoff; the zero value is the default
	// Grace is sim.Options.Grace: a deploy's grace period, 0 for the default (sim.DefaultGrace),
	// sim.NoGrace for none.
	Grace time.Duration
	// MaxBeats and MaxVirtualTime are sim.Options': the bounds of the golden runs, 0 for the
	// defaults. They change no case, only whether a golden run is accepted, but a resumed run
	// and a replay must accept the same golden runs.
	MaxBeats       int
	MaxVirtualTime time.Duration
	// FSModel is sim.Options': the filesystem persistence model power and torn crashes follow;
	// the zero value is the default, posix.
	FSModel faults.FSModel
}

// MaxCases bounds Options.Cases: a campaign lists its schedules, and remembers a hash of each
// drawn one, in memory.
const MaxCases = 1_000_000

// Identity returns the parameters that decide the campaign's report.
func (c *Campaign) Identity() Identity {
	o := c.Options.withDefaults()
	id := Identity{Faults: o.Faults, Mode: o.Mode, Cases: o.Cases, Shard: o.Shard, Restart: o.RestartFailed, Backoff: o.RestartBackoff, Grace: o.Grace}
	if fsModelText(o.FSModel) != "" {
		id.FSModel = o.FSModel
	}
	if o.Mode == Exhaustive && o.Depth > 1 {
		id.Depth = o.Depth
	}
	if o.MaxBeats > 0 { // given, even at sim.DefaultMaxBeats: a command's default is lower
		id.MaxBeats = o.MaxBeats
	}
	if o.MaxVirtualTime != sim.DefaultMaxVirtualTime {
		id.MaxVirtualTime = o.MaxVirtualTime
	}
	for _, t := range c.Targets {
		id.Targets = append(id.Targets, t.Name)
		if t.Command != nil {
			id.Commands = append(id.Commands, *t.Command)
		}
	}
	return id
}

// Options returns id as a report records it: a default left out.
func (id Identity) Options() reports.Options {
	o := reports.Options{Targets: id.Targets, Commands: id.Commands, Mode: id.Mode.String(), Cases: id.Cases,
		Depth: id.Depth, Shard: id.Shard.String(), Restart: RestartText(id.Restart)}
	for _, k := range id.Faults {
		o.Faults = append(o.Faults, string(k))
	}
	if b := id.Backoff; b != (sim.Backoff{}) && b != sim.DefaultBackoff {
		o.RestartBackoff = b.String()
	}
	o.Grace = graceText(id.Grace)
	if id.MaxBeats > 0 {
		o.MaxBeats = id.MaxBeats
	}
	if d := id.MaxVirtualTime; d > 0 && d != sim.DefaultMaxVirtualTime {
		o.MaxVirtualTime = d.String()
	}
	o.FSModel = fsModelText(id.FSModel)
	return o
}

// graceText is how a report and a journal record a deploy's grace period (sim.Options.Grace):
// "" for the default, "0s" for none, else the duration.
func graceText(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d == 0 || d == sim.DefaultGrace:
		return ""
	}
	return d.String()
}

// parseGrace reads graceText's form back.
func parseGrace(text string) (time.Duration, error) {
	if text == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(text)
	switch {
	case err != nil || d < 0:
		return 0, fmt.Errorf("%q: want a duration of 0 or more, such as 30s (0 kills at once)", text)
	case d == 0:
		return sim.NoGrace, nil
	case d == sim.DefaultGrace:
		return 0, nil
	}
	return d, nil
}

// fsModelText is how a report and a journal record a filesystem model: "" for posix, the
// default, else the model's name.
func fsModelText(m faults.FSModel) string {
	if m == "" || m == faults.POSIX {
		return ""
	}
	return string(m)
}

// ParseIdentity reads the parameters a report or a journal records, as the command line spells
// them (fault lists may name families), and returns what is wrong with the first that is: each
// error's text starts with the parameter's name, as its flag spells it without the dashes
// ("faults: ...", "cases -1: ...").
func ParseIdentity(o reports.Options) (Identity, error) {
	id := Identity{Targets: o.Targets, Commands: o.Commands, Cases: o.Cases, Depth: o.Depth}
	var err error
	if id.Faults, err = faults.ParseKinds(strings.Join(o.Faults, ",")); err != nil {
		return id, fmt.Errorf("faults: %w", err)
	}
	if id.Mode, err = parseMode(o.Mode); err != nil {
		return id, fmt.Errorf("mode: %w", err)
	}
	switch {
	case o.Cases < 0:
		return id, fmt.Errorf("cases %d: want a count of 0 or more", o.Cases)
	case o.Cases > MaxCases:
		return id, fmt.Errorf("cases %d: at most %d per target (a campaign lists its schedules in memory); shard a larger campaign with --shard", o.Cases, MaxCases)
	case o.Depth < 0 || o.Depth > 2:
		return id, fmt.Errorf("depth %d: want 1 (one fault a case) or 2 (also a kill, then a power cut during the recovery)", o.Depth)
	case o.Depth == 2 && id.Mode != Exhaustive:
		return id, fmt.Errorf("depth 2 is for --mode exhaustive: random schedules hold several faults already")
	case o.Depth == 2 && !(slices.Contains(id.Faults, faults.Kill) && slices.Contains(id.Faults, faults.Power)):
		return id, fmt.Errorf("depth 2 lists a kill, then a power cut during the recovery: --faults must hold kill and power")
	}
	if id.Shard, err = reports.ParseShard(o.Shard); err != nil {
		return id, fmt.Errorf("shard: %w", err)
	}
	if err := id.parseCaseParams(o); err != nil {
		return id, err
	}
	return id, nil
}

// ParseCaseParams reads, of the parameters a report records, those that decide how one case
// runs (the restart policy and back-off, a deploy's grace period, the golden runs' bounds, the
// filesystem model): what a
// replay needs besides the target, the seed and the schedule. Its errors are ParseIdentity's.
func ParseCaseParams(o reports.Options) (Identity, error) {
	var id Identity
	err := id.parseCaseParams(o)
	return id, err
}

func (id *Identity) parseCaseParams(o reports.Options) error {
	var err error
	if id.Restart, err = parseRestart(o.Restart); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	if o.RestartBackoff != "" {
		if id.Backoff, err = sim.ParseBackoff(o.RestartBackoff); err != nil {
			return fmt.Errorf("restart-backoff: %w", err)
		}
	}
	if id.Grace, err = parseGrace(o.Grace); err != nil {
		return fmt.Errorf("grace %w", err)
	}
	if id.MaxBeats = o.MaxBeats; id.MaxBeats < 0 {
		return fmt.Errorf("max-beats %d: want 1 or more (leave it out for the default, %d)", o.MaxBeats, sim.DefaultMaxBeats)
	}
	if o.MaxVirtualTime != "" {
		if id.MaxVirtualTime, err = time.ParseDuration(o.MaxVirtualTime); err != nil || id.MaxVirtualTime <= 0 {
			return fmt.Errorf("max-virtual-time %q: want a positive duration, such as 720h (leave it out for the default, %s)", o.MaxVirtualTime, sim.DefaultMaxVirtualTime)
		}
	}
	if m, err := faults.ParseFSModel(o.FSModel); err != nil {
		return fmt.Errorf("fs-model: %w", err)
	} else if fsModelText(m) != "" {
		id.FSModel = m
	}
	return nil
}

// ReplayFlags returns the flags with which chaoskit replay runs a case as this campaign ran it,
// each with a leading space: those of its parameters that decide how a case runs and are not the
// defaults (see ParseCaseParams); "" when all are.
func (id Identity) ReplayFlags() string {
	o := id.Options()
	var flags []string
	add := func(name, value string) {
		if value != "" {
			flags = append(flags, "--"+name, ShellQuote(value))
		}
	}
	add("restart", o.Restart)
	add("restart-backoff", o.RestartBackoff)
	add("grace", o.Grace)
	if o.MaxBeats > 0 {
		add("max-beats", strconv.Itoa(o.MaxBeats))
	}
	add("max-virtual-time", o.MaxVirtualTime)
	add("fs-model", o.FSModel)
	if len(flags) == 0 {
		return ""
	}
	return " " + strings.Join(flags, " ")
}

// ApplyCase sets the parameters of o that decide how a case runs (see ParseCaseParams).
func (id Identity) ApplyCase(o *sim.Options) {
	o.RestartFailed, o.RestartBackoff, o.Grace = id.Restart, id.Backoff, id.Grace
	o.MaxBeats, o.MaxVirtualTime = id.MaxBeats, id.MaxVirtualTime
	o.FSModel = id.FSModel
}

// MarshalText writes id as a report records it (Options), in JSON.
func (id Identity) MarshalText() ([]byte, error) { return json.Marshal(id.Options()) }

// UnmarshalText reads MarshalText's form back, checking it (ParseIdentity).
func (id *Identity) UnmarshalText(text []byte) error {
	var o reports.Options
	if err := json.Unmarshal(text, &o); err != nil {
		return fmt.Errorf("campaign identity: %w", err)
	}
	v, err := ParseIdentity(o)
	if err != nil {
		return err
	}
	*id = v
	return nil
}

// Apply sets the parameters of o that id decides, leaving the others (the seed, the workers,
// the callbacks) as they are.
func (id Identity) Apply(o *Options) {
	o.Faults, o.Mode, o.Cases, o.Depth, o.Shard = id.Faults, id.Mode, id.Cases, id.Depth, id.Shard
	id.ApplyCase(&o.Options)
}
