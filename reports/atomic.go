package reports

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/afero"
)

// WriteAtomic writes data to path on fsys so that a crash at any moment leaves either the
// file's old content or all of data, never a mix: it writes a temporary file beside path (named
// ".BASE.tmp"), fsyncs it, renames it over path and fsyncs the directory, so that the rename
// itself survives a power loss. Errors name path and wrap the cause.
func WriteAtomic(fsys afero.Fs, path string, data []byte) error {
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
func writeSynced(fsys afero.Fs, name string, data []byte) error {
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
func SyncDir(fsys afero.Fs, dir string) error {
	d, err := fsys.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}
