package faults

import (
	"errors"
	"io"
	"io/fs"
	"maps"
	"os"
	"slices"
	"syscall"
)

// diskFile is an open file or directory of a Disk. Like an *os.File it has an offset, honours
// O_APPEND, and refuses writes on a read-only handle.
type diskFile struct {
	d      *Disk
	n      *inode
	name   string
	flag   int
	off    int64
	closed bool
	names  []string // directory listing, taken at the first Readdir
	dirPos int
}

var errAppendWriteAt = errors.New("invalid use of WriteAt on file opened with O_APPEND")

func (f *diskFile) check(op string, write bool) error {
	if f.closed {
		return &fs.PathError{Op: op, Path: f.name, Err: fs.ErrClosed}
	}
	if write && f.flag&(os.O_WRONLY|os.O_RDWR) == 0 {
		return perr(op, f.name, syscall.EBADF)
	}
	if write && f.n.dir {
		return perr(op, f.name, syscall.EISDIR)
	}
	return nil
}

func (f *diskFile) Name() string { return f.name }

func (f *diskFile) Close() error {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	if f.closed {
		return &fs.PathError{Op: "close", Path: f.name, Err: fs.ErrClosed}
	}
	f.closed = true
	if f.n.daClose {
		f.d.apply(diskOp{kind: opClose, ino: f.n.ino})
	}
	return nil
}

func (f *diskFile) Read(p []byte) (int, error) {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	n, err := f.readAt(p, f.off, "read")
	f.off += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

func (f *diskFile) ReadAt(p []byte, off int64) (int, error) {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	if off < 0 {
		return 0, perr("readat", f.name, syscall.EINVAL)
	}
	return f.readAt(p, off, "read")
}

func (f *diskFile) readAt(p []byte, off int64, op string) (int, error) {
	if err := f.check(op, false); err != nil {
		return 0, err
	}
	if f.n.dir {
		return 0, perr(op, f.name, syscall.EISDIR)
	}
	if off >= int64(len(f.n.data)) {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	n := copy(p, f.n.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *diskFile) Seek(offset int64, whence int) (int64, error) {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	if err := f.check("seek", false); err != nil {
		return 0, err
	}
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += f.off
	case io.SeekEnd:
		offset += int64(len(f.n.data))
	default:
		return 0, perr("seek", f.name, syscall.EINVAL)
	}
	if offset < 0 {
		return 0, perr("seek", f.name, syscall.EINVAL)
	}
	f.off = offset
	return offset, nil
}

func (f *diskFile) Write(p []byte) (int, error) {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	if err := f.check("write", true); err != nil {
		return 0, err
	}
	if f.flag&os.O_APPEND != 0 {
		f.off = int64(len(f.n.data))
	}
	if len(p) == 0 {
		return 0, nil // an empty write changes nothing, not even the size
	}
	f.d.apply(diskOp{kind: opWrite, ino: f.n.ino, off: f.off, data: p, at: f.d.now()})
	f.off += int64(len(p))
	return len(p), nil
}

func (f *diskFile) WriteAt(p []byte, off int64) (int, error) {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	if err := f.check("write", true); err != nil {
		return 0, err
	}
	if f.flag&os.O_APPEND != 0 {
		return 0, &fs.PathError{Op: "writeat", Path: f.name, Err: errAppendWriteAt}
	}
	if off < 0 {
		return 0, perr("writeat", f.name, syscall.EINVAL)
	}
	if len(p) == 0 {
		return 0, nil
	}
	f.d.apply(diskOp{kind: opWrite, ino: f.n.ino, off: off, data: p, at: f.d.now()})
	return len(p), nil
}

func (f *diskFile) WriteString(s string) (int, error) { return f.Write([]byte(s)) }

func (f *diskFile) Truncate(size int64) error {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	if err := f.check("truncate", true); err != nil {
		return err
	}
	if size < 0 {
		return perr("truncate", f.name, syscall.EINVAL)
	}
	f.d.truncate(f.n, size)
	return nil
}

// Sync makes the file's data durable, or for a directory, its entries.
func (f *diskFile) Sync() error {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	if err := f.check("sync", false); err != nil {
		return err
	}
	f.d.apply(diskOp{kind: opSync, ino: f.n.ino, at: f.d.now()})
	return nil
}

// dropDirty forgets the file's un-fsynced data, as Linux does after a failed writeback: the
// pages are marked clean and, once evicted, read back as what is on the disk. The model evicts
// them at once (see FsyncFail).
func (f *diskFile) dropDirty() {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	f.d.apply(diskOp{kind: opDrop, ino: f.n.ino, at: f.d.now()})
}

func (f *diskFile) Stat() (os.FileInfo, error) {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	if err := f.check("stat", false); err != nil {
		return nil, err
	}
	_, base := split(clean(f.name))
	return f.n.info(base), nil
}

func (f *diskFile) Readdir(count int) ([]os.FileInfo, error) {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	if err := f.check("readdirent", false); err != nil {
		return nil, err
	}
	if !f.n.dir {
		return nil, perr("readdirent", f.name, syscall.ENOTDIR)
	}
	if f.names == nil {
		f.names = slices.Sorted(maps.Keys(f.n.kids))
	}
	rest := f.names[f.dirPos:]
	if count > 0 {
		if len(rest) == 0 {
			return nil, io.EOF
		}
		rest = rest[:min(count, len(rest))]
	}
	infos := make([]os.FileInfo, 0, len(rest))
	for _, name := range rest {
		if kid, ok := f.n.kids[name]; ok { // removed since the listing was taken: skip
			infos = append(infos, kid.info(name))
		}
	}
	f.dirPos += len(rest)
	return infos, nil
}

func (f *diskFile) Readdirnames(count int) ([]string, error) {
	infos, err := f.Readdir(count)
	names := make([]string, len(infos))
	for i, fi := range infos {
		names[i] = fi.Name()
	}
	return names, err
}
