package fusefs

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/spf13/afero"
)

// fileHandle is an open file: one afero.File per open(2), so fsys sees each open, each write
// at its offset, each fsync and each close.
type fileHandle struct {
	srv      *Server
	f        afero.File
	appends  bool // O_APPEND: fsys writes at its end of the file, whatever the kernel thinks
	syncs    bool // O_SYNC or O_DSYNC: every write is followed by an fsync
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

func (s *Server) newFileHandle(f afero.File, kflags uint32) *fileHandle {
	acc := kflags & syscall.O_ACCMODE
	return &fileHandle{
		srv:      s,
		f:        f,
		appends:  kflags&syscall.O_APPEND != 0,
		syncs:    kflags&(syscall.O_SYNC|syscall.O_DSYNC) != 0,
		writable: acc == syscall.O_WRONLY || acc == syscall.O_RDWR,
	}
}

// Read reads at off. It reads into a buffer of its own, so that a read fsys finishes after the
// request was abandoned (see Options.Do) cannot touch memory go-fuse has reused.
func (h *fileHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	buf := make([]byte, len(dest))
	var n int
	errno := h.srv.exec("read", func() syscall.Errno {
		var err error
		n, err = h.f.ReadAt(buf, off)
		if errors.Is(err, io.EOF) {
			err = nil
		}
		return Errno(err)
	})
	if errno != 0 {
		return nil, errno
	}
	return fuse.ReadResultData(buf[:n]), 0
}

// Write writes data at off, or at the end of the file for O_APPEND. A write that lands only in
// part (a full disk) reports the bytes that landed, as write(2) does, and the program's next
// write gets the error. With O_SYNC or O_DSYNC the write is followed by an fsync.
func (h *fileHandle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	buf := append([]byte(nil), data...) // go-fuse reuses data once the request is answered
	var n int
	errno := h.srv.exec("write", func() syscall.Errno {
		var err error
		if h.appends {
			n, err = h.f.Write(buf)
		} else {
			n, err = h.f.WriteAt(buf, off)
		}
		if err == nil && n < len(buf) {
			err = io.ErrShortWrite
		}
		if err != nil {
			if n > 0 {
				return 0 // a short write; the rest fails on the next call
			}
			return Errno(err)
		}
		if h.syncs {
			return Errno(h.f.Sync())
		}
		return 0
	})
	if errno != 0 {
		return 0, errno
	}
	return uint32(n), 0
}

// Fsync makes the file durable: fsync(2) and fdatasync(2) both call Sync.
func (h *fileHandle) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	return h.srv.exec("fsync", func() syscall.Errno { return Errno(h.f.Sync()) })
}

// Flush is close(2) of one descriptor of the file. Nothing is buffered, so there is nothing to
// do; the afero file is closed at Release, when the last descriptor goes.
func (h *fileHandle) Flush(ctx context.Context) syscall.Errno { return 0 }

// Release closes the afero file.
func (h *fileHandle) Release(ctx context.Context) syscall.Errno {
	return h.srv.exec("release", func() syscall.Errno { return Errno(h.f.Close()) })
}

// Getattr describes the open file.
func (h *fileHandle) Getattr(ctx context.Context, out *fuse.AttrOut) syscall.Errno {
	fi, errno := h.stat()
	if errno != 0 {
		return errno
	}
	h.srv.fill(&out.Attr, fi)
	return 0
}

func (h *fileHandle) stat() (os.FileInfo, syscall.Errno) {
	var fi os.FileInfo
	errno := h.srv.exec("fstat", func() syscall.Errno {
		var err error
		fi, err = h.f.Stat()
		return Errno(err)
	})
	return fi, errno
}

// dirHandle is an open directory. Its afero file is what fsync of the directory syncs. A
// listing is read from fsys at the first readdir after opendir or rewinddir, through a fresh
// afero file, so that it shows the directory as it is then.
type dirHandle struct {
	srv  *Server
	node *node
	f    afero.File

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

func (d *dirHandle) load() syscall.Errno {
	p, ok := d.node.rel()
	if !ok {
		return syscall.ENOENT
	}
	var infos []os.FileInfo
	errno := d.srv.exec("readdir", func() syscall.Errno {
		f, err := d.srv.fsys.Open(p)
		if err != nil {
			return Errno(err)
		}
		infos, err = f.Readdir(-1)
		cerr := f.Close()
		if err != nil {
			return Errno(err)
		}
		return Errno(cerr)
	})
	if errno != 0 {
		return errno
	}
	d.entries = d.entries[:0]
	for _, fi := range infos {
		d.entries = append(d.entries, fuse.DirEntry{Name: fi.Name(), Mode: typeBits(fi)})
	}
	d.loaded, d.pos = true, 0
	return 0
}

// Readdirent returns the next entry, or nil at the end. There are no "." and ".." entries.
func (d *dirHandle) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.loaded {
		if errno := d.load(); errno != 0 {
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
		if errno := d.load(); errno != 0 {
			return errno
		}
	}
	if off > uint64(len(d.entries)) {
		return syscall.EINVAL
	}
	d.pos = int(off)
	return 0
}

// Fsyncdir makes the directory's entries durable: Sync on its afero file.
func (d *dirHandle) Fsyncdir(ctx context.Context, flags uint32) syscall.Errno {
	return d.srv.exec("fsyncdir", func() syscall.Errno { return Errno(d.f.Sync()) })
}

// Releasedir closes the afero file.
func (d *dirHandle) Releasedir(ctx context.Context, releaseFlags uint32) {
	d.srv.exec("releasedir", func() syscall.Errno { return Errno(d.f.Close()) })
}

// Getattr describes the open directory.
func (d *dirHandle) Getattr(ctx context.Context, out *fuse.AttrOut) syscall.Errno {
	fi, errno := d.stat()
	if errno != 0 {
		return errno
	}
	d.srv.fill(&out.Attr, fi)
	return 0
}

func (d *dirHandle) stat() (os.FileInfo, syscall.Errno) {
	var fi os.FileInfo
	errno := d.srv.exec("fstat", func() syscall.Errno {
		var err error
		fi, err = d.f.Stat()
		return Errno(err)
	})
	return fi, errno
}
