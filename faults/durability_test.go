package faults_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/spf13/afero"
	"pgregory.net/rapid"
)

// model is the simplest statement of "what survives": objects (files and directories) with a
// live and a durable version, directories as name -> object maps. It knows nothing of inodes,
// shared buffers, logs or handles.
type model struct {
	root *mobj
}

type mobj struct {
	dir        bool
	live, dur  []byte
	kids, dkid map[string]*mobj
	hist       []mop // the writes and truncations since the last fsync
}

// mop is a write of data at off or, if trunc, a truncation to off bytes.
type mop struct {
	off   int64
	data  []byte
	trunc bool
}

func newMdir() *mobj { return &mobj{dir: true, kids: map[string]*mobj{}, dkid: map[string]*mobj{}} }

func (m *model) resolve(p string) (parent *mobj, name string, obj *mobj) {
	parts := strings.Split(p, "/")
	dir := m.root
	for _, part := range parts[:len(parts)-1] {
		next, ok := dir.kids[part]
		if !ok || !next.dir {
			return nil, "", nil
		}
		dir = next
	}
	name = parts[len(parts)-1]
	return dir, name, dir.kids[name]
}

// tree lists path -> content of what the model says a process sees (durable=false) or what a
// power loss leaves (durable=true). Directories end in "/".
func (m *model) tree(durable bool) map[string]string {
	out := map[string]string{}
	var walk func(prefix string, d *mobj)
	walk = func(prefix string, d *mobj) {
		kids := d.kids
		if durable {
			kids = d.dkid
		}
		for name, o := range kids {
			p := prefix + name
			if o.dir {
				out[p+"/"] = ""
				walk(p+"/", o)
			} else if durable {
				out[p] = string(o.dur)
			} else {
				out[p] = string(o.live)
			}
		}
	}
	walk("", m.root)
	return out
}

// tree lists what a process sees on fsys, in the same form as model.tree.
func tree(t *testing.T, fsys afero.Fs) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := afero.Walk(fsys, "", func(p string, fi fs.FileInfo, err error) error {
		if err != nil {
			return err
		}
		p = strings.TrimPrefix(p, "/")
		if p == "" {
			return nil
		}
		if fi.IsDir() {
			out[p+"/"] = ""
			return nil
		}
		b, err := afero.ReadFile(fsys, p)
		out[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var (
	dirs  = []string{"d"}
	files = []string{"a", "b", "d/x"}
)

// TestDurabilityModel drives a Disk through random operations and crashes and checks, after
// every crash, that what survives is what the model says; and that replaying the disk's log
// rebuilds the same state as the disk itself reached.
func TestDurabilityModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		disk := faults.NewDisk(faults.DiskOptions{})
		disk.StartLog()
		m := &model{root: newMdir()}
		rounds := rapid.IntRange(1, 3).Draw(rt, "rounds")
		for r := 0; r < rounds; r++ {
			fsys := faults.New(disk, nil) // a new process after each crash
			steps := rapid.IntRange(1, 40).Draw(rt, "steps")
			for i := 0; i < steps; i++ {
				step(rt, fsys, m)
			}
			if got, want := tree(t, disk), m.tree(false); !equalTrees(got, want) {
				rt.Fatalf("live view differs from the model:\n got  %v\n want %v", got, want)
			}
			replayed := disk.Replay(disk.LogLen(), faults.DiskOptions{})
			kind := rapid.SampledFrom([]faults.Kind{faults.Kill, faults.Power}).Draw(rt, "crash")
			disk.Crash(faults.Fault{Kind: kind}, nil)
			replayed.Crash(faults.Fault{Kind: kind}, nil)
			if kind == faults.Power {
				m.powerLoss()
			}
			want := m.tree(false)
			if got := tree(t, disk); !equalTrees(got, want) {
				rt.Fatalf("after %s the disk holds\n %v\nbut the model says\n %v", kind, got, want)
			}
			if got := tree(t, replayed); !equalTrees(got, want) {
				rt.Fatalf("after %s the replayed disk holds\n %v\nbut the model says\n %v", kind, got, want)
			}
		}
	})
}

// powerLoss keeps what was durable: reachable directories get their durable entries back and
// files their durable bytes.
func (m *model) powerLoss() {
	var walk func(d *mobj)
	walk = func(d *mobj) {
		d.kids = map[string]*mobj{}
		for k, v := range d.dkid {
			d.kids[k] = v
		}
		for _, o := range d.kids {
			if o.dir {
				walk(o)
			} else {
				o.live = append([]byte(nil), o.dur...)
				o.hist = nil
			}
		}
	}
	walk(m.root)
}

