package reference_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/harness"
	"github.com/spf13/afero"
)

// brat is a harness shaped like brat's (shared/seeds/001): orchestration as bookkeeping. Every
// state change is an event in an append-only log, wal/, one immutable file per event written as
// git writes objects (a temporary file, an fsync, a rename into place, an fsync of the
// directory), so an event is either whole on the disk or not there: "if an event made it into
// the WAL, it's real and will be replayed; if it didn't, it's as if it never happened". Each
// event carries a CRC-32C. A materialized view, view.json, caches the fold of the log with the
// number of events it covers; it is purely derivable and is not made durable. Every run
// starts by reconciling the view against the log: a missing, damaged, old-schema or stale view
// is rebuilt or caught up from the log; a damaged event stops the run loudly.
//
// Each task gets one session (a polecat), whose events go in the write-up's order:
// session.requested before the binary is started (a spawn tool keyed by the session, so a
// reissue starts nothing twice), session.started once it has a PID, then a lease on the session
// (lock.acquired, with its TTL) renewed with each session.heartbeat (lock.renewed), and
// session.completed with the exit code (then lock.released). The polecat runs inside the
// harness's process, as a child dies with its process group: a crash kills both.
//
// On restart, as the write-up lists: a session requested but not started is reissued; a session
// started but not completed belongs to a process that is gone, so the Deacon (the sweeper)
// waits for its lease to expire (at once if its heartbeats are already stale), writes
// lock.expired and reaps the session, and its task fails. Failed tasks are not retried: "we
// surface the failure [...] and let you (or the Mayor) decide whether to re-queue".
type brat struct {
	tasks      []string
	heartbeats int
}

const (
	bratTTL       = 30 * time.Second // a session's lease
	bratHeartbeat = 10 * time.Second // a polecat's heartbeat period
	bratSchema    = 2                // the view's schema version
	bratWAL       = "wal"
	bratViewFile  = "view.json"
)

func newBrat() brat { return brat{tasks: []string{"t1", "t2"}, heartbeats: 2} }

func (brat) Tools() []harness.Tool {
	return []harness.Tool{{Name: "spawn_polecat", Contract: harness.IdempotentByKey, Latency: time.Second}}
}

var errBratCorrupt = errors.New("brat: an event of the log is damaged")

// bratEvent is one event of the log.
type bratEvent struct {
	Seq     int           `json:"seq"`
	Type    string        `json:"t"`
	Task    string        `json:"task,omitempty"`
	Session string        `json:"session,omitempty"`
	PID     string        `json:"pid,omitempty"`
	Cursor  int           `json:"cursor,omitempty"`
	Exit    int           `json:"exit,omitempty"`
	Token   uint64        `json:"token,omitempty"`   // the lease's fencing token
	Expires int64         `json:"expires,omitempty"` // the lease's expiry, virtual Unix nanoseconds
	Waited  time.Duration `json:"waited,omitempty"`  // lock.expired: how long the Deacon waited for it
	At      int64         `json:"at"`
}

// bratView is the materialized view: the fold of the log's first Head events.
type bratView struct {
	Schema   int                     `json:"schema"`
	Head     int                     `json:"head"`
	Tasks    map[string]string       `json:"tasks"` // queued, running, done, failed
	Sessions map[string]*bratSession `json:"sessions"`
}

type bratSession struct {
	Task    string        `json:"task"`
	Events  []string      `json:"events"` // the session's events and its lock's, in order
	PID     string        `json:"pid,omitempty"`
	Cursor  int           `json:"cursor"`
	Exit    int           `json:"exit"`
	Token   uint64        `json:"token"`
	Expires int64         `json:"expires"`
	Waited  time.Duration `json:"waited"`
}

func newBratView() *bratView {
	return &bratView{Schema: bratSchema, Tasks: map[string]string{}, Sessions: map[string]*bratSession{}}
}

func (v *bratView) apply(e bratEvent) {
	v.Head++
	if e.Type == "task.created" {
		v.Tasks[e.Task] = "queued"
		return
	}
	s := v.Sessions[e.Session]
	if s == nil {
		s = &bratSession{Task: e.Task}
		v.Sessions[e.Session] = s
	}
	s.Events = append(s.Events, e.Type)
	switch e.Type {
	case "session.requested":
		v.Tasks[s.Task] = "running"
	case "session.started":
		s.PID = e.PID
		s.Expires = time.Unix(0, e.At).Add(bratTTL).UnixNano() // as if its lease were taken then
	case "lock.acquired", "lock.renewed":
		s.Token, s.Expires = e.Token, e.Expires
	case "session.heartbeat":
		s.Cursor = e.Cursor
	case "session.completed":
		s.Exit = e.Exit
		v.Tasks[s.Task] = "done"
	case "lock.expired":
		s.Waited = e.Waited
	case "session.reaped":
		v.Tasks[s.Task] = "failed"
	}
}

// started reports whether the session is started and not yet over (completed or reaped).
func (s *bratSession) started() bool {
	return slices.Contains(s.Events, "session.started") && !slices.Contains(s.Events, "session.completed") && !slices.Contains(s.Events, "session.reaped")
}

