package fusefs

import (
	"errors"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/afero"
)

// A mount has two halves: the kernel's side, which go-fuse's node tree serves (node.go,
// handle.go: paths, inodes, open handles as numbers), and the backend, which runs each request
// of the kernel as calls on fsys. The kernel's side describes every request as a value (request)
// and gets a value back (reply), so that the two halves can run in one process (Mount) or in
// two, over a connection (Helper): the kernel then never waits on the process that runs fsys.

// opcode names a request of the kernel's side to the backend.
type opcode uint8

const (
	opStat    opcode = iota + 1 // lookup, getattr: Stat(Path)
	opFstat                     // getattr of an open file or directory: Handle's Stat
	opSetattr                   // chmod, chown, truncate, utimensat
	opOpen                      // OpenFile(Path, Flags), a new Handle
	opCreate                    // OpenFile(Path, Flags|O_CREATE, Mode) and its Stat
	opMkdir                     // Mkdir(Path, Mode) and its Stat
	opRemove                    // unlink (or rmdir, with Dir) of Path
	opRename                    // Rename(Path, To), RENAME_NOREPLACE in Flags
	opOpendir                   // Open(Path) of a directory, a new Handle
	opReaddir                   // the entries of the directory Path
	opRead                      // ReadAt(Len bytes, Off) of Handle
	opWrite                     // WriteAt(Data, Off), or Write for Append; Sync after, for Sync
	opFsync                     // Sync of Handle, a file or a directory
	opRelease                   // Close of Handle
)

var opNames = [...]string{opStat: "stat", opFstat: "fstat", opSetattr: "setattr", opOpen: "open", opCreate: "create",
	opMkdir: "mkdir", opRemove: "remove", opRename: "rename", opOpendir: "opendir", opReaddir: "readdir",
	opRead: "read", opWrite: "write", opFsync: "fsync", opRelease: "release"}

func (o opcode) String() string {
	if int(o) < len(opNames) && opNames[o] != "" {
		return opNames[o]
	}
	return "op?"
}

// request is one request of the kernel's side, with what it names: a path relative to fsys's
// root ("." for the root), or an open file's handle.
type request struct {
	Pid    uint32 // the thread that made it; 0 for the kernel's own
	Op     opcode
	Path   string
	To     string // rename: the new path
	Handle uint64 // an open file or directory
	Flags  int    // open, create: afero's flags; rename: renameat2's
	Mode   uint32 // create, mkdir: the permission bits
	Off    int64  // read, write
	Len    int    // read: the bytes asked for
	Data   []byte // write
	Append bool   // write: at the end of the file (O_APPEND)
	Sync   bool   // write: followed by an fsync (O_SYNC, O_DSYNC)
	Dir    bool   // remove: the entry must be a directory (rmdir), else must not be
	Attr   attrChange
}

// Request is what Options.DoRequest is told of a request: who made it and what it asks.
type Request struct {
	// Pid is the thread that made the request (its thread id, in the pid namespace of the
	// process that mounted), or 0 for a request the kernel makes on its own, which no thread
	// waits for: the release of a closed file, the writeback of a shared map's pages.
	Pid uint32
	// Op names the request: "stat", "open", "create", "read", "write", "fsync", "rename", ...
	Op string
	// Changes says whether the request changes the disk or what of it is durable: create,
	// mkdir, remove, rename, write, setattr, fsync, and an open that truncates.
	Changes bool
	// Path is the file or directory it acts on, relative to the mount (for a request on an open
	// file or directory, the path it was opened by); To is a rename's new path.
	Path, To string
	// Off and Len are a read's or write's offset and length.
	Off int64
	Len int
	// Data is a write's bytes: Do must neither keep nor change them.
	Data []byte
}

// public returns what DoRequest is told of r.
func (r *request) public(b *backend) Request {
	q := Request{Pid: r.Pid, Op: r.Op.String(), Path: r.Path, To: r.To, Off: r.Off, Len: r.Len, Data: r.Data}
	switch r.Op {
	case opCreate, opMkdir, opRemove, opRename, opWrite, opSetattr, opFsync:
		q.Changes = true
	case opOpen:
		q.Changes = r.Flags&os.O_TRUNC != 0
	}
	if r.Op == opWrite {
		q.Len = len(r.Data)
	}
	if q.Path == "" && r.Handle != 0 {
		if f := b.file(r.Handle); f != nil {
			q.Path = f.Name()
		}
	}
	return q
}

