package reports

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/afero"
)

// WriteAtomic writes data to path on fsys so that a crash at any moment leaves either the
// file's old content or all of data, never a mix: it writes a temporary file beside path (named
// ".BASE.tmp"), fsyncs it, renames it over path and fsyncs the directory, so that the rename
// itself survives a power loss. Errors name path and wrap the cause.
func WriteAtomic(fsys afero.Fs, path string, data []byte) error {
	return WriteAtomicFunc(fsys, path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteAtomicFunc is WriteAtomic of what write writes, which it writes through a buffer: a file
// too large to hold in memory is written as safely. If write fails, path keeps its old content.
func WriteAtomicFunc(fsys afero.Fs, path string, write func(w io.Writer) error) error {
	dir := filepath.Dir(path)
	tmp := filepath.Join(dir, "."+filepath.Base(path)+".tmp")
	err := writeSynced(fsys, tmp, write)
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

// writeSynced creates or truncates name, writes to it what write writes and fsyncs it.
func writeSynced(fsys afero.Fs, name string, write func(w io.Writer) error) error {
	f, err := fsys.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 64<<10)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
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
