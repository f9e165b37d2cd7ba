package fusefs

import (
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/afero"
)

// Call is one call the server made on fsys, as Options.Trace sees it.
type Call struct {
	Op   string // the afero method: "OpenFile", "Stat", "WriteAt", "Sync", "Close", ...
	Path string // the file, as the server named it to fsys (relative, "." for the root)
	To   string // Rename: the new name
	Flag int    // OpenFile: the flags
	Off  int64  // ReadAt, WriteAt: the offset; Truncate: the size
	Len  int    // Read, ReadAt, Write, WriteAt: the bytes asked for
	Err  error  // what fsys returned
}

// String describes the call in a few words, e.g. "WriteAt db-journal +512B @0".
func (c Call) String() string {
	var b strings.Builder
	b.WriteString(c.Op)
	b.WriteByte(' ')
	b.WriteString(c.Path)
	switch c.Op {
	case "Rename":
		b.WriteString(" -> " + c.To)
	case "OpenFile":
		b.WriteString(" " + FlagString(c.Flag))
	case "Read", "Write":
		b.WriteString(" +" + strconv.Itoa(c.Len) + "B")
	case "ReadAt", "WriteAt":
		b.WriteString(" +" + strconv.Itoa(c.Len) + "B @" + strconv.FormatInt(c.Off, 10))
	case "Truncate":
		b.WriteString(" to " + strconv.FormatInt(c.Off, 10) + "B")
	}
	if c.Err != nil {
		b.WriteString(": " + c.Err.Error())
	}
	return b.String()
}

// FlagString spells open flags the way open(2) does, e.g. "O_RDWR|O_CREAT|O_EXCL".
func FlagString(flag int) string {
	var parts []string
	switch flag & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR) {
	case os.O_WRONLY:
		parts = append(parts, "O_WRONLY")
	case os.O_RDWR:
		parts = append(parts, "O_RDWR")
	default:
		parts = append(parts, "O_RDONLY")
	}
	for _, f := range []struct {
		bit  int
		name string
	}{{os.O_CREATE, "O_CREAT"}, {os.O_EXCL, "O_EXCL"}, {os.O_TRUNC, "O_TRUNC"}, {os.O_APPEND, "O_APPEND"}} {
		if flag&f.bit != 0 {
			parts = append(parts, f.name)
		}
	}
	return strings.Join(parts, "|")
}

// tracedFs reports every call on base, and on the files it opens, to trace.
type tracedFs struct {
	base  afero.Fs
	trace func(Call)
}

func (t *tracedFs) Name() string { return t.base.Name() }

func (t *tracedFs) file(f afero.File, err error) (afero.File, error) {
	if err != nil {
		return nil, err
	}
	return &tracedFile{File: f, trace: t.trace}, nil
}

func (t *tracedFs) Create(name string) (afero.File, error) {
	f, err := t.base.Create(name)
	t.trace(Call{Op: "Create", Path: name, Err: err})
	return t.file(f, err)
}

func (t *tracedFs) Open(name string) (afero.File, error) {
	f, err := t.base.Open(name)
	t.trace(Call{Op: "Open", Path: name, Err: err})
	return t.file(f, err)
}

func (t *tracedFs) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	f, err := t.base.OpenFile(name, flag, perm)
	t.trace(Call{Op: "OpenFile", Path: name, Flag: flag, Err: err})
	return t.file(f, err)
}

func (t *tracedFs) Mkdir(name string, perm os.FileMode) error {
	err := t.base.Mkdir(name, perm)
	t.trace(Call{Op: "Mkdir", Path: name, Err: err})
	return err
}

func (t *tracedFs) MkdirAll(name string, perm os.FileMode) error {
	err := t.base.MkdirAll(name, perm)
	t.trace(Call{Op: "MkdirAll", Path: name, Err: err})
	return err
}

func (t *tracedFs) Remove(name string) error {
	err := t.base.Remove(name)
	t.trace(Call{Op: "Remove", Path: name, Err: err})
	return err
}

func (t *tracedFs) RemoveAll(name string) error {
	err := t.base.RemoveAll(name)
	t.trace(Call{Op: "RemoveAll", Path: name, Err: err})
	return err
}

func (t *tracedFs) Rename(oldname, newname string) error {
	err := t.base.Rename(oldname, newname)
	t.trace(Call{Op: "Rename", Path: oldname, To: newname, Err: err})
	return err
}

func (t *tracedFs) Stat(name string) (os.FileInfo, error) {
	fi, err := t.base.Stat(name)
	t.trace(Call{Op: "Stat", Path: name, Err: err})
	return fi, err
}

func (t *tracedFs) Chmod(name string, mode os.FileMode) error {
	err := t.base.Chmod(name, mode)
	t.trace(Call{Op: "Chmod", Path: name, Err: err})
	return err
}

func (t *tracedFs) Chown(name string, uid, gid int) error {
	err := t.base.Chown(name, uid, gid)
	t.trace(Call{Op: "Chown", Path: name, Err: err})
	return err
}

func (t *tracedFs) Chtimes(name string, atime, mtime time.Time) error {
	err := t.base.Chtimes(name, atime, mtime)
	t.trace(Call{Op: "Chtimes", Path: name, Err: err})
	return err
}

type tracedFile struct {
	afero.File
	trace func(Call)
}

func (f *tracedFile) Close() error {
	err := f.File.Close()
	f.trace(Call{Op: "Close", Path: f.Name(), Err: err})
	return err
}

func (f *tracedFile) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	f.trace(Call{Op: "Read", Path: f.Name(), Len: len(p), Err: err})
	return n, err
}

func (f *tracedFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	f.trace(Call{Op: "ReadAt", Path: f.Name(), Off: off, Len: len(p), Err: err})
	return n, err
}

func (f *tracedFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	f.trace(Call{Op: "Write", Path: f.Name(), Len: len(p), Err: err})
	return n, err
}

func (f *tracedFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(p, off)
	f.trace(Call{Op: "WriteAt", Path: f.Name(), Off: off, Len: len(p), Err: err})
	return n, err
}

func (f *tracedFile) WriteString(s string) (int, error) { return f.Write([]byte(s)) }

func (f *tracedFile) Truncate(size int64) error {
	err := f.File.Truncate(size)
	f.trace(Call{Op: "Truncate", Path: f.Name(), Off: size, Err: err})
	return err
}

func (f *tracedFile) Sync() error {
	err := f.File.Sync()
	f.trace(Call{Op: "Sync", Path: f.Name(), Err: err})
	return err
}

func (f *tracedFile) Stat() (os.FileInfo, error) {
	fi, err := f.File.Stat()
	f.trace(Call{Op: "File.Stat", Path: f.Name(), Err: err})
	return fi, err
}

func (f *tracedFile) Readdir(count int) ([]os.FileInfo, error) {
	fis, err := f.File.Readdir(count)
	f.trace(Call{Op: "Readdir", Path: f.Name(), Err: err})
	return fis, err
}