// attrChange is what a setattr changes, through the open Handle if it is not 0. Each value
// comes with a flag saying it is set: a request crosses a helper's connection in gob, which
// leaves out zero values, so that a pointer to a zero (truncate to 0, chown to root) would
// arrive as no change at all.
type attrChange struct {
	Named       bool // the node is still in a directory: Path names it
	SetMode     bool
	Mode        os.FileMode
	SetUID      bool
	UID         int
	SetGID      bool
	GID         int
	SetSize     bool
	Size        int64
	SetMtime    bool
	Mtime       time.Time
	MtimeNow    bool // utimensat(UTIME_NOW): the backend's now
	HandleWrite bool // Handle is open for writing (ftruncate through it)
}

// reply is the backend's answer to a request.
type reply struct {
	Errno   syscall.Errno
	Info    info     // stat, fstat, setattr, create, mkdir
	Handle  uint64   // open, create, opendir
	Data    []byte   // read
	N       int      // write: the bytes written
	Entries []dirent // readdir
}

// info describes a file or directory, as the kernel's side needs it.
type info struct {
	Size    int64
	Mode    os.FileMode
	ModTime time.Time
}

func infoOf(fi os.FileInfo) info {
	return info{Size: fi.Size(), Mode: fi.Mode(), ModTime: fi.ModTime()}
}

// dirent is an entry of a directory.
type dirent struct {
	Name string
	Dir  bool
}

// backend runs requests on fsys, keeping the files the kernel's side has open by number.
type backend struct {
	fsys afero.Fs
	now  func() time.Time

	mu    sync.Mutex
	files map[uint64]afero.File
	next  uint64
}

func newBackend(fsys afero.Fs, now func() time.Time) *backend {
	if now == nil {
		now = time.Now
	}
	return &backend{fsys: fsys, now: now, files: map[uint64]afero.File{}}
}

// open keeps f and returns its handle.
func (b *backend) open(f afero.File) uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.next++
	b.files[b.next] = f
	return b.next
}

func (b *backend) file(h uint64) afero.File {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.files[h]
}

func (b *backend) forget(h uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.files, h)
}

// do runs r on fsys. It never keeps r's Data: a write copies nothing more than fsys does.
func (b *backend) do(r *request) reply {
	fsys := b.fsys
	stat := func(fi os.FileInfo, err error) reply {
		if err != nil {
			return reply{Errno: Errno(err)}
		}
		return reply{Info: infoOf(fi)}
	}
	switch r.Op {
	case opStat:
		return stat(fsys.Stat(r.Path))
	case opFstat:
		f := b.file(r.Handle)
		if f == nil {
			return reply{Errno: syscall.EBADF}
		}
		return stat(f.Stat())
	case opSetattr:
		return b.setattr(r)
	case opOpen, opOpendir:
		var f afero.File
		var err error
		if r.Op == opOpen {
			f, err = fsys.OpenFile(r.Path, r.Flags, 0)
		} else {
			f, err = fsys.Open(r.Path)
		}
		if err != nil {
			return reply{Errno: Errno(err)}
		}
		return reply{Handle: b.open(f)}
	case opCreate:
		f, err := fsys.OpenFile(r.Path, r.Flags|os.O_CREATE, os.FileMode(r.Mode&0o777))
		if err != nil {
			return reply{Errno: Errno(err)}
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return reply{Errno: Errno(err)}
		}
		return reply{Info: infoOf(fi), Handle: b.open(f)}
	case opMkdir:
		if err := fsys.Mkdir(r.Path, os.FileMode(r.Mode&0o777)); err != nil {
			return reply{Errno: Errno(err)}
		}
		return stat(fsys.Stat(r.Path))
	case opRemove:
		fi, err := fsys.Stat(r.Path)
		switch {
		case err != nil:
			return reply{Errno: Errno(err)}
		case r.Dir && !fi.IsDir():
			return reply{Errno: syscall.ENOTDIR}
		case !r.Dir && fi.IsDir():
			return reply{Errno: syscall.EISDIR}
		}
		return reply{Errno: Errno(fsys.Remove(r.Path))}
	case opRename:
		if r.Flags&renameNoReplace != 0 {
			if _, err := fsys.Stat(r.To); err == nil {
				return reply{Errno: syscall.EEXIST}
			}
		}
		return reply{Errno: Errno(fsys.Rename(r.Path, r.To))}
	case opReaddir:
		f, err := fsys.Open(r.Path)
		if err != nil {
			return reply{Errno: Errno(err)}
		}
		infos, err := f.Readdir(-1)
		cerr := f.Close()
		if err == nil {
			err = cerr
		}
		if err != nil {
			return reply{Errno: Errno(err)}
		}
		ents := make([]dirent, len(infos))
		for i, fi := range infos {
			ents[i] = dirent{Name: fi.Name(), Dir: fi.IsDir()}
		}
		return reply{Entries: ents}
	}
	f := b.file(r.Handle)
	if f == nil {
		return reply{Errno: syscall.EBADF}
	}
	switch r.Op {
	case opRead:
		buf := make([]byte, r.Len)
		n, err := f.ReadAt(buf, r.Off)
		if errors.Is(err, io.EOF) {
			err = nil
		}
		if err != nil {
			return reply{Errno: Errno(err)}
		}
		return reply{Data: buf[:n]}
	case opWrite:
		var n int
		var err error
		if r.Append {
			n, err = f.Write(r.Data)
		} else {
			n, err = f.WriteAt(r.Data, r.Off)
		}
		if err == nil && n < len(r.Data) {
			err = io.ErrShortWrite
		}
		if err != nil {
			if n > 0 {
				return reply{N: n} // a short write; the rest fails on the next call
			}
			return reply{Errno: Errno(err)}
		}
		if r.Sync {
			if err := f.Sync(); err != nil {
				return reply{Errno: Errno(err)}
			}
		}
		return reply{N: n}
	case opFsync:
		return reply{Errno: Errno(f.Sync())}
	case opRelease:
		b.forget(r.Handle)
		return reply{Errno: Errno(f.Close())}
	}
	return reply{Errno: syscall.ENOSYS}
}