func bratEventName(seq int) string { return fmt.Sprintf("%s/%06d.ev", bratWAL, seq) }

// readLog reads every event of the log, checking each: a gap or a damaged event is corruption.
func readLog(fsys afero.Fs) ([]bratEvent, error) {
	infos, err := afero.ReadDir(fsys, bratWAL)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var events []bratEvent
	for _, fi := range infos {
		if !strings.HasSuffix(fi.Name(), ".ev") {
			continue // a temporary file an event never got out of
		}
		b, err := afero.ReadFile(fsys, bratWAL+"/"+fi.Name())
		if err != nil {
			return nil, err
		}
		crc, body, ok := strings.Cut(string(b), "\n")
		var e bratEvent
		if !ok || crc != fmt.Sprintf("%08x", crc32.Checksum([]byte(body), castagnoli)) || json.Unmarshal([]byte(body), &e) != nil {
			return nil, fmt.Errorf("%s: %w", fi.Name(), errBratCorrupt)
		}
		if e.Seq != len(events) || fi.Name() != bratEventName(e.Seq)[len(bratWAL)+1:] {
			return nil, fmt.Errorf("%s: event %d out of place: %w", fi.Name(), e.Seq, errBratCorrupt)
		}
		events = append(events, e)
	}
	return events, nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// readView reads the view and says whether it can be used as it is: "current" (covering the
// whole log), "stale" (covering a prefix of it: catch it up), or why it must be rebuilt:
// "missing", "damaged", "old schema", "ahead of the log".
func readView(fsys afero.Fs, events int) (*bratView, string) {
	b, err := afero.ReadFile(fsys, bratViewFile)
	if err != nil {
		return nil, "missing"
	}
	crc, body, ok := strings.Cut(string(b), "\n")
	v := newBratView()
	if !ok || crc != fmt.Sprintf("%08x", crc32.Checksum([]byte(body), castagnoli)) || json.Unmarshal([]byte(body), v) != nil {
		return nil, "damaged"
	}
	switch {
	case v.Schema != bratSchema:
		return nil, "old schema"
	case v.Head > events:
		return nil, "ahead of the log"
	case v.Head < events:
		return v, "stale"
	}
	return v, "current"
}

func encodeView(v *bratView) []byte {
	body, _ := json.Marshal(v)
	return []byte(fmt.Sprintf("%08x\n%s", crc32.Checksum(body, castagnoli), body))
}

// bratProc is one process of the harness.
type bratProc struct {
	b    brat
	env  *harness.Env
	fs   afero.Fs
	v    *bratView
	view string // what the reconcile found the view to be
}

func (b brat) Run(ctx context.Context, env *harness.Env) (any, error) {
	p := &bratProc{b: b, env: env, fs: env.FS()}
	if err := p.reconcile(); err != nil {
		return nil, err
	}
	for _, t := range b.tasks { // each on its own: a crash may fall between two
		if _, ok := p.v.Tasks[t]; !ok {
			if err := p.append(ctx, bratEvent{Type: "task.created", Task: t}, "created "+t); err != nil {
				return nil, err
			}
		}
	}
	// The Deacon: a session started by a process that is gone is dead once its lease expires;
	// one that completed still gives its lease up.
	for _, id := range slices.Sorted(maps.Keys(p.v.Sessions)) {
		switch s := p.v.Sessions[id]; {
		case s.started():
			if err := p.reap(ctx, id); err != nil {
				return nil, err
			}
		case slices.Contains(s.Events, "session.completed") && !slices.Contains(s.Events, "lock.released"):
			if err := p.release(ctx, id, harness.Lease{Name: "lock-" + id, Token: s.Token}); err != nil {
				return nil, err
			}
		}
	}
	// The Witness: a session per task that has not run; failed tasks are not retried.
	for _, t := range b.tasks {
		if st := p.v.Tasks[t]; st == "queued" || st == "running" {
			if err := p.session(ctx, t); err != nil {
				return nil, err
			}
		}
	}
	if p.view != "current" {
		if err := p.saveView(); err != nil {
			return nil, err
		}
	}
	return maps.Clone(p.v.Tasks), nil
}

// reconcile reads the log, and the view: a usable view is caught up with the events after its
// head, any other is rebuilt from the whole log.
func (p *bratProc) reconcile() error {
	if err := p.fs.MkdirAll(bratWAL, 0o755); err != nil {
		return err
	}
	if err := syncDir(p.fs, "."); err != nil {
		return err
	}
	events, err := readLog(p.fs)
	if err != nil {
		return err
	}
	v, why := readView(p.fs, len(events))
	if v == nil {
		v = newBratView()
	}
	for _, e := range events[v.Head:] {
		v.apply(e)
	}
	p.v, p.view = v, why
	return nil
}

// append makes an event durable, folds it into the view in memory, and marks the progress.
func (p *bratProc) append(ctx context.Context, e bratEvent, mark string) error {
	e.Seq, e.At = p.v.Head, p.env.Now().UnixNano()
	body, _ := json.Marshal(e)
	tmp := bratWAL + "/event.tmp"
	if err := writeSynced(p.fs, tmp, []byte(fmt.Sprintf("%08x\n%s", crc32.Checksum(body, castagnoli), body)), true); err != nil {
		return err
	}
	if err := p.fs.Rename(tmp, bratEventName(e.Seq)); err != nil {
		return err
	}
	if err := syncDir(p.fs, bratWAL); err != nil {
		return err
	}
	p.v.apply(e)
	p.view = "stale"
	if mark != "" {
		p.env.Mark(mark)
	}
	return nil
}

// saveView writes the view, through a temporary file and a rename, without an fsync: it is a
// cache, rebuilt from the log whenever it is missing or damaged.
func (p *bratProc) saveView() error {
	if err := writeSynced(p.fs, "view.tmp", encodeView(p.v), false); err != nil {
		return err
	}
	p.view = "current"
	return p.fs.Rename("view.tmp", bratViewFile)
}

// session runs task t's session from where the log has it: requested (or reissued), started,
// leased, heartbeats, completed.
func (p *bratProc) session(ctx context.Context, t string) error {
	id := "s-" + t
	if p.v.Sessions[id] == nil {
		if err := p.append(ctx, bratEvent{Type: "session.requested", Task: t, Session: id}, id+" requested"); err != nil {
			return err
		}
	}
	// Started once per session, whatever the reissues: the spawn is keyed by the session.
	reply, err := p.env.Call(ctx, harness.Call{Tool: "spawn_polecat", Key: id, Args: map[string]string{"task": t}})
	if err != nil {
		return err
	}
	if err := p.append(ctx, bratEvent{Type: "session.started", Session: id, PID: reply.ID}, ""); err != nil {
		return err
	}
	l, err := p.env.Acquire(ctx, "lock-"+id, bratTTL)
	if err != nil {
		return err
	}
	if err := p.append(ctx, bratEvent{Type: "lock.acquired", Session: id, Token: l.Token, Expires: l.Expires.UnixNano()}, id+" started"); err != nil {
		return err
	}
	for c := 1; c <= p.b.heartbeats; c++ {
		if err := p.env.Sleep(ctx, bratHeartbeat); err != nil {
			return err
		}
		if l, err = p.env.Renew(ctx, l, bratTTL); err != nil {
			return err
		}
		if err := p.append(ctx, bratEvent{Type: "lock.renewed", Session: id, Token: l.Token, Expires: l.Expires.UnixNano()}, ""); err != nil {
			return err
		}
		if err := p.append(ctx, bratEvent{Type: "session.heartbeat", Session: id, Cursor: c}, fmt.Sprintf("%s heartbeat %d", id, c)); err != nil {
			return err
		}
	}
	if err := p.append(ctx, bratEvent{Type: "session.completed", Session: id}, ""); err != nil {
		return err
	}
	if err := p.release(ctx, id, l); err != nil {
		return err
	}
	return p.saveView()
}

// release gives a completed session's lease up.
func (p *bratProc) release(ctx context.Context, id string, l harness.Lease) error {
	if err := p.env.Release(ctx, l); err != nil {
		return err
	}
	return p.append(ctx, bratEvent{Type: "lock.released", Session: id}, id+" completed")
}

// reap is the Deacon's sweep of a dead session: wait for its lease to expire (a session that
// died before it took its lease counts as holding one from when it started), then expire it
// and reap the session.
func (p *bratProc) reap(ctx context.Context, id string) error {
	expires := time.Unix(0, p.v.Sessions[id].Expires)
	var waited time.Duration
	if now := p.env.Now(); now.Before(expires) {
		waited = expires.Sub(now)
		if err := p.env.Sleep(ctx, waited); err != nil {
			return err
		}
	}
	if err := p.append(ctx, bratEvent{Type: "lock.expired", Session: id, Waited: waited}, ""); err != nil {
		return err
	}
	return p.append(ctx, bratEvent{Type: "session.reaped", Session: id}, id+" reaped")
}

// bratState is the durable state: the log's fold (times left out: they move with restarts),
// and what the view on the disk is to it.
type bratState struct {
	Tasks    map[string]string
	Sessions map[string]bratSession
	View     string
}

func (brat) State(fsys afero.Fs) (any, error) {
	events, err := readLog(fsys)
	if err != nil {
		return nil, err
	}
	v := newBratView()
	for _, e := range events {
		v.apply(e)
	}
	st := bratState{Tasks: v.Tasks, Sessions: map[string]bratSession{}}
	for id, s := range v.Sessions {
		s := *s
		s.Token, s.Expires = 0, 0
		st.Sessions[id] = s
	}
	disk, why := readView(fsys, len(events))
	st.View = why
	if disk != nil && why == "current" && string(encodeView(disk)) != string(encodeView(v)) {
		st.View = "differs from the log"
	}
	return st, nil
}

// writeSynced writes b to a new file name, fsyncing it if sync.
func writeSynced(fsys afero.Fs, name string, b []byte, sync bool) error {
	f, err := fsys.OpenFile(name, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if sync {
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

func syncDir(fsys afero.Fs, name string) error {
	d, err := fsys.Open(name)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
