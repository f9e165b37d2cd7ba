package reference

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"syscall"

	"github.com/chaoskit/chaoskit/harness"
	"github.com/spf13/afero"
)

// Agent is the reference checkpointing agent, or one of its variants. It implements
// harness.Target, harness.Stater and harness.Tooler.
type Agent struct {
	Variant Variant
	Task    Task
	args    []json.RawMessage // each step's arguments, encoded once
}

// New returns the agent of variant v (Correct for the reference itself) doing task t. It panics
// on an unknown variant.
func New(v Variant, t Task) *Agent {
	if _, ok := v.Info(); !ok {
		panic(fmt.Sprintf("reference: unknown variant %q", v))
	}
	if len(t.Steps) == 0 {
		panic("reference: a Task needs at least one step")
	}
	a := &Agent{Variant: v, Task: t}
	for _, s := range t.Steps {
		b, err := json.Marshal(s.Args)
		if err != nil {
			panic(fmt.Sprintf("reference: step %s: arguments cannot be encoded: %v", s.Name, err))
		}
		a.args = append(a.args, b)
	}
	return a
}

// Name returns "reference" for the correct agent and "reference/VARIANT" for a variant.
func (a *Agent) Name() string {
	if a.Variant == Correct {
		return "reference"
	}
	return "reference/" + string(a.Variant)
}

// Tools declares the tools the tasks call.
func (a *Agent) Tools() []harness.Tool { return Tools }

// proc is one process of the agent: what it holds in memory until it is crashed.
type proc struct {
	a         *Agent
	env       *harness.Env
	fs        afero.Fs
	st        State
	wal       afero.File
	walLen    int64
	sinceSnap int
}

// Run runs the task, or resumes it from the disk.
func (a *Agent) Run(ctx context.Context, env *harness.Env) (any, error) {
	p := &proc{a: a, env: env, fs: env.FS()}
	if a.Variant.persists() {
		if err := p.recover(); err != nil {
			return nil, err
		}
		defer p.wal.Close()
	}
	if p.st.RunID == "" {
		if err := p.log(record{Type: "start", RunID: "run-" + a.Task.ID, Goal: a.Task.Goal, Plan: a.plan()}); err != nil {
			return nil, err
		}
		env.Mark("started")
	}
	for p.st.Cursor < len(a.Task.Steps) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := p.step(ctx, p.st.Cursor); err != nil {
			return nil, fmt.Errorf("reference: step %d (%s): %w", p.st.Cursor, a.Task.Steps[p.st.Cursor].Name, err)
		}
	}
	if p.st.Phase != "completed" {
		if err := p.finish(); err != nil {
			return nil, fmt.Errorf("reference: finishing: %w", err)
		}
	}
	res := Result{RunID: p.st.RunID}
	for _, c := range p.st.Completed {
		res.Outputs = append(res.Outputs, c.Output)
	}
	return res, nil
}

func (a *Agent) plan() []string {
	names := make([]string, len(a.Task.Steps))
	for i, s := range a.Task.Steps {
		names[i] = s.Name
	}
	return names
}

func contract(tool string) harness.Contract {
	for _, t := range Tools {
		if t.Name == tool {
			return t.Contract
		}
	}
	return 0
}

// step does step i: the model plans it, the intent is recorded, the tool is called, the
// outcome is committed. Each is durable before the next begins, and each resumes from the log.
func (p *proc) step(ctx context.Context, i int) error {
	s, v := p.a.Task.Steps[i], p.a.Variant
	if p.st.Planned < i {
		msg := model(p.a.Task, i)
		if err := p.log(record{Type: "model", Step: i, Msg: &msg}); err != nil {
			return err
		}
		p.env.Mark(fmt.Sprintf("step %d %s planned", i, s.Name))
	}
	call := harness.Call{Tool: s.Tool, Args: p.a.args[i]}
	if contract(s.Tool) != harness.ReadOnly && v != ActThenSave {
		switch e := p.st.entry(i); {
		case e == nil:
			call.Key = p.key(i)
			if err := p.log(record{Type: "intent", Step: i, Tool: s.Tool, Key: call.Key}); err != nil {
				return err
			}
			p.env.Mark(fmt.Sprintf("step %d %s intent", i, s.Name))
		case v == UnstableKey:
			call.Key = p.key(i) // the bug: a new key for the same logical step
		default:
			call.Key = e.Key // reconcile a pending intent: the same key, so the tool deduplicates
		}
	}
	reply, err := p.env.Call(ctx, call)
	if err != nil {
		return err
	}
	compact := p.a.Task.CompactAfter > 0 && i+1 == p.a.Task.CompactAfter
	if err := p.log(record{Type: "commit", Step: i, Output: reply.ID, Compact: compact}); err != nil {
		return err
	}
	p.env.Mark(fmt.Sprintf("step %d %s committed", i, s.Name))
	every := p.a.Task.SnapshotEvery
	if every <= 0 {
		every = 2
	}
	if p.sinceSnap++; p.sinceSnap >= every {
		return p.snapshot()
	}
	return nil
}

