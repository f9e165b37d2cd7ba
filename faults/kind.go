package faults

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Kind names a fault. The names are stable: they appear in schedules, reports and gates.
type Kind string

// The storage and process faults.
const (
	// Kill kills the process at a beat: everything it wrote survives, synced or not, because the
	// page cache outlives the process.
	Kill Kind = "kill"
	// Power cuts the power at a beat: writes and directory entries that were not fsynced are lost.
	// In mode subset (power@K:subset) a seeded subset of them is kept instead, as a disk and a
	// kernel that write back in their own order may: a later write can be durable while an
	// earlier one to the same file is not.
	Power Kind = "power"
	// Torn cuts the power while the last un-fsynced write is landing: a sector-aligned prefix of
	// it reaches the disk, or (mode garbage) its tail reads back as garbage.
	Torn Kind = "torn"
	// DiskFull fills the disk at a write beat, with a budget of bytes still free, counted in whole
	// blocks (Block), as a filesystem allocates them: a write that needs more blocks lands up to a
	// block boundary and fails with ENOSPC, and so does every later write that needs a block more
	// (an overwrite in place, or a write into the rest of a file's last block, still succeeds),
	// from any process: the disk stays full across restarts and crashes, and for
	// every worker. Written diskfull@K:BYTES, it stays full to the end of the run; written
	// diskfull@K:BYTES+DUR, space returns once DUR of virtual time has passed.
	DiskFull Kind = "diskfull"
	// FsyncFail fails an fsync with EIO and drops the file's dirty data, as Linux does after a
	// failed writeback: a retried fsync then succeeds without the data ever reaching the disk.
	// Linux marks the pages clean and keeps them cached until they are evicted, so reads may
	// return the new data for a while; the model evicts them at once, so reads return what is
	// on the disk from the failed fsync on (either is what a later read can see).
	FsyncFail Kind = "fsyncfail"
	// Corrupt kills the process at a beat and flips one bit of a byte that had reached the disk.
	Corrupt Kind = "corrupt"
)

// The faults of time and of the fleet of workers.
const (
	// Lease freezes the process running at a beat for a while (a GC pause, a closed laptop lid,
	// a suspended VM), long enough for its lease to expire and another worker to take the run;
	// then it carries on, a zombie. Written lease@K+DUR.
	Lease Kind = "lease"
	// Deploy restarts every worker at once, as a deploy does, without touching the disk.
	Deploy Kind = "deploy"
	// Upgrade stops every worker at a beat as a deploy of a new version does (SIGTERM, then
	// SIGKILL once a grace period of virtual time has passed, sim.Options.Grace; in process,
	// the context cancelled, then the kill), and every process started after it runs the next
	// version of the target, on the disk and world the old one left. It takes a next version
	// (sim.Options.NextVersion, chaoskit run --upgrade-exec).
	Upgrade Kind = "upgrade"
	// Switch preempts the worker running at a beat in favour of another (written switch@K:W for
	// worker W), to explore an interleaving the scheduler would not choose on its own.
	Switch Kind = "switch"
)

// The faults of the outside world.
const (
	// ToolTransient fails a tool call before it is applied, with a retryable error.
	ToolTransient Kind = "tool-transient"
	// ToolAmbiguous applies a tool call and loses its reply: the caller gets an error for an
	// effect that happened ("200, but the connection dropped").
	ToolAmbiguous Kind = "tool-ambiguous"
	// ToolTimeout lets a tool call outlive the caller's deadline and applies it afterwards.
	ToolTimeout Kind = "tool-timeout"
	// CallbackDup delivers a tool's asynchronous completion twice.
	CallbackDup Kind = "callback-dup"
	// ModelRateLimit answers a model call with a rate-limit error and a retry-after delay.
	ModelRateLimit Kind = "model-ratelimit"
	// ModelError answers a model call with a server error.
	ModelError Kind = "model-error"
	// ModelContext answers a model call with a context-length error.
	ModelContext Kind = "model-context"
	// ModelHang never answers a model call: it waits until the caller gives up.
	ModelHang Kind = "model-hang"
	// ModelCut cuts a model's answer off mid-stream: the model did the work, the caller gets
	// part of it (an SSE stream closed before its last event, a body cut after its 200).
	ModelCut Kind = "model-cut"
	// ModelDiverge kills the process at a beat, as Kill does, and from then on the model answers
	// a request it was asked before with another answer (ModelCall.Alternative): another
	// amount, recipient or tool, as a real model may when a resumed agent asks again.
	ModelDiverge Kind = "model-diverge"
)

