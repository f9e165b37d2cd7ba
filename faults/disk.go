package faults

import (
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/afero"
)

// Disk is an in-memory filesystem that knows what has reached the disk. It implements afero.Fs.
//
// Every file has two contents: what processes see (the page cache) and what is durable (the
// bytes at its last successful fsync). Every directory has two sets of entries: the live ones
// and those at its last directory fsync. A crash (see Crash) keeps or reverts them according to
// its kind. Files are inodes: a rename moves the inode, and an inode survives a power loss
// under whichever names were durable.
//
// A Disk can log its operations (StartLog) so that the state after any prefix of them can be
// rebuilt (Replay) without re-running the program that produced them.
type Disk struct {
	mu      sync.Mutex
	root    *inode
	inodes  []*inode // by number; the op log refers to inodes by number
	seq     uint64   // counts data writes, to find the last un-fsynced one
	now     func() time.Time
	log     []diskOp
	logged  bool
	sector  int64
	flips   int  // bits flipped by corruption
	mutated bool // something was ever changed
	space   *space
	pending bool // keep the operations since each last fsync (DiskOptions.Pending)

	// the journal's order of metadata operations (see FSModel): how many were issued, how many
	// fsyncs have committed, and, under ext4-ordered, when each of the others was issued
	model  FSModel
	jseq   int
	forced int
	jtimes []time.Time // by index from forced
}

// DiskOptions configures a Disk. The zero value is valid.
type DiskOptions struct {
	// Now gives modification times, and the time at which a full disk has space again; the
	// default is a fixed instant, for determinism (space never returns).
	Now func() time.Time
	// Sector is the unit a torn write tears at; the default is 512 bytes.
	Sector int
	// Pending keeps, besides each file's durable bytes, every write and directory operation
	// issued since its last fsync: what a power loss keeping a subset of them (power@K:subset)
	// draws from, and Tearable("subset") looks at. It costs a copy of every byte written until
	// the next fsync, so it is off unless asked for; Crash with power@K:subset panics without it.
	// Ext4Ordered always keeps them.
	Pending bool
	// Model is the filesystem persistence model power and torn crashes follow (see FSModel); the
	// default is POSIX.
	Model FSModel
}

// Epoch is the instant at which chaoskit's virtual time starts.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// NewDisk returns an empty disk holding only its root directory, which is durable.
func NewDisk(opts DiskOptions) *Disk {
	model, err := ParseFSModel(string(opts.Model))
	if err != nil {
		panic("faults: DiskOptions.Model: " + err.Error())
	}
	d := &Disk{now: opts.Now, sector: int64(opts.Sector), pending: opts.Pending || model == Ext4Ordered, model: model}
	if d.sector <= 0 {
		d.sector = 512
	}
	if d.now == nil {
		d.now = func() time.Time { return Epoch }
	}
	d.root = d.newInode(true, fs.ModeDir|0o755, Epoch)
	d.space = newSpace(d.now)
	return d
}

func (d *Disk) diskSpace() *space { return d.space }

// Full reports whether the disk is full now (a DiskFull fault fired through an FS over it and
// its duration, if it has one, has not yet passed) and, if so, when space returns: the zero
// time if never. A disk rebuilt by Replay starts with space.
func (d *Disk) Full() (full bool, until time.Time) { return d.space.state() }

type inode struct {
	ino      int
	dir      bool
	mode     fs.FileMode
	mtime    time.Time // what stat reports: the time of its last change (or Chtimes)
	durMtime time.Time // what is on the disk: mtime at its last fsync (see Disk.Crash)

	lastM int // 1 + the journal index of the last metadata operation on it (see FSModel)

	// files
	data    []byte     // what processes read: the page cache
	durable []byte     // what is on the disk: data at the last successful fsync
	shared  bool       // durable aliases data's backing array (copy before touching it)
	dirty   bool       // data may differ from durable
	last    *lastWrite // the latest write since the last fsync, for torn crashes
	pend    []pendData // the writes and truncates since the last fsync, for power@K:subset
	pbuf    []byte     // the bytes of pend's writes, one after another
	alloc   int64      // ext4-ordered: how many of its bytes have blocks on the disk (writes below are in place)
	daClose bool       // ext4-ordered: truncated to zero, so closing it forces its data (auto_da_alloc)

	// directories
	kids    map[string]*inode // live entries
	durKids map[string]*inode // entries at the last directory fsync
	dirDrty bool              // kids may differ from durKids
	dpend   []pendEntry       // the entry changes since the last directory fsync, in order
}

// pendData is a write (pbuf[from:to] at off) or, if trunc, a truncation to off bytes, not yet
// fsynced. For the journal's order (see FSModel): a truncation is metadata operation j; a write
// comes after j metadata operations, is the seq-th data write, is delayed unless it overwrites
// blocks the file has on the disk, and, if bound, survives whenever metadata operation bind does.
type pendData struct {
	off      int64
	from, to int
	trunc    bool
	j        int
	seq      uint64
	delayed  bool
	bound    bool
	bind     int
	at       time.Time // when it was issued: the file's mtime from then on
}

