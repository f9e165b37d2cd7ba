package process

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"

	"github.com/spf13/afero"
)

// A process on a plain disk works in a real directory: the disk's files are copied into it when
// the process starts, and what it holds is copied back into the disk before each of the
// process's beats and when it ends. So at every beat the disk holds what a kill there would
// leave (the page cache outlives the process), and a kill's crash state can be derived from the
// golden recording like any other.

// copyIn writes the tree of src into the directory dir, and returns it.
func copyIn(src afero.Fs, dir string) (tree, error) {
	t, err := readTree(src)
	if err != nil {
		return nil, err
	}
	if t == nil {
		t = tree{} // known to be empty
	}
	if err := t.write(dir); err != nil {
		return nil, err
	}
	return t, nil
}

// syncOut makes dst, which holds the tree have, hold what the directory dir holds, fsynced: it
// writes the files that differ, makes the directories that are missing, removes what dir no
// longer has, and fsyncs the directories whose entries changed; and returns the tree dst then
// holds. Anything but regular files and directories (a symbolic link, a socket) is left out.
// have is what copyIn or the last syncOut returned (nothing else writes dst meanwhile, so dst
// is not read back at every beat), or nil for unknown; after an error syncOut returns nil.
func syncOut(dir string, dst afero.Fs, have tree) (tree, error) {
	want, err := readDir(dir)
	if err != nil {
		return nil, fmt.Errorf("copying %s back to the disk: %w", dir, err)
	}
	if want == nil {
		want = tree{} // known to be empty
	}
	if have == nil { // unknown, after an error
		if have, err = readTree(dst); err != nil {
			return nil, fmt.Errorf("copying %s back to the disk: %w", dir, err)
		}
	}
	wanted := make(map[string]*treeEntry, len(want))
	for i := range want {
		wanted[want[i].path] = &want[i]
	}
	had := make(map[string]*treeEntry, len(have))
	for i := range have {
		had[have[i].path] = &have[i]
	}
	changed := map[string]bool{}          // directories whose entries changed
	for i := len(have) - 1; i >= 0; i-- { // children before their directories
		e := &have[i]
		if w := wanted[e.path]; w == nil || w.dir != e.dir {
			if err := dst.RemoveAll("/" + e.path); err != nil {
				return nil, err
			}
			changed[parent(e.path)] = true
		}
	}
	for _, w := range want {
		h := had[w.path]
		if h != nil && h.dir != w.dir {
			h = nil // removed above
		}
		switch {
		case w.dir && h == nil:
			if err := dst.Mkdir("/"+w.path, w.perm); err != nil {
				return nil, err
			}
			changed[parent(w.path)], changed[w.path] = true, true
		case w.dir && h.perm != w.perm:
			if err := dst.Chmod("/"+w.path, w.perm); err != nil {
				return nil, err
			}
		case !w.dir && (h == nil || !bytes.Equal(h.data, w.data) || h.perm != w.perm):
			if err := writeSynced(dst, "/"+w.path, w.data, w.perm); err != nil {
				return nil, err
			}
			if h == nil {
				changed[parent(w.path)] = true
			} else if h.perm != w.perm {
				if err := dst.Chmod("/"+w.path, w.perm); err != nil {
					return nil, err
				}
			}
		}
	}
	dirs := make([]string, 0, len(changed))
	for d := range changed {
		dirs = append(dirs, d)
	}
	slices.Sort(dirs) // the same operations in the same order every time
	for _, d := range dirs {
		if err := syncDir(dst, "/"+d); err != nil {
			return nil, err
		}
	}
	return want, nil
}

// parent returns the directory of the slash-separated relative path p, "" for the root.
func parent(p string) string {
	if d := path.Dir(p); d != "." {
		return d
	}
	return ""
}

// readDir reads the regular files and directories under the directory dir, as a tree.
func readDir(dir string) (tree, error) {
	var t tree
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		e := treeEntry{path: filepath.ToSlash(rel), dir: d.IsDir(), perm: info.Mode().Perm()}
		switch {
		case e.dir:
		case info.Mode().IsRegular():
			if e.data, err = os.ReadFile(p); err != nil {
				return err
			}
		default:
			return nil
		}
		t = append(t, e)
		return nil
	})
	return t, err
}

func writeSynced(fsys afero.Fs, name string, b []byte, perm fs.FileMode) error {
	f, err := fsys.OpenFile(name, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func syncDir(fsys afero.Fs, name string) error {
	d, err := fsys.Open(name)
	if err != nil {
		return err
	}
	err = d.Sync()
	d.Close()
	return err
}
