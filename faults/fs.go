package faults

import (
	"io"
	"io/fs"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/afero"
)

// OpKind names a mutating filesystem operation.
type OpKind uint8

// The operations an Injector sees. Reads are not operations: they change nothing.
const (
	OpCreate   OpKind = iota // a file created (OpenFile with O_CREATE on a missing file)
	OpMkdir                  // a directory created (Mkdir, or MkdirAll on a missing path)
	OpRemove                 // Remove, or RemoveAll of an existing path
	OpRename                 // Rename
	OpWrite                  // Write, WriteAt or WriteString
	OpTruncate               // Truncate, or OpenFile with O_TRUNC on a non-empty file
	OpSync                   // fsync of a file
	OpSyncDir                // fsync of a directory
	OpChmod                  // Chmod
	OpChtimes                // Chtimes
)

var opNames = [...]string{"create", "mkdir", "remove", "rename", "write", "truncate", "sync", "syncdir", "chmod", "chtimes"}

func (k OpKind) String() string {
	if int(k) < len(opNames) {
		return opNames[k]
	}
	return "op" + strconv.Itoa(int(k))
}

// In reports whether an operation of kind k is a beat of class c.
func (k OpKind) In(c Class) bool {
	switch c {
	case AnyBeat:
		return true
	case WriteBeat:
		return k == OpWrite || k == OpTruncate
	case SyncBeat:
		return k == OpSync || k == OpSyncDir
	}
	return false
}

// Op is a mutating filesystem operation about to be performed.
type Op struct {
	Kind OpKind
	Path string // the file or directory, as the caller named it
	To   string // OpRename: the new name
	Off  int64  // OpWrite: where the write lands; OpTruncate: the new size
	Len  int    // OpWrite: the number of bytes
}

// String describes op in a few words, e.g. "fs.write run/wal.log +128B @4096".
func (op Op) String() string {
	s := "fs." + op.Kind.String() + " " + op.Path
	switch op.Kind {
	case OpRename:
		s += " -> " + op.To
	case OpWrite:
		s += " +" + strconv.Itoa(op.Len) + "B @" + strconv.FormatInt(op.Off, 10)
	case OpTruncate:
		s += " to " + strconv.FormatInt(op.Off, 10) + "B"
	}
	return s
}

// Injector decides, before each mutating operation, which fault it suffers. It is owned by
// FS, its only caller.
type Injector interface {
	// Inject is called before op is performed. It returns the fault to apply to op (a DiskFull
	// or an FsyncFail), or nil to let op through. Crashes are the injector's own business: to
	// crash, it does not return.
	Inject(op Op) *Fault
}

// FS wraps an afero.Fs and lets an Injector fault its mutating operations, the way pebble's
// errorfs wraps a vfs.FS. It injects ENOSPC (DiskFull) and EIO on fsync (FsyncFail); errors
// look like the real ones (*fs.PathError around the errno) and wrap ErrInjected. When the
// wrapped filesystem is a *Disk, a failed fsync also drops the file's dirty data, as Linux does.
//
// A full disk is the disk's: over a Disk (or over an FS over one) it stays full for every FS
// over that Disk, so for every process and worker, across restarts and crashes, until the
// fault's duration has passed on the Disk's clock (DiskOptions.Now), or for good without one.
// Give each process (each restart) its own FS over the same Disk. Over another filesystem, which
// has no clock, the FS keeps the room left itself, for its own life, and space never returns.
// With a nil Injector, FS passes every operation through.
type FS struct {
	base  afero.Fs
	inj   Injector
	space *space
}

// New returns an FS that wraps base and asks inj before every mutating operation.
func New(base afero.Fs, inj Injector) *FS {
	f := &FS{base: base, inj: inj}
	if h, ok := base.(spaceHolder); ok {
		f.space = h.diskSpace()
	} else {
		f.space = newSpace(func() time.Time { return Epoch })
	}
	return f
}

func (f *FS) diskSpace() *space { return f.space }

func (f *FS) inject(op Op) *Fault {
	if f.inj == nil {
		return nil
	}
	flt := f.inj.Inject(op)
	if flt != nil && flt.Kind == DiskFull {
		f.space.fill(flt.Bytes, flt.Dur)
	}
	return flt
}

// Unwrap returns the wrapped filesystem: what goes through it directly suffers no fault and
// reaches no Injector. It is for callers that step outside the fault layer on purpose (an
// adapter copying a subprocess's files in and out), never for the code under test.
func (f *FS) Unwrap() afero.Fs { return f.base }

// Name returns the wrapped filesystem's name with a "faults:" prefix.
func (f *FS) Name() string { return "faults:" + f.base.Name() }

// Create creates or truncates a file, like os.Create.
func (f *FS) Create(name string) (afero.File, error) {
	return f.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}

// Open opens a file or directory for reading; it is not an operation.
func (f *FS) Open(name string) (afero.File, error) { return f.OpenFile(name, os.O_RDONLY, 0) }

// OpenFile opens a file. Creating a missing file is an OpCreate and truncating a non-empty one
// an OpTruncate; a plain open is no operation at all.
func (f *FS) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	writable := flag&(os.O_WRONLY|os.O_RDWR) != 0
	if writable && flag&(os.O_CREATE|os.O_TRUNC) != 0 {
		fi, err := f.base.Stat(name)
		switch {
		case err != nil && flag&os.O_CREATE != 0:
			f.inject(Op{Kind: OpCreate, Path: name})
		case err == nil && flag&os.O_TRUNC != 0 && fi.Size() > 0 && !fi.IsDir() && flag&os.O_EXCL == 0:
			f.inject(Op{Kind: OpTruncate, Path: name})
		}
	}
	file, err := f.base.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &File{File: file, fs: f, name: name, appendOnly: flag&os.O_APPEND != 0}, nil
}

