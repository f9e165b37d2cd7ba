package fusefs

import (
	"context"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// fileHandle is an open file: one afero.File per open(2) in the backend, so fsys sees each
// open, each write at its offset, each fsync and each close.
type fileHandle struct {
	srv      *Server
	h        uint64 // the backend's
	appends  bool   // O_APPEND: fsys writes at its end of the file, whatever the kernel thinks
	syncs    bool   // O_SYNC or O_DSYNC: every write is followed by an fsync
	writable bool
}

var (
	_ fs.FileReader    = (*fileHandle)(nil)
	_ fs.FileWriter    = (*fileHandle)(nil)
	_ fs.FileFsyncer   = (*fileHandle)(nil)
	_ fs.FileFlusher   = (*fileHandle)(nil)
	_ fs.FileReleaser  = (*fileHandle)(nil)
	_ fs.FileGetattrer = (*fileHandle)(nil)
)

func (s *Server) newFileHandle(h uint64, kflags uint32) *fileHandle {
	acc := kflags & syscall.O_ACCMODE
	return &fileHandle{
		srv:      s,
		h:        h,
		appends:  kflags&syscall.O_APPEND != 0,
		syncs:    kflags&(syscall.O_SYNC|syscall.O_DSYNC) != 0,
		writable: acc == syscall.O_WRONLY || acc == syscall.O_RDWR,
	}
}

func (h *fileHandle) handle() uint64 { return h.h }

// Read reads at off, into a buffer of the backend's own, so that a read fsys finishes after the
// request was abandoned (see Options.Do) cannot touch memory go-fuse has reused.
func (h *fileHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	r := h.srv.ask(ctx, &request{Op: opRead, Handle: h.h, Off: off, Len: len(dest)})
	if r.Errno != 0 {
		return nil, r.Errno
	}
	return fuse.ReadResultData(r.Data), 0
}

// Write writes data at off, or at the end of the file for O_APPEND. A write that lands only in
// part (a full disk) reports the bytes that landed, as write(2) does, and the program's next
// write gets the error. With O_SYNC or O_DSYNC the write is followed by an fsync.
func (h *fileHandle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	buf := append([]byte(nil), data...) // go-fuse reuses data once the request is answered
	r := h.srv.ask(ctx, &request{Op: opWrite, Handle: h.h, Off: off, Data: buf, Append: h.appends, Sync: h.syncs})
	if r.Errno != 0 {
		return 0, r.Errno
	}
	return uint32(r.N), 0
}

// Fsync makes the file durable: fsync(2) and fdatasync(2) both call Sync.
func (h *fileHandle) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	return h.srv.ask(ctx, &request{Op: opFsync, Handle: h.h}).Errno
}

// Flush is close(2) of one descriptor of the file. Nothing is buffered, so there is nothing to
// do; the afero file is closed at Release, when the last descriptor goes.
func (h *fileHandle) Flush(ctx context.Context) syscall.Errno { return 0 }

// Release closes the afero file.
func (h *fileHandle) Release(ctx context.Context) syscall.Errno {
	return h.srv.ask(ctx, &request{Op: opRelease, Handle: h.h}).Errno
}

// Getattr describes the open file.
func (h *fileHandle) Getattr(ctx context.Context, out *fuse.AttrOut) syscall.Errno {
	return h.srv.fstat(ctx, h.h, out)
}

// fstat describes the open file or directory of handle h.
func (s *Server) fstat(ctx context.Context, h uint64, out *fuse.AttrOut) syscall.Errno {
	r := s.ask(ctx, &request{Op: opFstat, Handle: h})
	if r.Errno != 0 {
		return r.Errno
	}
	s.fill(&out.Attr, &r.Info)
	return 0
}

// dirHandle is an open directory. Its afero file, in the backend, is what fsync of the
// directory syncs. A listing is read from fsys at the first readdir after opendir or rewinddir,
// through a fresh afero file, so that it shows the directory as it is then.
type dirHandle struct {
	srv  *Server
	node *node
	h    uint64 // the backend's

	mu      sync.Mutex
	entries []fuse.DirEntry
	loaded  bool
	pos     int
}

var (
	_ fs.FileReaddirenter = (*dirHandle)(nil)
	_ fs.FileSeekdirer    = (*dirHandle)(nil)
	_ fs.FileFsyncdirer   = (*dirHandle)(nil)
	_ fs.FileReleasedirer = (*dirHandle)(nil)
	_ fs.FileGetattrer    = (*dirHandle)(nil)
)

func (d *dirHandle) load(ctx context.Context) syscall.Errno {
	p, ok := d.node.rel()
	if !ok {
		return syscall.ENOENT
	}
	r := d.srv.ask(ctx, &request{Op: opReaddir, Path: p})
	if r.Errno != 0 {
		return r.Errno
	}
	d.entries = d.entries[:0]
	for _, e := range r.Entries {
		mode := uint32(syscall.S_IFREG)
		if e.Dir {
			mode = syscall.S_IFDIR
		}
		d.entries = append(d.entries, fuse.DirEntry{Name: e.Name, Mode: mode})
	}
	d.loaded, d.pos = true, 0
	return 0
}

// Readdirent returns the next entry, or nil at the end. There are no "." and ".." entries.
func (d *dirHandle) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.loaded {
		if errno := d.load(ctx); errno != 0 {
			return nil, errno
		}
	}
	if d.pos >= len(d.entries) {
		return nil, 0
	}
	e := d.entries[d.pos]
	d.pos++
	e.Off = uint64(d.pos)
	return &e, 0
}

// Seekdir moves to the entry after offset off; 0 rewinds and reads the directory afresh.
func (d *dirHandle) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	d.mu.Lock()
	defer d.mu.Unlock()
	if off == 0 {
		d.loaded = false
		return 0
	}
	if !d.loaded {
		if errno := d.load(ctx); errno != 0 {
			return errno
		}
	}
	if off > uint64(len(d.entries)) {
		return syscall.EINVAL
	}
	d.pos = int(off)
	return 0
}

func (d *dirHandle) handle() uint64 { return d.h }

// Fsyncdir makes the directory's entries durable: Sync on its afero file.
func (d *dirHandle) Fsyncdir(ctx context.Context, flags uint32) syscall.Errno {
	return d.srv.ask(ctx, &request{Op: opFsync, Handle: d.h}).Errno
}

// Releasedir closes the afero file.
func (d *dirHandle) Releasedir(ctx context.Context, releaseFlags uint32) {
	d.srv.ask(ctx, &request{Op: opRelease, Handle: d.h})
}

// Getattr describes the open directory.
func (d *dirHandle) Getattr(ctx context.Context, out *fuse.AttrOut) syscall.Errno {
	return d.srv.fstat(ctx, d.h, out)
}