// applyTo applies p to a file's bytes data (a write's bytes are in pbuf) and returns them.
func (p pendData) applyTo(data, pbuf []byte) []byte {
	if p.trunc {
		if p.off <= int64(len(data)) {
			return data[:p.off]
		}
		return append(data, make([]byte, p.off-int64(len(data)))...)
	}
	if end := p.off + int64(p.to-p.from); end > int64(len(data)) {
		data = append(data, make([]byte, end-int64(len(data)))...)
	}
	copy(data[p.off:], pbuf[p.from:p.to])
	return data
}

// pendEntry is a change to a directory's entries, issued at at, not yet made durable by a
// directory fsync: name added for n (a create, a mkdir, the arriving end of a rename from
// another directory), name removed (n nil; a remove, the leaving end of such a rename), or,
// within one directory, from renamed to name, atomically.
type pendEntry struct {
	name, from string
	n          *inode
	rename     bool
	j          int // its metadata operation's index in the journal's order
	at         time.Time
}

// applyTo applies e to a directory's entries.
func (e pendEntry) applyTo(kids map[string]*inode) {
	switch {
	case e.rename:
		delete(kids, e.from)
		kids[e.name] = e.n
	case e.n != nil:
		kids[e.name] = e.n
	default:
		delete(kids, e.name)
	}
}

// lastWrite remembers enough of a write to tear it after the fact.
type lastWrite struct {
	seq    uint64
	off    int64
	n      int
	oldLen int64  // file size before the write
	old    []byte // the bytes the write overwrote, [off, min(off+n, oldLen))
}

func (d *Disk) newInode(dir bool, mode fs.FileMode, at time.Time) *inode {
	n := &inode{ino: len(d.inodes), dir: dir, mode: mode, mtime: at, durMtime: at}
	if dir {
		n.kids = map[string]*inode{}
		n.durKids = map[string]*inode{}
	}
	d.inodes = append(d.inodes, n)
	return n
}

// Name returns "chaoskit.Disk".
func (d *Disk) Name() string { return "chaoskit.Disk" }

// clean turns a name into a slash-separated path relative to the root ("" is the root).
func clean(name string) string {
	p := path.Clean("/" + name)
	return strings.TrimPrefix(p, "/")
}

func split(p string) (dir, base string) {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return "", p
	}
	return p[:i], p[i+1:]
}

func perr(op, name string, errno syscall.Errno) error {
	return &fs.PathError{Op: op, Path: name, Err: errno}
}

// lookup resolves a cleaned path to its inode.
func (d *Disk) lookup(p string) (*inode, syscall.Errno) {
	n := d.root
	if p == "" {
		return n, 0
	}
	for _, part := range strings.Split(p, "/") {
		if !n.dir {
			return nil, syscall.ENOTDIR
		}
		kid, ok := n.kids[part]
		if !ok {
			return nil, syscall.ENOENT
		}
		n = kid
	}
	return n, 0
}

// parent resolves the directory that holds p and returns it with p's last element.
func (d *Disk) parent(p string) (*inode, string, syscall.Errno) {
	if p == "" {
		return nil, "", syscall.EEXIST
	}
	dir, base := split(p)
	n, errno := d.lookup(dir)
	if errno != 0 {
		return nil, "", errno
	}
	if !n.dir {
		return nil, "", syscall.ENOTDIR
	}
	return n, base, 0
}

// ---- afero.Fs ----

// Create creates or truncates the named file, like os.Create.
func (d *Disk) Create(name string) (afero.File, error) {
	return d.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}

// Open opens the named file or directory for reading.
func (d *Disk) Open(name string) (afero.File, error) { return d.OpenFile(name, os.O_RDONLY, 0) }

// OpenFile opens a file with os-style flags. Creating a file adds a live directory entry that
// is durable only once the directory is fsynced.
func (d *Disk) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	p := clean(name)
	writable := flag&(os.O_WRONLY|os.O_RDWR) != 0
	n, errno := d.lookup(p)
	switch {
	case errno == syscall.ENOENT && flag&os.O_CREATE != 0:
		if _, _, errno := d.parent(p); errno != 0 {
			return nil, perr("open", name, errno)
		}
		n = d.create(p, perm&fs.ModePerm)
	case errno != 0:
		return nil, perr("open", name, errno)
	case flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL:
		return nil, perr("open", name, syscall.EEXIST)
	case n.dir && writable:
		return nil, perr("open", name, syscall.EISDIR)
	case flag&os.O_TRUNC != 0 && writable && len(n.data) > 0:
		d.truncate(n, 0)
	}
	return &diskFile{d: d, n: n, name: name, flag: flag}, nil
}

// Mkdir creates a directory; its entry in the parent is durable once the parent is fsynced.
func (d *Disk) Mkdir(name string, perm os.FileMode) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	p := clean(name)
	if _, errno := d.lookup(p); errno == 0 {
		return perr("mkdir", name, syscall.EEXIST)
	}
	if _, _, errno := d.parent(p); errno != 0 {
		return perr("mkdir", name, errno)
	}
	d.mkdir(p, perm&fs.ModePerm)
	return nil
}

