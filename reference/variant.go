package reference

import "github.com/chaoskit/chaoskit/faults"

// Variant names the reference agent (Correct) or one of its deliberately broken variants.
type Variant string

// The agent and its variants, each carrying one bug from the write-ups in shared/seeds.
const (
	Correct       Variant = ""
	InMemory      Variant = "in-memory"
	ActThenSave   Variant = "act-then-save"
	UnstableKey   Variant = "unstable-key"
	NoFsync       Variant = "no-fsync"
	NoDirsync     Variant = "no-dirsync"
	NoChecksum    Variant = "no-checksum"
	MetaDrift     Variant = "meta-drift"
	SwallowENOSPC Variant = "swallow-enospc"
	// The variants of the fleet and the outside world.
	NoFencing         Variant = "no-fencing"
	NoHeartbeat       Variant = "no-heartbeat"
	RetryWithoutKey   Variant = "retry-without-key"
	AmbiguousAsFailed Variant = "ambiguous-as-failed"
	IdleTools         Variant = "idle-tools"
)

// VariantInfo describes a variant: its bug, where the bug comes from, and how chaoskit
// catches it.
type VariantInfo struct {
	Variant Variant
	Bug     string
	Source  string // the write-up the bug is taken from
	// CaughtBy lists the properties that catch the bug; a case that breaks any of them counts.
	CaughtBy []string
	// Exposes lists the fault kinds under which the bug shows.
	Exposes []faults.Kind
}

var variantTable = []VariantInfo{
	{Correct, "none: intent before act, stable idempotency keys, checksummed log, fsync of files and directories", "", nil, nil},
	{InMemory, "keeps its run state in memory, so a restart starts the run over", "dojo: in-prompt state survives 0/30 kills",
		[]string{"bounded-work-lost"}, []faults.Kind{faults.Kill, faults.Power}},
	{ActThenSave, "checkpoints after acting and records no intent, so a crash in between repeats the act", "dojo: the 2am duplicate comment; Burr: the dying step replays",
		[]string{"no-duplicate-effects"}, []faults.Kind{faults.Kill, faults.Power}},
	{UnstableKey, "makes a new idempotency key when it retries a pending step", "durable-execution guide: keys that change on resume duplicate every side effect",
		[]string{"no-duplicate-effects"}, []faults.Kind{faults.Kill, faults.Power}},
	{NoFsync, "never fsyncs its files, so a power loss takes the log with it", "brat: power loss is routine",
		[]string{"bounded-work-lost", "same-state", "same-result"}, []faults.Kind{faults.Power, faults.Torn}},
	{NoDirsync, "never fsyncs its directories, so a power loss undoes the creation of its log and its renames", "brat and ALICE: a rename without a directory fsync",
		[]string{"bounded-work-lost", "same-state", "same-result"}, []faults.Kind{faults.Power, faults.Torn}},
	{NoChecksum, "trusts log records without checksums, so a flipped bit becomes state", "durable-execution guide: 6% of resumes needed a human for corrupted checkpoints",
		[]string{"same-state", "same-result", "no-duplicate-effects", "no-phantom-effects"}, []faults.Kind{faults.Corrupt}},
	{MetaDrift, "appends message metadata instead of rebuilding it, so after a compaction a resume misattributes it", "ShanClaw: MessageMeta drift surfaces only on crash recovery",
		[]string{"same-state"}, []faults.Kind{faults.Kill, faults.Power}},
	{SwallowENOSPC, "ignores a full disk, so it finishes a run whose log never reached the disk", "brat: disk full, write failed midway",
		[]string{"same-state", "same-result", "completes"}, []faults.Kind{faults.DiskFull}},
	{NoFencing, "acts without its lease's fencing token, so a zombie that wakes after its keys expired repeats an effect", "brat's leases; Kleppmann's fencing tokens",
		[]string{"no-duplicate-effects"}, []faults.Kind{faults.Lease}},
	{NoHeartbeat, "never renews its lease, so a slow turn loses it to another worker while it carries on", "brat: lock.renewed before the TTL expires",
		[]string{"bounded-work-lost", "completes"}, []faults.Kind{faults.Lease, faults.ModelRateLimit}},
	{RetryWithoutKey, "retries a pending step without its idempotency key", "durable-execution guide: blind retry on resume",
		[]string{"no-duplicate-effects"}, []faults.Kind{faults.Kill, faults.ToolAmbiguous}},
	{AmbiguousAsFailed, "takes a lost reply or a timeout for a step that did not happen and plans it again", "durable-execution guide: 200, but the connection dropped",
		[]string{"no-duplicate-effects"}, []faults.Kind{faults.ToolAmbiguous, faults.ToolTimeout}},
	{IdleTools, "its watchdog counts tool execution as idle, so it cuts a slow tool call short and plans the step again", "ShanClaw: only waiting on the model counts as idle",
		[]string{"no-duplicate-effects"}, []faults.Kind{faults.ToolTimeout}},
}

// Variants lists the reference agent and its variants, the correct agent first.
func Variants() []VariantInfo { return append([]VariantInfo(nil), variantTable...) }

// Info describes v; ok is false if v is not a variant.
func (v Variant) Info() (info VariantInfo, ok bool) {
	for _, i := range variantTable {
		if i.Variant == v {
			return i, true
		}
	}
	return VariantInfo{}, false
}

// persists reports whether the variant writes to the disk at all.
func (v Variant) persists() bool { return v != InMemory }
