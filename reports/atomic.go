package reports

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// FS is what WriteAtomic needs of a filesystem: opening files (directories too, read-only, to
// fsync them), renaming and removing. OSFS is the operating system's; an afero.Fs fits through
// an OpenFile method that returns its afero.File as a File.
type FS interface {
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	Rename(oldpath, newpath string) error
	Remove(name string) error
}

// File is an open file, as WriteAtomic uses it.
type File interface {
	io.Writer
	Sync() error
	Close() error
}

// OSFS is the operating system's filesystem, as an FS.
type OSFS struct{}

// OpenFile opens a file with os.OpenFile.
func (OSFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Rename renames a file with os.Rename.
func (OSFS) Rename(oldpath, newpath string) error { return os.Rename(oldpath, newpath) }

// Remove removes a file with os.Remove.
func (OSFS) Remove(name string) error { return os.Remove(name) }

// WriteAtomic writes data to path so that a crash at any moment leaves either the file's old
// content or all of data, never a mix: it writes a temporary file beside path (named
// ".BASE.tmp"), fsyncs it, renames it over path and fsyncs the directory, so that the rename
// itself survives a power loss. Errors name path and wrap the cause.
func WriteAtomic(fsys FS, path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp := filepath.Join(dir, "."+filepath.Base(path)+".tmp")
	err := writeSynced(fsys, tmp, data)
	if err == nil {
		err = fsys.Rename(tmp, path)
	}
	if err == nil {
		err = SyncDir(fsys, dir)
	}
	if err != nil {
		fsys.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// writeSynced creates or truncates name, writes data to it and fsyncs it.
func writeSynced(fsys FS, name string, data []byte) error {
	f, err := fsys.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// SyncDir fsyncs a directory, making the entries created, renamed and removed in it durable: a
// file or directory just created survives a power loss only once its parent is synced.
func SyncDir(fsys FS, dir string) error {
	d, err := fsys.OpenFile(dir, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}