// Class says at which beats a fault can fire.
type Class int

// The beat classes.
const (
	AnyBeat       Class = iota // any beat
	WriteBeat                  // a write or truncate of file data
	SyncBeat                   // an fsync of a file or a directory
	ToolBeat                   // a tool call leaving the process
	ModelBeat                  // a model call leaving the process
	AsyncToolBeat              // a call of an asynchronous tool leaving the process
)

// Arg says what a fault takes after its beat number.
type Arg int

// The argument forms.
const (
	NoArg       Arg = iota
	BytesArg        // ":N", a byte count
	ModeArg         // ":mode", one of KindInfo.Modes
	DurationArg     // "+DUR", a Go duration such as 45s or 2h
	WorkerArg       // ":W", a worker number (optional)
)

// Family groups fault kinds for lists and for the command line ("storage", "fleet", ...).
type Family string

// The families.
const (
	StorageFamily Family = "storage" // the filesystem and the process on it
	FleetFamily   Family = "fleet"   // time, leases and the workers
	ToolFamily    Family = "tool"    // the tools the agent calls
	ModelFamily   Family = "model"   // the model the agent calls
)

// Scope says what a fault ends when it fires.
type Scope int

// The scopes.
const (
	NoScope      Scope = iota // nothing: the process goes on (a failing call, a frozen worker, a full disk)
	ProcessScope              // the process it fires in (a kill)
	MachineScope              // every process of the machine (a power loss)
	FleetScope                // every worker of the fleet (a deploy)
)

// Listing says where an exhaustive campaign lists a kind in a golden run, and with which
// arguments: at every beat of the golden run where the kind applies (KindInfo.On), as follows.
type Listing int

// The listings.
const (
	EachBeat Listing = iota // once, with no argument or its default mode
	// PlainAndWhereModesDiffer lists the first mode everywhere, and each other mode only where it
	// leaves the disk otherwise than the first (power:subset).
	PlainAndWhereModesDiffer
	// WhereModesDiffer lists each mode only where it leaves the disk otherwise than a plain power
	// loss (torn: at a beat where a write is in flight that a tear would cut).
	WhereModesDiffer
	// EachPause lists one fault per pause of the campaign's lease pauses (lease+DUR).
	EachPause
	// HalfTheWrite fills the disk with half of the write it fires at still fitting, for the
	// campaign's duration (diskfull:BYTES+DUR).
	HalfTheWrite
	// AfterAlternative lists it once at every beat after the first model call that has an
	// alternative answer (model-diverge): before one, a crash is a plain kill.
	AfterAlternative
	// WithNextVersion lists it once at every beat, and only for a target given a next version
	// (upgrade).
	WithNextVersion
)

// KindInfo describes a fault kind: what it models, how it is written, and how the harness and
// campaigns treat it. It is the one place where a kind's nature is decided; what it does when it
// fires lives in one place too (Disk.Crash for the disk, the kernel's Env, package sim's env.go,
// for the world).
type KindInfo struct {
	Kind    Kind
	Summary string   // one line: what the fault models
	Family  Family   // the family the command line groups it in
	On      Class    // the beats it can fire at
	Arg     Arg      // what follows the beat number
	Modes   []string // for ModeArg: the allowed modes; the first is the default and is not written
	// Lasts says that the fault may be given a duration after its argument, +DUR, at whose end
	// it is over (diskfull: space returns). Without one it lasts to the end of the run.
	Lasts bool
	// Ends says what the fault ends: a crash ends a process (ProcessScope), every process of
	// the machine (MachineScope) or every worker (FleetScope); the harness restarts each.
	Ends Scope
	// Disk says that a crash of the kind reaches the disk (Disk.Crash): what the processes
	// wrote is kept or lost as the kind models it. A deploy restarts the workers and leaves the
	// disk as it is.
	Disk bool
	// Pending lists the modes whose crash keeps a seeded subset of what was not fsynced, for
	// which the disk must keep every operation since the last fsync (DiskOptions.Pending).
	Pending []string
	// Listed says where an exhaustive campaign lists the kind.
	Listed Listing
	// Holds is how long the fault stays in force after it fired beyond its own duration (the
	// +DUR of Lasts, or a DurationArg's): a rate limit's retry-after. See End.
	Holds time.Duration
	// AtEnd says that the kind may be scheduled after the run's end (Beat End, power@end): the
	// machine loses power once the last process has exited, before what it wrote without an
	// fsync reached the disk (ext4's delayed allocation leaves such a file's data unwritten for
	// up to 30 seconds after the program that wrote it exited 0, and nothing restarts a job that
	// exited 0). No process is left to restart: the state read back is what survived. An
	// exhaustive campaign lists the kind there too.
	AtEnd bool
	// NextVersion says that the kind deploys the target's next version (upgrade): a case of it
	// runs with Options.Workers workers, not a fleet's, and is judged against the golden run of
	// the next version.
	NextVersion bool
}