func equalTrees(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// step performs one random operation on fsys and on the model, checking that both agree on
// whether it succeeds.
func step(rt *rapid.T, fsys afero.Fs, m *model) {
	op := rapid.SampledFrom([]string{"mkdir", "create", "append", "overwrite", "truncate", "fsync", "fsyncdir", "rename", "remove"}).Draw(rt, "op")
	switch op {
	case "mkdir":
		d := rapid.SampledFrom(dirs).Draw(rt, "dir")
		err := fsys.Mkdir(d, 0o755)
		_, _, obj := m.resolve(d)
		agree(rt, op, err, obj == nil)
		if obj == nil {
			m.root.kids[d] = newMdir()
		}
	case "create":
		p := rapid.SampledFrom(files).Draw(rt, "file")
		f, err := fsys.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		parent, name, obj := m.resolve(p)
		agree(rt, op, err, parent != nil && (obj == nil || !obj.dir))
		if err == nil {
			f.Close()
			if obj == nil {
				parent.kids[name] = &mobj{}
			} else {
				if len(obj.live) > 0 {
					obj.hist = append(obj.hist, mop{trunc: true})
				}
				obj.live = nil
			}
		}
	case "append", "overwrite":
		p := rapid.SampledFrom(files).Draw(rt, "file")
		data := rapid.SliceOfN(rapid.Byte(), 1, 700).Draw(rt, "data")
		flag := os.O_WRONLY
		if op == "append" {
			flag |= os.O_APPEND
		}
		_, _, obj := m.resolve(p)
		f, err := fsys.OpenFile(p, flag, 0)
		agree(rt, op, err, obj != nil)
		if err != nil {
			return
		}
		defer f.Close()
		if op == "append" {
			_, err = f.Write(data)
			obj.hist = append(obj.hist, mop{off: int64(len(obj.live)), data: data})
			obj.live = append(append([]byte(nil), obj.live...), data...)
		} else {
			off := rapid.IntRange(0, len(obj.live)+10).Draw(rt, "off")
			_, err = f.WriteAt(data, int64(off))
			obj.hist = append(obj.hist, mop{off: int64(off), data: data})
			buf := append([]byte(nil), obj.live...)
			for len(buf) < off+len(data) {
				buf = append(buf, 0)
			}
			copy(buf[off:], data)
			obj.live = buf
		}
		agree(rt, op, err, true)
	case "truncate":
		p := rapid.SampledFrom(files).Draw(rt, "file")
		_, _, obj := m.resolve(p)
		f, err := fsys.OpenFile(p, os.O_WRONLY, 0)
		agree(rt, op, err, obj != nil)
		if err != nil {
			return
		}
		defer f.Close()
		size := rapid.IntRange(0, len(obj.live)+20).Draw(rt, "size")
		agree(rt, op, f.Truncate(int64(size)), true)
		obj.hist = append(obj.hist, mop{off: int64(size), trunc: true})
		buf := append([]byte(nil), obj.live...)
		for len(buf) < size {
			buf = append(buf, 0)
		}
		obj.live = buf[:size]
	case "fsync", "fsyncdir":
		var p string
		if op == "fsync" {
			p = rapid.SampledFrom(files).Draw(rt, "file")
		} else {
			p = rapid.SampledFrom(append([]string{""}, dirs...)).Draw(rt, "dir")
		}
		obj := m.root
		if p != "" {
			_, _, obj = m.resolve(p)
		}
		f, err := fsys.Open(p)
		agree(rt, op, err, obj != nil)
		if err != nil {
			return
		}
		defer f.Close()
		agree(rt, op, f.Sync(), true)
		if obj.dir {
			obj.dkid = map[string]*mobj{}
			for k, v := range obj.kids {
				obj.dkid[k] = v
			}
		} else {
			obj.dur = append([]byte(nil), obj.live...)
			obj.hist = nil
		}
	case "rename":
		from := rapid.SampledFrom(files).Draw(rt, "from")
		to := rapid.SampledFrom(files).Draw(rt, "to")
		err := fsys.Rename(from, to)
		fp, fname, fobj := m.resolve(from)
		tp, tname, tobj := m.resolve(to)
		ok := fobj != nil && tp != nil && (tobj == nil || !tobj.dir)
		agree(rt, op, err, ok)
		if ok && from != to {
			delete(fp.kids, fname)
			tp.kids[tname] = fobj
		}
	case "remove":
		p := rapid.SampledFrom(files).Draw(rt, "file")
		err := fsys.Remove(p)
		parent, name, obj := m.resolve(p)
		agree(rt, op, err, obj != nil)
		if obj != nil {
			delete(parent.kids, name)
		}
	}
}

func agree(rt *rapid.T, op string, err error, wantOK bool) {
	if (err == nil) != wantOK {
		rt.Fatalf("%s: got error %v, the model expected success=%v", op, err, wantOK)
	}
}

// A rename without a directory fsync is undone by a power loss: the old name comes back with
// its old, durable content. With the directory fsync it stays.
func TestRenameNeedsDirectoryFsync(t *testing.T) {
	for _, syncDir := range []bool{false, true} {
		t.Run(fmt.Sprintf("dirsync=%v", syncDir), func(t *testing.T) {
			d := faults.NewDisk(faults.DiskOptions{})
			writeSynced(t, d, "state.json", "v1")
			syncPath(t, d, "")
			writeSynced(t, d, "state.tmp", "v2")
			if err := d.Rename("state.tmp", "state.json"); err != nil {
				t.Fatal(err)
			}
			if syncDir {
				syncPath(t, d, "")
			}
			d.Crash(faults.Fault{Kind: faults.Power}, nil)
			got := tree(t, d)
			want := map[string]string{"state.json": "v1"}
			if syncDir {
				want = map[string]string{"state.json": "v2"}
			}
			if !equalTrees(got, want) {
				t.Fatalf("after power loss: %v, want %v", got, want)
			}
		})
	}
}

func writeSynced(t *testing.T, fsys afero.Fs, name, body string) {
	t.Helper()
	f, err := fsys.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(body); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func syncPath(t *testing.T, fsys afero.Fs, name string) {
	t.Helper()
	f, err := fsys.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}

// appendLog sets up a durable log of size bytes and appends rec to it without an fsync.
func appendLog(t *testing.T, size, rec int) *faults.Disk {
	t.Helper()
	d := faults.NewDisk(faults.DiskOptions{})
	writeSynced(t, d, "wal", strings.Repeat("a", size))
	syncPath(t, d, "")
	f, err := d.OpenFile("wal", os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(bytes.Repeat([]byte("b"), rec)); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestTornWrite(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	t.Run("prefix lands up to the last sector boundary", func(t *testing.T) {
		d := appendLog(t, 400, 300) // bytes 400..700 cross the boundary at 512
		if !d.Tearable("prefix") {
			t.Fatal("Tearable(prefix) = false for a write across a sector boundary")
		}
		msg := d.Crash(faults.Fault{Kind: faults.Torn}, rng)
		got := tree(t, d)["wal"]
		if want := strings.Repeat("a", 400) + strings.Repeat("b", 112); got != want {
			t.Fatalf("torn wal is %d bytes (%q...), want 512: %s", len(got), got[len(got)-8:], msg)
		}
	})
	t.Run("garbage keeps the length and spoils the tail", func(t *testing.T) {
		d := appendLog(t, 400, 300)
		d.Crash(faults.Fault{Kind: faults.Torn, Mode: "garbage"}, rng)
		got := tree(t, d)["wal"]
		if len(got) != 700 || got[:512] != strings.Repeat("a", 400)+strings.Repeat("b", 112) {
			t.Fatalf("garbage-torn wal: len %d, prefix intact=%v", len(got), got[:512] == strings.Repeat("a", 400)+strings.Repeat("b", 112))
		}
		if got[512:] == strings.Repeat("b", 188) {
			t.Fatal("garbage tail equals the written bytes")
		}
	})
	t.Run("a write inside one sector is atomic", func(t *testing.T) {
		d := appendLog(t, 10, 100)
		if d.Tearable("prefix") {
			t.Fatal("Tearable(prefix) = true for a write inside one sector")
		}
		d.Crash(faults.Fault{Kind: faults.Torn}, rng)
		if got := tree(t, d)["wal"]; got != strings.Repeat("a", 10) {
			t.Fatalf("wal = %q, want the durable 10 bytes", got)
		}
	})
}

func TestCorruptFlipsOneDurableBit(t *testing.T) {
	d := faults.NewDisk(faults.DiskOptions{})
	body := strings.Repeat("x", 64)
	writeSynced(t, d, "snap", body)
	syncPath(t, d, "")
	msg := d.Crash(faults.Fault{Kind: faults.Corrupt}, rand.New(rand.NewPCG(7, 7)))
	got := tree(t, d)["snap"]
	diff := 0
	for i := range body {
		x := got[i] ^ body[i]
		for ; x != 0; x &= x - 1 {
			diff++
		}
	}
	if diff != 1 {
		t.Fatalf("corrupt changed %d bits, want 1 (%s)", diff, msg)
	}
	// The flip is durable: a power loss afterwards keeps it.
	d.Crash(faults.Fault{Kind: faults.Power}, nil)
	if tree(t, d)["snap"] != got {
		t.Fatal("the flipped bit did not survive a power loss")
	}
}

// injectAt is an Injector that returns one fault for the n-th operation.
type injectAt struct {
	n     int
	fault *faults.Fault
	seen  []faults.Op
}

func (i *injectAt) Inject(op faults.Op) *faults.Fault {
	i.seen = append(i.seen, op)
	if len(i.seen)-1 == i.n {
		return i.fault
	}
	return nil
}

func TestDiskFullWritesPartiallyThenFails(t *testing.T) {
	d := faults.NewDisk(faults.DiskOptions{})
	inj := &injectAt{n: 1, fault: &faults.Fault{Kind: faults.DiskFull, Bytes: faults.Block + 5}}
	fsys := faults.New(d, inj)
	f, err := fsys.Create("log") // op 0
	if err != nil {
		t.Fatal(err)
	}
	// op 1: the disk fills with a block and 5 bytes free: a whole block fits, the bytes do not.
	n, err := f.Write([]byte("01234" + strings.Repeat(".", 2*faults.Block)))
	if n != faults.Block || !errors.Is(err, syscall_ENOSPC) || !errors.Is(err, faults.ErrInjected) {
		t.Fatalf("Write = %d, %v; want a block, %d, and an injected ENOSPC", n, err, faults.Block)
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Path != "log" || err.Error() != "write log: no space left on device" {
		t.Fatalf("error %q is not a PathError naming the file", err)
	}
	if n, err := f.Write([]byte("x")); n != 0 || err == nil {
		t.Fatalf("a later write = %d, %v; want 0 and ENOSPC", n, err)
	}
	if n, err := f.WriteAt([]byte("AB"), 0); n != 2 || err != nil {
		t.Fatalf("an overwrite in place = %d, %v; want it to succeed (it needs no new space)", n, err)
	}
	if got := tree(t, d)["log"]; got != "AB234"+strings.Repeat(".", faults.Block-5) {
		t.Fatalf("log = %.12q... (%d bytes), want AB234 and the dots up to the block's end", got, len(got))
	}
}

func TestFsyncFailDropsDirtyData(t *testing.T) {
	d := faults.NewDisk(faults.DiskOptions{})
	writeSynced(t, d, "wal", "durable;")
	syncPath(t, d, "")
	inj := &injectAt{n: 1, fault: &faults.Fault{Kind: faults.FsyncFail}}
	fsys := faults.New(d, inj)
	f, err := fsys.OpenFile("wal", os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("lost;")); err != nil { // op 0
		t.Fatal(err)
	}
	err = f.Sync() // op 1: EIO
	if !errors.Is(err, syscall_EIO) || !errors.Is(err, faults.ErrInjected) {
		t.Fatalf("Sync = %v, want injected EIO", err)
	}
	if err := f.Sync(); err != nil { // the retry "succeeds"
		t.Fatalf("retried Sync = %v, want nil (the error is reported once)", err)
	}
	if got := tree(t, d)["wal"]; got != "durable;" {
		t.Fatalf("after a failed fsync the file reads %q, want the durable bytes only", got)
	}
}

func TestInjectorSeesEveryMutation(t *testing.T) {
	inj := &injectAt{n: -1}
	fsys := faults.New(faults.NewDisk(faults.DiskOptions{}), inj)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(fsys.MkdirAll("run", 0o755))
	must(fsys.MkdirAll("run", 0o755)) // exists: no operation
	f, err := fsys.Create("run/a.tmp")
	must(err)
	_, err = f.Write([]byte("hello"))
	must(err)
	must(f.Sync())
	must(f.Close())
	must(fsys.Rename("run/a.tmp", "run/a"))
	dir, err := fsys.Open("run")
	must(err)
	must(dir.Sync())
	must(fsys.Remove("run/a"))
	var got []string
	for _, op := range inj.seen {
		got = append(got, op.String())
	}
	want := []string{"fs.mkdir run", "fs.create run/a.tmp", "fs.write run/a.tmp +5B @0", "fs.sync run/a.tmp", "fs.rename run/a.tmp -> run/a", "fs.syncdir run", "fs.remove run/a"}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("operations:\n got  %q\n want %q", got, want)
	}
}

// An overwrite after an fsync must not reach the durable bytes (the disk shares a file's
// durable bytes with its page cache until something below their end changes).
func TestOverwriteAfterFsyncIsNotDurable(t *testing.T) {
	d := faults.NewDisk(faults.DiskOptions{})
	writeSynced(t, d, "f", "0123456789")
	syncPath(t, d, "")
	f, err := d.OpenFile("f", os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("XY"), 3); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(5); err != nil {
		t.Fatal(err)
	}
	d.Crash(faults.Fault{Kind: faults.Power}, nil)
	if got := tree(t, d)["f"]; got != "0123456789" {
		t.Fatalf("after power loss f = %q, want the fsynced 0123456789", got)
	}
}

// A write of whole sectors tears at its last inner boundary; a one-sector write cannot tear.
func TestTornWriteOfWholeSectors(t *testing.T) {
	d := faults.NewDisk(faults.DiskOptions{})
	writeSynced(t, d, "db", "")
	syncPath(t, d, "")
	f, _ := d.OpenFile("db", os.O_WRONLY, 0)
	f.Write(bytes.Repeat([]byte("p"), 1024)) // two sectors, not fsynced
	if !d.Tearable("prefix") {
		t.Fatal("a two-sector write is not tearable")
	}
	d.Crash(faults.Fault{Kind: faults.Torn}, nil)
	if got := tree(t, d)["db"]; len(got) != 512 {
		t.Fatalf("torn two-sector write left %d bytes, want the first sector (512)", len(got))
	}
	d = faults.NewDisk(faults.DiskOptions{})
	writeSynced(t, d, "db", "")
	syncPath(t, d, "")
	f, _ = d.OpenFile("db", os.O_WRONLY, 0)
	f.Write(bytes.Repeat([]byte("p"), 512))
	if d.Tearable("prefix") {
		t.Fatal("a one-sector write is tearable")
	}
}

func TestEmptyWriteChangesNothing(t *testing.T) {
	d := faults.NewDisk(faults.DiskOptions{})
	f, _ := d.Create("f")
	f.Seek(100, 0)
	if n, err := f.Write(nil); n != 0 || err != nil {
		t.Fatalf("Write(nil) = %d, %v", n, err)
	}
	if fi, _ := d.Stat("f"); fi.Size() != 0 {
		t.Fatalf("an empty write past the end made the file %d bytes", fi.Size())
	}
}

// Replaying a log that misses its beginning is refused at once, clearly.
func TestReplayMisuse(t *testing.T) {
	for name, f := range map[string]func(){
		"late StartLog": func() {
			d := faults.NewDisk(faults.DiskOptions{})
			d.Mkdir("x", 0o755)
			d.StartLog()
		},
		"Replay past the log": func() {
			d := faults.NewDisk(faults.DiskOptions{})
			d.StartLog()
			d.Replay(5, faults.DiskOptions{})
		},
	} {
		func() {
			defer func() {
				if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), "faults: Disk.") {
					t.Errorf("%s: panic %v, want a clear message", name, p)
				}
			}()
			f()
		}()
	}
}

// Replay rebuilds torn writes and corruption exactly: crashing a disk, and replaying its log,
// give the same tree.
func TestReplayRebuildsCrashes(t *testing.T) {
	for _, k := range []faults.Fault{{Kind: faults.Torn, Mode: "garbage"}, {Kind: faults.Torn}, {Kind: faults.Corrupt}} {
		d := appendLogged(t)
		d.Crash(k, rand.New(rand.NewPCG(3, 3)))
		if got, want := tree(t, d.Replay(d.LogLen(), faults.DiskOptions{})), tree(t, d); !equalTrees(got, want) {
			t.Errorf("%s: replay %v, disk %v", k.Kind, got, want)
		}
	}
}

func appendLogged(t *testing.T) *faults.Disk {
	d := faults.NewDisk(faults.DiskOptions{})
	d.StartLog()
	writeSynced(t, d, "wal", strings.Repeat("a", 400))
	syncPath(t, d, "")
	f, _ := d.OpenFile("wal", os.O_WRONLY|os.O_APPEND, 0)
	f.Write(bytes.Repeat([]byte("b"), 300))
	return d
}
