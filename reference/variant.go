package reference

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/spf13/afero"
)

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
	TrustsCache   Variant = "trusts-page-cache"
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
	// Depth is the campaign depth (campaign.Options.Depth) at which the bug shows: 2 for a bug
	// that takes a fault during the recovery from another; 0 means 1.
	Depth int
	// inject puts the bug in: it changes one of the agent's seams.
	inject func(*seams)
}

var variantTable = []VariantInfo{
	{
		Variant: Correct,
		Bug:     "none: intent before act, stable idempotency keys, checksummed log, fsync of files and directories, waits out a full disk",
	},
	{
		Variant:  InMemory,
		Bug:      "keeps its run state in memory, so a restart starts the run over",
		inject:   func(s *seams) { s.wrapEnv = func(e env) env { return withFS{e, afero.NewMemMapFs()} } },
		Source:   "dojo: in-prompt state survives 0/30 kills",
		CaughtBy: []string{"bounded-work-lost"}, Exposes: []faults.Kind{faults.Kill, faults.Power},
	},
	{
		Variant:  ActThenSave,
		Bug:      "checkpoints after acting and records no intent, so a crash in between repeats the act",
		inject:   func(s *seams) { s.intentFor = func(harness.Contract) bool { return false } },
		Source:   "dojo: the 2am duplicate comment; Burr: the dying step replays",
		CaughtBy: []string{"no-duplicate-effects"}, Exposes: []faults.Kind{faults.Kill, faults.Power},
	},
	{
		Variant:  UnstableKey,
		Bug:      "makes a new idempotency key when it retries a pending step",
		inject:   func(s *seams) { s.key = unstableKey },
		Source:   "durable-execution guide: keys that change on resume duplicate every side effect",
		CaughtBy: []string{"no-duplicate-effects"}, Exposes: []faults.Kind{faults.Kill, faults.Power},
	},
	{
		Variant:  NoFsync,
		Bug:      "never fsyncs its files, so a power loss takes the log with it",
		inject:   func(s *seams) { s.wrapEnv = onFiles(skipSync(false)) },
		Source:   "brat: power loss is routine",
		CaughtBy: []string{"bounded-work-lost", "same-state", "same-result"}, Exposes: []faults.Kind{faults.Power, faults.Torn},
	},
	{
		Variant:  NoDirsync,
		Bug:      "never fsyncs its directories, so a power loss undoes the creation of its log and its renames",
		inject:   func(s *seams) { s.wrapEnv = onFiles(skipSync(true)) },
		Source:   "brat and ALICE: a rename without a directory fsync",
		CaughtBy: []string{"bounded-work-lost", "same-state", "same-result"}, Exposes: []faults.Kind{faults.Power, faults.Torn},
	},
	{
		Variant:  NoChecksum,
		Bug:      "trusts log records without checksums, so a flipped bit becomes state",
		inject:   func(s *seams) { s.store = logStore{checksums: false} },
		Source:   "durable-execution guide: 6% of resumes needed a human for corrupted checkpoints",
		CaughtBy: []string{"same-state", "same-result", "no-duplicate-effects", "no-phantom-effects"}, Exposes: []faults.Kind{faults.Corrupt},
	},
	{
		Variant:  MetaDrift,
		Bug:      "appends message metadata instead of rebuilding it, so after a compaction a resume misattributes it",
		inject:   func(s *seams) { s.store = metaDrift{s.store} },
		Source:   "ShanClaw: MessageMeta drift surfaces only on crash recovery",
		CaughtBy: []string{"same-state"}, Exposes: []faults.Kind{faults.Kill, faults.Power},
	},
	{
		Variant: SwallowENOSPC,
		Bug:     "ignores a full disk, so it goes on from log records that never reached the disk",
		inject:  func(s *seams) { s.wrapEnv = onFiles(func(f afero.File) afero.File { return swallowENOSPC{f} }) },
		Source:  "brat: disk full, write failed midway",
		// A full disk takes a write that needs a new block (a new file's first record); appends
		// into the rest of a block still land. So the bug shows when the log's first record is
		// lost: the run is redone from nothing, or ends without its state.
		CaughtBy: []string{"bounded-work-lost", "same-state", "same-result", "completes"}, Exposes: []faults.Kind{faults.DiskFull},
	},
	{
		Variant:  TrustsCache,
		Bug:      "recovers from a log a killed process left in the page cache without fsyncing it first, so a power cut during recovery can keep the records it appends and lose those it built on",
		inject:   func(s *seams) { s.settle = func(afero.File) error { return nil } },
		Source:   "brat: power loss is routine; PostgreSQL fsyncs its data directory when crash recovery starts",
		CaughtBy: []string{"completes", "bounded-work-lost", "same-state"}, Exposes: []faults.Kind{faults.Kill, faults.Power}, Depth: 2,
	},
	{
		Variant:  NoFencing,
		Bug:      "acts without its lease's fencing token, so a zombie that wakes after its keys expired repeats an effect",
		inject:   func(s *seams) { s.wrapEnv = func(e env) env { return noFencing{e} } },
		Source:   "brat's leases; Kleppmann's fencing tokens",
		CaughtBy: []string{"no-duplicate-effects"}, Exposes: []faults.Kind{faults.Lease},
	},
	{
		Variant:  NoHeartbeat,
		Bug:      "never renews its lease, so a slow turn loses it to another worker while it carries on",
		inject:   func(s *seams) { s.wrapEnv = func(e env) env { return noHeartbeat{e} } },
		Source:   "brat: lock.renewed before the TTL expires",
		CaughtBy: []string{"bounded-work-lost", "completes"}, Exposes: []faults.Kind{faults.Lease, faults.ModelRateLimit},
	},
	{
		Variant:  RetryWithoutKey,
		Bug:      "retries a pending step without its idempotency key",
		inject:   func(s *seams) { s.key = keylessRetry },
		Source:   "durable-execution guide: blind retry on resume",
		CaughtBy: []string{"no-duplicate-effects"}, Exposes: []faults.Kind{faults.Kill, faults.ToolAmbiguous},
	},
	{
		Variant:  AmbiguousAsFailed,
		Bug:      "takes a lost reply or a timeout for a step that did not happen and plans it again",
		inject:   func(s *seams) { s.wrapEnv = func(e env) env { return ambiguousAsFailed{e} } },
		Source:   "durable-execution guide: 200, but the connection dropped",
		CaughtBy: []string{"no-duplicate-effects"}, Exposes: []faults.Kind{faults.ToolAmbiguous, faults.ToolTimeout},
	},
	{
		Variant:  IdleTools,
		Bug:      "its watchdog counts tool execution as idle, so it cuts a slow tool call short and plans the step again",
		inject:   func(s *seams) { s.idle |= phaseExecutingTools },
		Source:   "ShanClaw: only waiting on the model counts as idle",
		CaughtBy: []string{"no-duplicate-effects"}, Exposes: []faults.Kind{faults.ToolTimeout},
	},
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

// The wrappers and policies the table's variants inject, in the table's order.

// withFS is an Env whose filesystem is fs. in-memory's is a MemMapFs of the process's own, which
// dies with it.
type withFS struct {
	env
	fs afero.Fs
}

func (e withFS) FS() afero.Fs { return e.fs }

// unstableKey draws a number into every key, and makes a pending intent's key anew rather than
// take the one it was recorded with.
func unstableKey(p *proc, i int, pending *Entry) string {
	k := stepKey(p.st.RunID, i, 0)
	if pending == nil {
		k = stableKey(p, i, nil)
	}
	return k + fmt.Sprintf(":%04x", p.env.Rand().Uint32()&0xffff)
}

// onFiles returns an Env wrapper that wraps each file the agent opens: no-fsync, no-dirsync and
// swallow-enospc change what a file's Sync or Write does.
func onFiles(wrap func(afero.File) afero.File) func(env) env {
	return func(e env) env { return withFS{e, fileFS{e.FS(), wrap}} }
}

// fileFS is a filesystem whose files are wrapped as they are opened.
type fileFS struct {
	afero.Fs
	wrap func(afero.File) afero.File
}

func (f fileFS) Create(name string) (afero.File, error) { return f.file(f.Fs.Create(name)) }
func (f fileFS) Open(name string) (afero.File, error)   { return f.file(f.Fs.Open(name)) }
func (f fileFS) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	return f.file(f.Fs.OpenFile(name, flag, perm))
}