// Crash reports whether a fault of the kind ends a process (see Ends).
func (k KindInfo) Crash() bool { return k.Ends != NoScope }

// End returns when fault f of this kind, firing at now, is over: once its duration has passed
// (a full disk's +DUR, a frozen worker's pause) and what it holds beyond that (Holds). A fault
// with no duration, or one that lasts to the end of the run, is over at once: waiting for it
// changes nothing.
func (k KindInfo) End(f Fault, now time.Time) time.Time {
	if k.Lasts || k.Arg == DurationArg {
		now = now.Add(f.Dur)
	}
	return now.Add(k.Holds)
}

// NeedsPending reports whether fault f keeps a subset of what was not fsynced (see Pending).
func (k KindInfo) NeedsPending(f Fault) bool {
	return f.Mode != "" && slices.Contains(k.Pending, f.Mode)
}

// Form shows how a fault of the kind is written in a schedule, with its optional parts in
// brackets: "kill@N", "diskfull@N:BYTES[+DURATION]", "torn@N[:garbage]", "lease@N+DURATION".
// (N may be end for the kinds that may be scheduled there: AtEnd.)
func (k KindInfo) Form() string {
	form := string(k.Kind) + "@N"
	switch k.Arg {
	case BytesArg:
		form += ":BYTES"
	case DurationArg:
		form += "+DURATION"
	case WorkerArg:
		form += "[:WORKER]"
	case ModeArg:
		for _, m := range k.Modes[1:] {
			form += "[:" + m + "]"
		}
	}
	if k.Lasts {
		form += "[+DURATION]"
	}
	return form
}

// RateLimitRetryAfter is the retry-after a model-ratelimit fault answers with. The limit holds
// for that long, in virtual time: every model call of the run made before it ends, by any
// process, is refused with the time left (a process target's time.sleep and setTimeout wait in
// virtual time too, so a harness that waits as told is answered), so a harness that retries at
// once, ignoring it, is refused until it gives up. The supervisor counts the window as a fault
// in force (Holds).
const RateLimitRetryAfter = 20 * time.Second

