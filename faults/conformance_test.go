package faults_test

import (
	"testing"
	"testing/fstest"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/spf13/afero"
)

// populate writes a small tree through fsys.
func populate(t *testing.T, fsys afero.Fs) {
	t.Helper()
	files := map[string]string{
		"a.txt":           "alpha",
		"empty":           "",
		"dir/b.txt":       "bravo bravo",
		"dir/sub/c.json":  `{"c":3}`,
		"dir/sub/d.bin":   "\x00\x01\x02",
		"other/e.log":     "echo\n",
		"other/deep/f/g":  "golf",
		"other/deep/h.md": "# hotel",
	}
	for name, body := range files {
		dir := name[:max(0, len(name)-len(lastElem(name))-1)]
		if dir != "" {
			if err := fsys.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := afero.WriteFile(fsys, name, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func lastElem(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[i+1:]
		}
	}
	return p
}

var want = []string{"a.txt", "empty", "dir/b.txt", "dir/sub/c.json", "dir/sub/d.bin", "other/e.log", "other/deep/f/g", "other/deep/h.md"}

// The wrapper with no faults is an ordinary filesystem: fstest.TestFS checks Open, Read,
// ReadAt, Seek, ReadDir, Stat and their agreement with one another.
func TestFSConformsToIOFS(t *testing.T) {
	fsys := faults.New(faults.NewDisk(faults.DiskOptions{}), nil)
	populate(t, fsys)
	if err := fstest.TestFS(afero.NewIOFS(fsys), want...); err != nil {
		t.Fatal(err)
	}
}

// Over afero's MemMapFs the wrapper is transparent: fstest finds exactly what it finds in the
// bare MemMapFs (whose ReadAt at end of file returns nil instead of io.EOF), nothing more.
func TestFSIsTransparentOverMemMapFs(t *testing.T) {
	bare := afero.NewMemMapFs()
	populate(t, bare)
	wrapped := faults.New(afero.NewMemMapFs(), nil)
	populate(t, wrapped)
	errText := func(err error) string {
		if err == nil {
			return ""
		}
		return err.Error()
	}
	b, w := errText(fstest.TestFS(afero.NewIOFS(bare), want...)), errText(fstest.TestFS(afero.NewIOFS(wrapped), want...))
	if b != w {
		t.Fatalf("fstest over the wrapper:\n%s\nover the bare MemMapFs:\n%s", w, b)
	}
}

// The bare Disk conforms too, also after a crash has rebuilt its tree.
func TestDiskConformsAfterCrash(t *testing.T) {
	d := faults.NewDisk(faults.DiskOptions{})
	populate(t, d)
	d.Crash(faults.Fault{Kind: faults.Kill}, nil)
	if err := fstest.TestFS(afero.NewIOFS(d), want...); err != nil {
		t.Fatal(err)
	}
}