// key returns the idempotency key of step i: stable per logical step, except in the
// unstable-key variant, which mixes in a number drawn by the process.
func (p *proc) key(i int) string {
	k := fmt.Sprintf("%s:%d", p.st.RunID, i)
	if p.a.Variant == UnstableKey {
		k += fmt.Sprintf(":%04x", p.env.Rand().Uint32()&0xffff)
	}
	return k
}

func (p *proc) finish() error {
	if err := p.log(record{Type: "done"}); err != nil {
		return err
	}
	p.env.Mark("done")
	if err := p.snapshot(); err != nil {
		return err
	}
	if p.a.Variant == MetaDrift {
		return p.rewriteMeta() // the clean final save rebuilds the metadata file
	}
	return nil
}

// log makes a record durable, then folds it into the state.
func (p *proc) log(r record) error {
	r.At = p.env.Now().Unix()
	if p.a.Variant.persists() {
		b := frame(r, p.a.Variant != NoChecksum)
		if err := p.write(p.wal, b); err != nil {
			return err
		}
		p.walLen += int64(len(b))
	}
	added, err := p.st.apply(r)
	if err != nil {
		return err
	}
	if p.a.Variant == MetaDrift {
		return p.appendMeta(added)
	}
	return nil
}

// write writes b to f and fsyncs it, as the variant does.
func (p *proc) write(f afero.File, b []byte) error {
	if _, err := f.Write(b); err != nil && !p.swallowed(err) {
		return err
	}
	if p.a.Variant == NoFsync {
		return nil
	}
	if err := f.Sync(); err != nil && !p.swallowed(err) {
		return err
	}
	return nil
}

// swallowed reports whether the variant ignores err: swallow-enospc ignores a full disk.
func (p *proc) swallowed(err error) bool {
	return p.a.Variant == SwallowENOSPC && errors.Is(err, syscall.ENOSPC)
}

// syncDir fsyncs a directory, so that the entries created or renamed in it are durable.
func (p *proc) syncDir(name string) error {
	if p.a.Variant == NoDirsync {
		return nil
	}
	d, err := p.fs.Open(name)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// snapshot writes the state and the log offset it covers to a new file, makes it durable, and
// renames it over the old snapshot.
func (p *proc) snapshot() error {
	p.sinceSnap = 0
	if !p.a.Variant.persists() {
		return nil
	}
	return p.replace(snapTmp, snapPath, encodeSnapshot(p.st, p.walLen))
}

// replace atomically replaces the file at path with b, through tmp.
func (p *proc) replace(tmp, path string, b []byte) error {
	f, err := p.fs.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if err := p.write(f, b); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := p.fs.Rename(tmp, path); err != nil {
		return err
	}
	return p.syncDir(dir)
}

func encodeSnapshot(st State, off int64) []byte {
	state, err := json.Marshal(st)
	if err != nil {
		panic(err) // a State holds only encodable values
	}
	b := fmt.Appendf(nil, snapshotHead, off, crc32.Checksum(state, castagnoli))
	return append(append(b, state...), '}')
}

// snapshotHead is how a snapshot starts: a JSON object holding the log offset it covers, the
// CRC-32C of its state, then the state. It is written and read by hand, so that the state is
// parsed once rather than three times (as a json.RawMessage field would be).
const snapshotHead = `{"wal_offset":%d,"crc":%d,"state":`

// decodeSnapshot reads a snapshot; ok is false if it is damaged or (checksum) fails its CRC.
func decodeSnapshot(b []byte, checksum bool) (st State, off int64, ok bool) {
	var crc uint32
	n, err := fmt.Sscanf(string(b[:min(len(b), 64)]), snapshotHead, &off, &crc)
	if err != nil || n != 2 || len(b) == 0 || b[len(b)-1] != '}' {
		return st, 0, false
	}
	head := len(fmt.Appendf(nil, snapshotHead, off, crc))
	if head > len(b)-1 {
		return st, 0, false
	}
	state := b[head : len(b)-1]
	if checksum && crc32.Checksum(state, castagnoli) != crc {
		return st, 0, false
	}
	return st, off, json.Unmarshal(state, &st) == nil
}

// recover rebuilds the state from the disk and opens the log for appending, cutting off a torn
// tail first. A missing or stale snapshot is rebuilt from the log.
func (p *proc) recover() error {
	if _, err := p.fs.Stat(dir); err != nil {
		if err := p.fs.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("reference: %w", err)
		}
		if err := p.syncDir("."); err != nil {
			return fmt.Errorf("reference: %w", err)
		}
	}
	l, err := p.a.load(p.fs)
	if err != nil {
		return err
	}
	p.st, p.walLen = l.st, l.good
	flag := os.O_WRONLY | os.O_APPEND
	if !l.walExists {
		flag |= os.O_CREATE
	}
	if p.wal, err = p.fs.OpenFile(walPath, flag, 0o644); err != nil {
		return fmt.Errorf("reference: %w", err)
	}
	if !l.walExists {
		if err := p.syncDir(dir); err != nil {
			return fmt.Errorf("reference: %w", err)
		}
	}
	if l.good < l.size {
		// A torn or damaged tail: cut it off, or the next record would land after it.
		if err := p.wal.Truncate(l.good); err != nil {
			return fmt.Errorf("reference: %w", err)
		}
		if err := p.wal.Sync(); err != nil {
			return fmt.Errorf("reference: %w", err)
		}
	}
	if !l.snapshotOK && p.st.RunID != "" {
		if err := p.snapshot(); err != nil {
			return fmt.Errorf("reference: rebuilding the snapshot: %w", err)
		}
	}
	return nil
}