var kindTable = []KindInfo{
	{Kind: Kill, Family: StorageFamily, On: AnyBeat, Ends: ProcessScope, Disk: true,
		Summary: "process killed (SIGKILL, OOM): everything written survives, synced or not"},
	{Kind: Power, Family: StorageFamily, On: AnyBeat, Ends: MachineScope, Disk: true, AtEnd: true,
		Arg: ModeArg, Modes: []string{"fsynced", "subset"}, Pending: []string{"subset"}, Listed: PlainAndWhereModesDiffer,
		Summary: "power lost: un-fsynced writes and un-fsynced directory entries are lost (or, :subset, a seeded subset of them is kept: a later write may land without an earlier one); power@end cuts it after the last process exited"},
	{Kind: Torn, Family: StorageFamily, On: AnyBeat, Ends: MachineScope, Disk: true, AtEnd: true,
		Arg: ModeArg, Modes: []string{"prefix", "garbage"}, Listed: WhereModesDiffer,
		Summary: "power lost mid-write: the last un-fsynced write lands as a sector-aligned prefix (or, :garbage, with a garbage tail); torn@end after the last process exited"},
	{Kind: DiskFull, Family: StorageFamily, On: WriteBeat, Arg: BytesArg, Lasts: true, Listed: HalfTheWrite,
		Summary: "disk full: writes that need more blocks than the budget leaves fail with ENOSPC, the first one landing up to a block boundary; it stays full for every process, restarts included, until +DUR has passed"},
	{Kind: FsyncFail, Family: StorageFamily, On: SyncBeat,
		Summary: "fsync fails with EIO and the dirty data is dropped (a retried fsync then lies)"},
	{Kind: Corrupt, Family: StorageFamily, On: AnyBeat, Ends: ProcessScope, Disk: true,
		Summary: "process killed and one bit of a durable byte flips (bit rot, a bad sector)"},
	{Kind: Lease, Family: FleetFamily, On: AnyBeat, Arg: DurationArg, Listed: EachPause,
		Summary: "the worker is frozen for +DUR (GC pause, laptop lid, suspended VM): its lease expires, another worker takes over, it wakes a zombie"},
	{Kind: Deploy, Family: FleetFamily, On: AnyBeat, Ends: FleetScope,
		Summary: "every worker is restarted at once, as by a deploy; the disk is untouched"},
	{Kind: Upgrade, Family: FleetFamily, On: AnyBeat, Ends: FleetScope, Listed: WithNextVersion, NextVersion: true,
		Summary: "every worker is stopped as by a deploy (SIGTERM, or in process its context cancelled; SIGKILL if still running after --grace, 30s) and the next version of the target takes over the run (needs a next version: --upgrade-exec)"},
	{Kind: Switch, Family: FleetFamily, On: AnyBeat, Arg: WorkerArg,
		Summary: "the running worker is preempted for another (:W picks worker W): an interleaving to explore"},
	{Kind: ToolTransient, Family: ToolFamily, On: ToolBeat,
		Summary: "a tool call fails before it is applied, with a retryable error (503)"},
	{Kind: ToolAmbiguous, Family: ToolFamily, On: ToolBeat,
		Summary: "a tool call is applied but its reply is lost (200, then the connection dropped)"},
	{Kind: ToolTimeout, Family: ToolFamily, On: ToolBeat,
		Summary: "a tool call outlives the caller's deadline and is applied after it"},
	{Kind: CallbackDup, Family: ToolFamily, On: AsyncToolBeat,
		Summary: "a tool's asynchronous completion is delivered twice"},
	{Kind: ModelRateLimit, Family: ModelFamily, On: ModelBeat, Holds: RateLimitRetryAfter,
		Summary: "the model answers 429 with a retry-after delay"},
	{Kind: ModelError, Family: ModelFamily, On: ModelBeat, Arg: ModeArg, Modes: []string{"500", "503"},
		Summary: "the model answers with a server error (500; :503, overloaded)"},
	{Kind: ModelContext, Family: ModelFamily, On: ModelBeat,
		Summary: "the model refuses the call: the context is too long"},
	{Kind: ModelHang, Family: ModelFamily, On: ModelBeat,
		Summary: "the model never answers: the call waits until the caller gives up"},
	{Kind: ModelCut, Family: ModelFamily, On: ModelBeat,
		Summary: "the model's answer is cut off mid-stream: the work was done, the caller gets part of it"},
	{Kind: ModelDiverge, Family: ModelFamily, On: AnyBeat, Ends: ProcessScope, Disk: true, Listed: AfterAlternative,
		Summary: "process killed, and the model then answers a request asked again with its alternative (another amount, recipient or tool)"},
}

// families lists the families, in a stable order.
var families = []Family{StorageFamily, FleetFamily, ToolFamily, ModelFamily}

var kindIndex = func() map[Kind]int {
	m := make(map[Kind]int, len(kindTable))
	for i, k := range kindTable {
		m[k.Kind] = i
	}
	return m
}()

// Kinds lists every fault kind, in a stable order.
func Kinds() []KindInfo { return append([]KindInfo(nil), kindTable...) }

// StorageKinds lists the kinds that act on the filesystem, in a stable order.
func StorageKinds() []Kind { return FamilyKinds(StorageFamily) }