// MkdirAll creates a directory and any missing parents.
func (d *Disk) MkdirAll(name string, perm os.FileMode) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	p := clean(name)
	if p == "" {
		return nil
	}
	n := d.root
	parts := strings.Split(p, "/")
	for i, part := range parts {
		kid, ok := n.kids[part]
		if !ok {
			kid = d.mkdir(strings.Join(parts[:i+1], "/"), perm&fs.ModePerm)
		} else if !kid.dir {
			return perr("mkdir", name, syscall.ENOTDIR)
		}
		n = kid
	}
	return nil
}

// Remove removes a file or an empty directory.
func (d *Disk) Remove(name string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	p := clean(name)
	n, errno := d.lookup(p)
	if errno == 0 && p == "" {
		errno = syscall.EBUSY
	}
	if errno == 0 && n.dir && len(n.kids) > 0 {
		errno = syscall.ENOTEMPTY
	}
	if errno != 0 {
		return perr("remove", name, errno)
	}
	d.remove(p)
	return nil
}

// RemoveAll removes a path and everything under it; a missing path is not an error.
func (d *Disk) RemoveAll(name string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	p := clean(name)
	n, errno := d.lookup(p)
	if errno == syscall.ENOENT {
		return nil
	}
	if errno != 0 {
		return perr("removeall", name, errno)
	}
	if p == "" {
		for _, k := range slices.Sorted(maps.Keys(n.kids)) {
			d.removeTree(k, n.kids[k])
		}
		return nil
	}
	d.removeTree(p, n)
	return nil
}

func (d *Disk) removeTree(p string, n *inode) {
	if n.dir {
		for _, k := range slices.Sorted(maps.Keys(n.kids)) {
			d.removeTree(p+"/"+k, n.kids[k])
		}
	}
	d.remove(p)
}

// Rename renames (moves) a file or directory, replacing a file or empty directory at the
// destination. The change is durable once both parent directories are fsynced.
func (d *Disk) Rename(oldname, newname string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	op, np := clean(oldname), clean(newname)
	fail := func(errno syscall.Errno) error {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: errno}
	}
	n, errno := d.lookup(op)
	if errno != 0 {
		return fail(errno)
	}
	if op == "" || np == "" {
		return fail(syscall.EBUSY)
	}
	if op == np {
		return nil
	}
	if n.dir && strings.HasPrefix(np+"/", op+"/") {
		return fail(syscall.EINVAL)
	}
	if _, _, errno := d.parent(np); errno != 0 {
		return fail(errno)
	}
	if old, errno := d.lookup(np); errno == 0 {
		switch {
		case old.dir && !n.dir:
			return fail(syscall.EISDIR)
		case !old.dir && n.dir:
			return fail(syscall.ENOTDIR)
		case old.dir && len(old.kids) > 0:
			return fail(syscall.ENOTEMPTY)
		}
	}
	d.rename(op, np)
	return nil
}

// Stat describes the named file.
func (d *Disk) Stat(name string) (os.FileInfo, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	p := clean(name)
	n, errno := d.lookup(p)
	if errno != 0 {
		return nil, perr("stat", name, errno)
	}
	_, base := split(p)
	return n.info(base), nil
}

// Chmod changes the permission bits of the named file.
func (d *Disk) Chmod(name string, mode os.FileMode) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	n, errno := d.lookup(clean(name))
	if errno != 0 {
		return perr("chmod", name, errno)
	}
	d.apply(diskOp{kind: opChmod, ino: n.ino, mode: mode & fs.ModePerm})
	return nil
}

// Chown does nothing: the disk has no owners.
func (d *Disk) Chown(name string, uid, gid int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, errno := d.lookup(clean(name)); errno != 0 {
		return perr("chown", name, errno)
	}
	return nil
}

// Chtimes sets the modification time of the named file.
func (d *Disk) Chtimes(name string, atime, mtime time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	n, errno := d.lookup(clean(name))
	if errno != 0 {
		return perr("chtimes", name, errno)
	}
	d.apply(diskOp{kind: opChtimes, ino: n.ino, at: mtime})
	return nil
}

// ---- file info ----

type fileInfo struct {
	name  string
	size  int64
	mode  fs.FileMode
	mtime time.Time
}

func (n *inode) info(name string) fileInfo {
	if name == "" {
		name = "/"
	}
	return fileInfo{name: name, size: int64(len(n.data)), mode: n.mode, mtime: n.mtime}
}

func (fi fileInfo) Name() string       { return fi.name }
func (fi fileInfo) Size() int64        { return fi.size }
func (fi fileInfo) Mode() fs.FileMode  { return fi.mode }
func (fi fileInfo) ModTime() time.Time { return fi.mtime }
func (fi fileInfo) IsDir() bool        { return fi.mode.IsDir() }
func (fi fileInfo) Sys() any           { return nil }