// loaded is what the disk holds, as recovery reads it.
type loaded struct {
	st         State
	good, size int64 // where the log's good part ends; its size
	walExists  bool
	snapshotOK bool
}

// load reads the state a restarted process would recover: the snapshot, if it is whole and
// not ahead of the log, then the log records after it.
func (a *Agent) load(fsys afero.Fs) (loaded, error) {
	var l loaded
	b, err := afero.ReadFile(fsys, walPath)
	switch {
	case err == nil:
		l.walExists = true
	case !errors.Is(err, fs.ErrNotExist):
		return l, fmt.Errorf("reference: reading the log: %w", err)
	}
	l.size = int64(len(b))
	from := 0
	if sb, err := afero.ReadFile(fsys, snapPath); err == nil {
		if st, off, ok := decodeSnapshot(sb, a.Variant != NoChecksum); ok && off <= l.size {
			l.st, l.snapshotOK, from = st, true, int(off)
		}
	}
	if !l.snapshotOK {
		l.st = State{}
	}
	recs, good := scan(b, from, a.Variant != NoChecksum)
	l.good = int64(good)
	for _, r := range recs {
		if _, err := l.st.apply(r); err != nil {
			return l, fmt.Errorf("reference: replaying the log: %w", err)
		}
	}
	if a.Variant == MetaDrift {
		l.st.Meta = readMeta(fsys)
	}
	return l, nil
}

// State reads the state a restarted agent would recover from fsys, less the message
// timestamps, which legitimately move with restarts. (Leaving them out, rather than ignoring
// them with a go-cmp option, lets identical states skip go-cmp.)
func (a *Agent) State(fsys afero.Fs) (any, error) {
	if !a.Variant.persists() {
		return State{}, nil
	}
	l, err := a.load(fsys)
	for i := range l.st.Meta {
		l.st.Meta[i].At = 0
	}
	return l.st, err
}

// ---- the meta-drift variant's append-only metadata file ----

// appendMeta appends metadata lines to the metadata file: append-only, so compaction, which
// shrinks the transcript, leaves the file behind it.
func (p *proc) appendMeta(ms []Meta) error {
	if len(ms) == 0 {
		return nil
	}
	var b []byte
	for _, m := range ms {
		line, _ := json.Marshal(m)
		b = append(append(b, line...), '\n')
	}
	f, err := p.fs.OpenFile(metaPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	return p.write(f, b)
}

// rewriteMeta replaces the metadata file with the in-memory metadata.
func (p *proc) rewriteMeta() error {
	var b []byte
	for _, m := range p.st.Meta {
		line, _ := json.Marshal(m)
		b = append(append(b, line...), '\n')
	}
	return p.replace(metaTmp, metaPath, b)
}

func readMeta(fsys afero.Fs) []Meta {
	b, _ := afero.ReadFile(fsys, metaPath)
	var out []Meta
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		var m Meta
		if json.Unmarshal(line, &m) == nil {
			out = append(out, m)
		}
	}
	return out
}