// setattr changes a node's mode, owner, size or modification time: chmod, chown, truncate(2)
// and ftruncate, utimensat. A truncation through a file open for writing uses it; one by path
// opens the file for writing, truncates it and closes it.
func (b *backend) setattr(r *request) reply {
	fsys, a := b.fsys, r.Attr
	var h afero.File
	if r.Handle != 0 {
		if h = b.file(r.Handle); h == nil {
			return reply{Errno: syscall.EBADF}
		}
	}
	if a.SetMode {
		if !a.Named {
			return reply{Errno: syscall.ENOENT}
		}
		if err := fsys.Chmod(r.Path, a.Mode); err != nil {
			return reply{Errno: Errno(err)}
		}
	}
	if (a.SetUID || a.SetGID) && a.Named {
		cu, cg := -1, -1
		if a.SetUID {
			cu = a.UID
		}
		if a.SetGID {
			cg = a.GID
		}
		if err := fsys.Chown(r.Path, cu, cg); err != nil {
			return reply{Errno: Errno(err)}
		}
	}
	if a.SetSize {
		var errno syscall.Errno
		if h != nil && a.HandleWrite {
			errno = Errno(h.Truncate(a.Size))
		} else {
			errno = truncatePath(fsys, r.Path, a.Size)
		}
		if errno != 0 {
			return reply{Errno: errno}
		}
	}
	if (a.SetMtime || a.MtimeNow) && a.Named {
		mtime := b.now()
		if !a.MtimeNow {
			mtime = a.Mtime
		}
		// Only the modification time is kept; an access-time-only change does nothing.
		if err := fsys.Chtimes(r.Path, mtime, mtime); err != nil {
			return reply{Errno: Errno(err)}
		}
	}
	if h != nil {
		fi, err := h.Stat()
		if err != nil {
			return reply{Errno: Errno(err)}
		}
		return reply{Info: infoOf(fi)}
	}
	fi, err := fsys.Stat(r.Path)
	if err != nil {
		return reply{Errno: Errno(err)}
	}
	return reply{Info: infoOf(fi)}
}

// truncatePath sets the size of the file p: it opens it for writing, truncates it and closes it.
func truncatePath(fsys afero.Fs, p string, size int64) syscall.Errno {
	f, err := fsys.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		return Errno(err)
	}
	terr := f.Truncate(size)
	cerr := f.Close()
	if terr != nil {
		return Errno(terr)
	}
	return Errno(cerr)
}
