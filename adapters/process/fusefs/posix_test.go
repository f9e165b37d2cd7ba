package fusefs_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/adapters/process/fusefs"
	"github.com/chaoskit/chaoskit/faults"
	"golang.org/x/sys/unix"
)

func wantErrno(t *testing.T, what string, err error, want syscall.Errno) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: got %v, want %v", what, err, want)
	}
}

func readNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	must(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// TestPOSIX runs the system calls programs make on their state directories and checks both what
// they return and what reached the disk.
func TestPOSIX(t *testing.T) {
	disk := faults.NewDisk(faults.DiskOptions{})
	rec := &recorder{}
	_, dir := mount(t, faults.New(disk, rec), fusefs.Options{})
	at := func(p string) string { return filepath.Join(dir, p) }

	t.Run("create-excl", func(t *testing.T) {
		f, err := os.OpenFile(at("x"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o640)
		must(t, err)
		must(t, f.Close())
		_, err = os.OpenFile(at("x"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o640)
		wantErrno(t, "second O_EXCL create", err, syscall.EEXIST)
		if fi, err := os.Stat(at("x")); err != nil || fi.Mode().Perm() != 0o640 {
			t.Errorf("stat x: %v %v, want mode 0640", fi, err)
		}
	})

	t.Run("pread-pwrite", func(t *testing.T) {
		f, err := os.OpenFile(at("p"), os.O_RDWR|os.O_CREATE, 0o644)
		must(t, err)
		defer f.Close()
		_, err = f.WriteAt([]byte("abc"), 10)
		must(t, err)
		_, err = f.WriteAt([]byte("XY"), 1)
		must(t, err)
		b := make([]byte, 20)
		n, err := f.ReadAt(b, 0)
		if !errors.Is(err, io.EOF) || !bytes.Equal(b[:n], []byte("\x00XY\x00\x00\x00\x00\x00\x00\x00abc")) {
			t.Errorf("pread = %q, %v", b[:n], err)
		}
		if n, _ := f.ReadAt(b[:2], 11); string(b[:n]) != "bc" {
			t.Errorf("pread at 11 = %q", b[:n])
		}
		if got, _ := readDisk(t, disk, "p"); got != "\x00XY\x00\x00\x00\x00\x00\x00\x00abc" {
			t.Errorf("disk has %q", got)
		}
	})

	t.Run("append", func(t *testing.T) {
		must(t, os.WriteFile(at("a"), []byte("start:"), 0o644))
		f, err := os.OpenFile(at("a"), os.O_WRONLY|os.O_APPEND, 0)
		must(t, err)
		g, err := os.OpenFile(at("a"), os.O_WRONLY|os.O_APPEND, 0)
		must(t, err)
		for _, w := range []*os.File{f, g, f} {
			_, err := w.WriteString("x")
			must(t, err)
		}
		f.Close()
		g.Close()
		if got, _ := readDisk(t, disk, "a"); got != "start:xxx" {
			t.Errorf("after three appends through two descriptors the disk has %q", got)
		}
	})

	t.Run("trunc", func(t *testing.T) {
		must(t, os.WriteFile(at("t"), []byte("0123456789"), 0o644))
		before := len(rec.Ops())
		f, err := os.OpenFile(at("t"), os.O_RDWR|os.O_TRUNC, 0)
		must(t, err)
		fi, _ := f.Stat()
		if fi.Size() != 0 {
			t.Errorf("size after O_TRUNC = %d", fi.Size())
		}
		truncs := 0
		for _, op := range rec.Ops()[before:] {
			if op.Kind == faults.OpTruncate {
				truncs++
			}
		}
		if truncs != 1 {
			t.Errorf("open(O_TRUNC) made %d truncate beats, want 1: %v", truncs, rec.Ops()[before:])
		}
		_, err = f.WriteString("abcdef")
		must(t, err)
		must(t, f.Truncate(4)) // ftruncate
		fi, _ = f.Stat()
		if fi.Size() != 4 {
			t.Errorf("size after ftruncate(4) = %d", fi.Size())
		}
		must(t, f.Truncate(0)) // to nothing: SQLite's rollback of a new database's first commit
		if fi, _ = f.Stat(); fi.Size() != 0 {
			t.Errorf("size after ftruncate(0) = %d", fi.Size())
		}
		_, err = f.WriteAt([]byte("abcd"), 0)
		must(t, err)
		must(t, f.Close())
		must(t, os.Truncate(at("t"), 2)) // truncate(2), by path
		must(t, os.Truncate(at("t"), 6)) // extends with zeros
		if got, _ := readDisk(t, disk, "t"); got != "ab\x00\x00\x00\x00" {
			t.Errorf("disk has %q", got)
		}
		if !rec.saw(faults.OpTruncate, "t") {
			t.Error("no truncate beat")
		}
	})

	t.Run("chmod-utimes", func(t *testing.T) {
		must(t, os.WriteFile(at("m"), nil, 0o644))
		must(t, os.Chmod(at("m"), 0))
		if fi, err := os.Stat(at("m")); err != nil || fi.Mode().Perm() != 0 {
			t.Errorf("stat after chmod 0: %v, %v", fi.Mode(), err)
		}
		must(t, os.Chmod(at("m"), 0o600))
		when := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
		must(t, os.Chtimes(at("m"), when, when))
		fi, err := os.Stat(at("m"))
		must(t, err)
		if fi.Mode().Perm() != 0o600 || !fi.ModTime().Equal(when) {
			t.Errorf("stat: mode %v mtime %v, want 0600 and %v", fi.Mode(), fi.ModTime(), when)
		}
		if dfi, _ := disk.Stat("m"); dfi.Mode().Perm() != 0o600 || !dfi.ModTime().Equal(when) {
			t.Errorf("disk: mode %v mtime %v", dfi.Mode(), dfi.ModTime())
		}
		if !rec.saw(faults.OpChmod, "m") || !rec.saw(faults.OpChtimes, "m") {
			t.Error("chmod or utimes was no beat")
		}
	})

	t.Run("dirs", func(t *testing.T) {
		must(t, os.Mkdir(at("d"), 0o755))
		wantErrno(t, "mkdir of an existing directory", os.Mkdir(at("d"), 0o755), syscall.EEXIST)
		for _, n := range []string{"b", "a", "c"} {
			must(t, os.WriteFile(at("d/"+n), []byte(n), 0o644))
		}
		if got := readNames(t, at("d")); !slices.Equal(got, []string{"a", "b", "c"}) {
			t.Errorf("readdir = %v", got)
		}
		must(t, os.Rename(at("d/a"), at("d/z")))
		must(t, os.Rename(at("d/b"), at("d/c"))) // over an existing file
		if got := readNames(t, at("d")); !slices.Equal(got, []string{"c", "z"}) {
			t.Errorf("readdir after renames = %v", got)
		}
		if b, _ := os.ReadFile(at("d/c")); string(b) != "b" {
			t.Errorf("d/c = %q after renaming b over it", b)
		}
		wantErrno(t, "rmdir of a non-empty directory", syscall.Rmdir(at("d")), syscall.ENOTEMPTY)
		wantErrno(t, "unlink of a directory", syscall.Unlink(at("d")), syscall.EISDIR)
		wantErrno(t, "rmdir of a file", syscall.Rmdir(at("d/c")), syscall.ENOTDIR)
		must(t, os.Mkdir(at("d/sub"), 0o755))
		must(t, os.Rename(at("d"), at("e"))) // a directory with its contents
		if got := readNames(t, at("e")); !slices.Equal(got, []string{"c", "sub", "z"}) {
			t.Errorf("readdir of the renamed directory = %v", got)
		}
		must(t, os.Remove(at("e/c")))
		must(t, os.Remove(at("e/z")))
		must(t, os.Remove(at("e/sub")))
		must(t, os.Remove(at("e")))
		if _, ok := readDisk(t, disk, "e"); ok {
			t.Error("e is still on the disk")
		}
	})

	t.Run("renameat2", func(t *testing.T) {
		must(t, os.WriteFile(at("r1"), []byte("1"), 0o644))
		must(t, os.WriteFile(at("r2"), []byte("2"), 0o644))
		wantErrno(t, "RENAME_NOREPLACE over a file", unix.Renameat2(unix.AT_FDCWD, at("r1"), unix.AT_FDCWD, at("r2"), unix.RENAME_NOREPLACE), syscall.EEXIST)
		must(t, unix.Renameat2(unix.AT_FDCWD, at("r1"), unix.AT_FDCWD, at("r3"), unix.RENAME_NOREPLACE))
		wantErrno(t, "RENAME_EXCHANGE", unix.Renameat2(unix.AT_FDCWD, at("r2"), unix.AT_FDCWD, at("r3"), unix.RENAME_EXCHANGE), syscall.EINVAL)
	})

	t.Run("errnos", func(t *testing.T) {
		_, err := os.Open(at("missing"))
		wantErrno(t, "open of a missing file", err, syscall.ENOENT)
		wantErrno(t, "rename of a missing file", os.Rename(at("missing"), at("other")), syscall.ENOENT)
		_, err = os.Create(at("missing/f"))
		wantErrno(t, "create in a missing directory", err, syscall.ENOENT)
		must(t, os.WriteFile(at("file"), nil, 0o644))
		_, err = os.Create(at("file/f"))
		wantErrno(t, "create under a file", err, syscall.ENOTDIR)
		wantErrno(t, "link", os.Link(at("file"), at("hard")), syscall.EPERM)
		wantErrno(t, "symlink", os.Symlink("file", at("soft")), syscall.EPERM)
		wantErrno(t, "mkfifo", syscall.Mkfifo(at("fifo"), 0o644), syscall.EPERM)
	})

	t.Run("unlinked-while-open", func(t *testing.T) {
		f, err := os.OpenFile(at("u"), os.O_RDWR|os.O_CREATE, 0o644)
		must(t, err)
		defer f.Close()
		_, err = f.WriteString("before")
		must(t, err)
		must(t, os.Remove(at("u")))
		_, err = f.WriteString("+after")
		must(t, err)
		b := make([]byte, 32)
		n, _ := f.ReadAt(b, 0)
		if string(b[:n]) != "before+after" {
			t.Errorf("read through the descriptor of an unlinked file = %q", b[:n])
		}
		if fi, err := f.Stat(); err != nil || fi.Size() != 12 {
			t.Errorf("fstat of an unlinked file: %v, %v", fi, err)
		}
		must(t, f.Sync())
	})

	t.Run("o_sync", func(t *testing.T) {
		f, err := os.OpenFile(at("s"), os.O_WRONLY|os.O_CREATE|os.O_SYNC, 0o644)
		must(t, err)
		before := len(rec.Ops())
		_, err = f.WriteString("durable")
		must(t, err)
		must(t, f.Close())
		var kinds []faults.OpKind
		for _, op := range rec.Ops()[before:] {
			kinds = append(kinds, op.Kind)
		}
		if !slices.Equal(kinds, []faults.OpKind{faults.OpWrite, faults.OpSync}) {
			t.Errorf("an O_SYNC write made the beats %v, want [write sync]", kinds)
		}
	})

	t.Run("statfs", func(t *testing.T) {
		var st syscall.Statfs_t
		must(t, syscall.Statfs(dir, &st))
		if st.Bavail == 0 || st.Bsize == 0 {
			t.Errorf("statfs = %+v", st)
		}
	})
}

// TestInjectedErrors checks that the faults an injector raises reach a program with their errno.
func TestInjectedErrors(t *testing.T) {
	disk := faults.NewDisk(faults.DiskOptions{})
	rec := &recorder{hook: func(op faults.Op, n int) *faults.Fault {
		switch {
		case op.Kind == faults.OpWrite && op.Path == "full":
			return &faults.Fault{Kind: faults.DiskFull, Bytes: faults.Block + 3}
		case op.Kind == faults.OpSync && op.Path == "failing":
			return &faults.Fault{Kind: faults.FsyncFail}
		case op.Kind == faults.OpSyncDir:
			return &faults.Fault{Kind: faults.FsyncFail}
		}
		return nil
	}}
	_, dir := mount(t, faults.New(disk, rec), fusefs.Options{})

	f, err := os.Create(filepath.Join(dir, "failing"))
	must(t, err)
	_, err = f.WriteString("x")
	must(t, err)
	wantErrno(t, "fsync that fails", f.Sync(), syscall.EIO)
	wantErrno(t, "fdatasync that fails", syscall.Fdatasync(int(f.Fd())), syscall.EIO)
	f.Close()

	d, err := os.Open(dir)
	must(t, err)
	wantErrno(t, "fsync of a directory that fails", d.Sync(), syscall.EIO)
	d.Close()

	// Last: a full disk stays full for the life of the faults.FS.
	f, err = os.Create(filepath.Join(dir, "full"))
	must(t, err)
	body := strings.Repeat("hello", faults.Block)
	n, err := f.WriteString(body)
	wantErrno(t, "write to a full disk", err, syscall.ENOSPC)
	if n != faults.Block {
		t.Errorf("write to a full disk landed %d bytes, want the block that fitted, %d", n, faults.Block)
	}
	f.Close()
	if got, _ := readDisk(t, disk, "full"); got != body[:faults.Block] {
		t.Errorf("the disk has %d bytes of it, want the first %d", len(got), faults.Block)
	}
}

func TestErrno(t *testing.T) {
	for _, c := range []struct {
		err  error
		want syscall.Errno
	}{
		{nil, 0},
		{&os.PathError{Op: "write", Path: "f", Err: faults.Injected(syscall.ENOSPC)}, syscall.ENOSPC},
		{&os.LinkError{Op: "rename", Old: "a", New: "b", Err: syscall.ENOTEMPTY}, syscall.ENOTEMPTY},
		{os.NewSyscallError("fsync", syscall.EIO), syscall.EIO},
		{os.ErrNotExist, syscall.ENOENT},
		{os.ErrExist, syscall.EEXIST},
		{os.ErrClosed, syscall.EBADF},
		{errors.New("something else"), syscall.EIO},
	} {
		if got := fusefs.Errno(c.err); got != c.want {
			t.Errorf("Errno(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