// Mkdir creates a directory.
func (f *FS) Mkdir(name string, perm os.FileMode) error {
	f.inject(Op{Kind: OpMkdir, Path: name})
	return f.base.Mkdir(name, perm)
}

// MkdirAll creates a directory and its parents; it is an operation only if the path is missing.
func (f *FS) MkdirAll(name string, perm os.FileMode) error {
	if fi, err := f.base.Stat(name); err == nil && fi.IsDir() {
		return nil
	}
	f.inject(Op{Kind: OpMkdir, Path: name})
	return f.base.MkdirAll(name, perm)
}

// Remove removes a file or an empty directory.
func (f *FS) Remove(name string) error {
	f.inject(Op{Kind: OpRemove, Path: name})
	return f.base.Remove(name)
}

// RemoveAll removes a tree; it is an operation only if the path exists.
func (f *FS) RemoveAll(name string) error {
	if _, err := f.base.Stat(name); err != nil {
		return f.base.RemoveAll(name)
	}
	f.inject(Op{Kind: OpRemove, Path: name})
	return f.base.RemoveAll(name)
}

// Rename renames a file or directory.
func (f *FS) Rename(oldname, newname string) error {
	f.inject(Op{Kind: OpRename, Path: oldname, To: newname})
	return f.base.Rename(oldname, newname)
}

// Stat describes a file; it is not an operation.
func (f *FS) Stat(name string) (os.FileInfo, error) { return f.base.Stat(name) }

// Chmod changes a file's mode.
func (f *FS) Chmod(name string, mode os.FileMode) error {
	f.inject(Op{Kind: OpChmod, Path: name})
	return f.base.Chmod(name, mode)
}

// Chown changes a file's owner; it is passed through and is not an operation.
func (f *FS) Chown(name string, uid, gid int) error { return f.base.Chown(name, uid, gid) }

// Chtimes changes a file's times.
func (f *FS) Chtimes(name string, atime, mtime time.Time) error {
	f.inject(Op{Kind: OpChtimes, Path: name})
	return f.base.Chtimes(name, atime, mtime)
}

// File is a file opened through an FS.
type File struct {
	afero.File
	fs         *FS
	name       string
	appendOnly bool
	dir        int8 // 0 unknown, 1 file, 2 directory
}

// position is implemented by Disk files, to spare a Seek and a Stat per write.
type position interface {
	position(appendOnly bool) (off, size int64)
}

func (df *diskFile) position(appendOnly bool) (off, size int64) {
	df.d.mu.Lock()
	defer df.d.mu.Unlock()
	size = int64(len(df.n.data))
	if appendOnly {
		return size, size
	}
	return df.off, size
}

func (f *File) position() (off, size int64) {
	if p, ok := f.File.(position); ok {
		return p.position(f.appendOnly)
	}
	if fi, err := f.File.Stat(); err == nil {
		size = fi.Size()
	}
	if f.appendOnly {
		return size, size
	}
	off, _ = f.File.Seek(0, io.SeekCurrent)
	return off, size
}

// Write writes p at the file's offset; see WriteAt for how a full disk fails it.
func (f *File) Write(p []byte) (int, error) {
	off, size := f.position()
	land := f.admit(off, size, len(p))
	if land == len(p) {
		return f.File.Write(p)
	}
	if land == 0 {
		return 0, f.enospc()
	}
	n, _ := f.File.Write(p[:land])
	return n, f.enospc()
}

// WriteAt writes p at off. While the disk is full, a write lands only as far as the blocks the
// budget has left let the file grow, and then fails with ENOSPC.
func (f *File) WriteAt(p []byte, off int64) (int, error) {
	_, size := f.position()
	land := f.admit(off, size, len(p))
	if land == len(p) {
		return f.File.WriteAt(p, off)
	}
	if land == 0 {
		return 0, f.enospc()
	}
	n, _ := f.File.WriteAt(p[:land], off)
	return n, f.enospc()
}

// WriteString writes s, like Write.
func (f *File) WriteString(s string) (int, error) { return f.Write([]byte(s)) }

// admit injects the write and returns how many of its n bytes fit on the disk.
func (f *File) admit(off, size int64, n int) int {
	f.fs.inject(Op{Kind: OpWrite, Path: f.name, Off: off, Len: n})
	return f.fs.space.admit(off, size, n)
}

func (f *File) enospc() error {
	return &fs.PathError{Op: "write", Path: f.name, Err: Injected(syscall.ENOSPC)}
}

// Truncate changes the file's size.
func (f *File) Truncate(size int64) error {
	f.fs.inject(Op{Kind: OpTruncate, Path: f.name, Off: size})
	return f.File.Truncate(size)
}

type dropper interface{ dropDirty() }

// Sync fsyncs the file or directory. An injected FsyncFail returns EIO and, on a Disk, drops the
// file's un-fsynced data.
func (f *File) Sync() error {
	kind := OpSync
	if f.isDir() {
		kind = OpSyncDir
	}
	flt := f.fs.inject(Op{Kind: kind, Path: f.name})
	if flt != nil && flt.Kind == FsyncFail {
		if d, ok := f.File.(dropper); ok && kind == OpSync {
			d.dropDirty()
		}
		return &fs.PathError{Op: "sync", Path: f.name, Err: Injected(syscall.EIO)}
	}
	return f.File.Sync()
}

func (f *File) isDir() bool {
	if f.dir == 0 {
		f.dir = 1
		if fi, err := f.File.Stat(); err == nil && fi.IsDir() {
			f.dir = 2
		}
	}
	return f.dir == 2
}