// FamilyKinds lists the kinds of a family, in a stable order.
func FamilyKinds(f Family) []Kind {
	var ks []Kind
	for _, k := range kindTable {
		if k.Family == f {
			ks = append(ks, k.Kind)
		}
	}
	return ks
}

// AllKinds lists every kind, in a stable order.
func AllKinds() []Kind {
	ks := make([]Kind, len(kindTable))
	for i, k := range kindTable {
		ks[i] = k.Kind
	}
	return ks
}

// Info returns the description of k, and false if k is not a known kind.
func (k Kind) Info() (KindInfo, bool) {
	i, ok := kindIndex[k]
	if !ok {
		return KindInfo{}, false
	}
	return kindTable[i], true
}

// ParseKinds parses a comma-separated list of kind names ("kill,power"). A family name
// ("storage", "fleet", "tool", "model") stands for every kind of the family, and "all" for
// every kind. The result has no duplicates and keeps the order of first mention.
func ParseKinds(list string) ([]Kind, error) {
	var out []Kind
	seen := map[Kind]bool{}
	add := func(k Kind) {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		switch {
		case name == "":
			return nil, fmt.Errorf("fault list %q: empty fault name", list)
		case slices.Contains(families, Family(name)):
			for _, k := range FamilyKinds(Family(name)) {
				add(k)
			}
		case name == "all":
			for _, k := range AllKinds() {
				add(k)
			}
		default:
			k := Kind(name)
			if _, ok := k.Info(); !ok {
				return nil, fmt.Errorf("fault list %q: unknown fault %q (known: %s; or storage, fleet, tool, model, all)", list, name, knownKinds())
			}
			add(k)
		}
	}
	return out, nil
}

// atEndKinds lists how the kinds that may be scheduled @end are written there.
func atEndKinds() string {
	var forms []string
	for _, k := range kindTable {
		if k.AtEnd {
			forms = append(forms, string(k.Kind)+"@end")
		}
	}
	return strings.Join(forms, ", ")
}

func knownKinds() string {
	names := make([]string, 0, len(kindTable))
	for _, k := range kindTable {
		names = append(names, string(k.Kind))
	}
	return strings.Join(names, ", ")
}

// Decided reports whether a campaign that has cases of the kinds has says something of kind k:
// it has a case of k; or whole, the campaign lists every schedule where each kind applies (an
// exhaustive one, not capped), so that k has no listing at all, and k is listed only where it
// leaves the disk otherwise than a plain power loss (WhereModesDiffer: torn, where no write in
// flight could tear) and the campaign has power cases, which are what k's would be everywhere.
func Decided(k Kind, has func(Kind) bool, whole bool) bool {
	if has(k) {
		return true
	}
	info, _ := k.Info()
	return whole && info.Listed == WhereModesDiffer && has(Power)
}

// Requests groups a list of kinds (a campaign's, say) into what it asks for: every kind of a
// family present (as ParseKinds gives for "storage" or "all") is one request, named for the
// family, and any other kind a request of its own, named for the kind; in the order of the
// list's first kind of each; every kind of every family (ParseKinds("all"), AllKinds) is one
// request, "all": a target that calls no model is not undecided under all. A request is decided
// once one of its kinds has a case: a campaign over the storage family decides it without a torn
// case, but one over torn alone does not.
func Requests(kinds []Kind) (names []string, groups [][]Kind) {
	have := map[Kind]bool{}
	for _, k := range kinds {
		have[k] = true
	}
	whole := map[Family]bool{}
	for _, f := range families {
		whole[f] = !slices.ContainsFunc(FamilyKinds(f), func(k Kind) bool { return !have[k] })
	}
	if !slices.ContainsFunc(families, func(f Family) bool { return !whole[f] }) {
		return []string{"all"}, [][]Kind{AllKinds()}
	}
	done := map[Family]bool{}
	for _, k := range kinds {
		info, _ := k.Info()
		switch {
		case !whole[info.Family]:
			names, groups = append(names, string(k)), append(groups, []Kind{k})
		case !done[info.Family]:
			done[info.Family] = true
			names, groups = append(names, string(info.Family)), append(groups, FamilyKinds(info.Family))
		}
	}
	return names, groups
}