func (f fileFS) file(file afero.File, err error) (afero.File, error) {
	if err != nil {
		return nil, err
	}
	return f.wrap(file), nil
}

// skipSync returns a file wrapper under which an fsync of a directory (dirs) or of a file
// (!dirs) does nothing.
func skipSync(dirs bool) func(afero.File) afero.File {
	return func(f afero.File) afero.File {
		if fi, err := f.Stat(); err == nil && fi.IsDir() == dirs {
			return unsynced{f}
		}
		return f
	}
}

// unsynced is a file whose fsync does nothing.
type unsynced struct{ afero.File }

func (unsynced) Sync() error { return nil }

// metaDrift is a store that also keeps the messages' metadata in a file of its own: appended to
// as messages come (so a compaction, which shrinks the transcript, leaves the file behind it),
// rewritten only by the run's final save, and read back instead of the metadata in the log.
type metaDrift struct{ store }

func (m metaDrift) append(p *proc, r record) error {
	if err := m.store.append(p, r); err != nil {
		return err
	}
	_, meta, ok := r.message()
	if !ok {
		return nil
	}
	f, err := p.fs.OpenFile(metaPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	return p.write(f, encodeMeta(meta))
}

func (m metaDrift) snapshot(p *proc, final bool) error {
	if err := m.store.snapshot(p, final); err != nil || !final {
		return err
	}
	return p.replace(metaPath, encodeMeta(p.st.Meta...))
}

func (m metaDrift) load(fsys afero.Fs) (loaded, error) {
	l, err := m.store.load(fsys)
	if err == nil {
		l.st.Meta = readMeta(fsys)
	}
	return l, err
}

// encodeMeta encodes metadata as lines of JSON.
func encodeMeta(ms ...Meta) []byte {
	var b []byte
	for _, m := range ms {
		line, _ := json.Marshal(m)
		b = append(append(b, line...), '\n')
	}
	return b
}

// readMeta reads the metadata file, skipping lines that do not decode.
func readMeta(fsys afero.Fs) []Meta {
	b, _ := afero.ReadFile(fsys, metaPath)
	var out []Meta
	for _, line := range bytes.Split(b, []byte("\n")) {
		var m Meta
		if len(line) > 0 && json.Unmarshal(line, &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// swallowENOSPC is a file on which a write that fails for a full disk succeeds.
type swallowENOSPC struct{ afero.File }

func (f swallowENOSPC) Write(b []byte) (int, error) {
	n, err := f.File.Write(b)
	if errors.Is(err, syscall.ENOSPC) {
		return len(b), nil
	}
	return n, err
}

// noFencing is an Env whose tool calls carry no fencing token.
type noFencing struct{ env }

func (e noFencing) Call(ctx context.Context, c harness.Call) (harness.Reply, error) {
	c.Fence = 0
	return e.env.Call(ctx, c)
}

// noHeartbeat is an Env on which renewing a lease does nothing.
type noHeartbeat struct{ env }

func (noHeartbeat) Renew(_ context.Context, l harness.Lease, _ time.Duration) (harness.Lease, error) {
	return l, nil
}

// keylessRetry makes a pending intent's call again without a key.
func keylessRetry(p *proc, i int, pending *Entry) string {
	if pending != nil {
		return ""
	}
	return stableKey(p, i, nil)
}

// ambiguousAsFailed is an Env whose tool calls report a lost reply or a timeout as a call that
// did not happen.
type ambiguousAsFailed struct{ env }

func (e ambiguousAsFailed) Call(ctx context.Context, c harness.Call) (harness.Reply, error) {
	reply, err := e.env.Call(ctx, c)
	if errors.Is(err, harness.ErrToolAmbiguous) || errors.Is(err, context.DeadlineExceeded) {
		return reply, errNotDone
	}
	return reply, err
}
