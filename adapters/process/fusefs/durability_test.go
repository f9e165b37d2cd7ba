package fusefs_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/chaoskit/chaoskit/adapters/process/fusefs"
	"github.com/chaoskit/chaoskit/faults"
)

// writeState leaves four files on the mount at dir:
//   - synced: written, fsynced, its directory fsynced;
//   - datasynced: the same with fdatasync;
//   - unsynced: created and its directory fsynced, then written without fsync;
//   - orphan: written and fsynced, but created after the last directory fsync.
func writeState(t *testing.T, dir string) {
	t.Helper()
	for _, name := range []string{"synced", "datasynced"} {
		f, err := os.Create(filepath.Join(dir, name))
		must(t, err)
		_, err = f.WriteString("hello " + name)
		must(t, err)
		if name == "synced" {
			must(t, f.Sync())
		} else {
			must(t, syscall.Fdatasync(int(f.Fd())))
		}
		must(t, f.Close())
	}
	f, err := os.Create(filepath.Join(dir, "unsynced"))
	must(t, err)
	syncDir(t, dir)
	_, err = f.WriteString("lost at a power cut")
	must(t, err)
	must(t, f.Close())

	must(t, os.WriteFile(filepath.Join(dir, "orphan"), []byte("no entry"), 0o644))
	f, err = os.OpenFile(filepath.Join(dir, "orphan"), os.O_WRONLY, 0)
	must(t, err)
	must(t, f.Sync())
	must(t, f.Close())
}

func TestFsyncReachesTheDisk(t *testing.T) {
	disk := faults.NewDisk(faults.DiskOptions{})
	rec := &recorder{}
	srv, dir := mount(t, faults.New(disk, rec), fusefs.Options{})
	writeState(t, dir)
	unmount(t, srv)

	for _, want := range []struct {
		kind faults.OpKind
		path string
	}{{faults.OpSync, "synced"}, {faults.OpSync, "datasynced"}, {faults.OpSyncDir, "."}, {faults.OpSync, "orphan"}} {
		if !rec.saw(want.kind, want.path) {
			t.Errorf("the injector saw no %v of %q; it saw %v", want.kind, want.path, rec.Ops())
		}
	}

	t.Log(disk.Crash(faults.Fault{Kind: faults.Power}, rng()))
	for name, want := range map[string]string{"synced": "hello synced", "datasynced": "hello datasynced", "unsynced": ""} {
		if got, ok := readDisk(t, disk, name); !ok || got != want {
			t.Errorf("after a power loss %s = %q (exists %v), want %q", name, got, ok, want)
		}
	}
	if got, ok := readDisk(t, disk, "orphan"); ok {
		t.Errorf("after a power loss orphan (never in a synced directory) exists: %q", got)
	}
}

func TestKillKeepsEverything(t *testing.T) {
	disk := faults.NewDisk(faults.DiskOptions{})
	srv, dir := mount(t, faults.New(disk, nil), fusefs.Options{})
	writeState(t, dir)
	unmount(t, srv)

	disk.Crash(faults.Fault{Kind: faults.Kill}, rng())
	for name, want := range map[string]string{"synced": "hello synced", "unsynced": "lost at a power cut", "orphan": "no entry"} {
		if got, _ := readDisk(t, disk, name); got != want {
			t.Errorf("after a kill %s = %q, want %q", name, got, want)
		}
	}
}

// A process started on a new mount after a power loss reads what the disk kept, not what an
// earlier mount showed.
func TestRemountReadsWhatTheDiskKept(t *testing.T) {
	disk := faults.NewDisk(faults.DiskOptions{})
	srv, dir := mount(t, faults.New(disk, nil), fusefs.Options{})
	writeState(t, dir)
	// Read everything once, so that a caching kernel would have it.
	for _, name := range []string{"synced", "unsynced", "orphan"} {
		if _, err := os.ReadFile(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	unmount(t, srv)
	disk.Crash(faults.Fault{Kind: faults.Power}, rng())

	srv, dir = mount(t, faults.New(disk, nil), fusefs.Options{})
	defer unmount(t, srv)
	if b, err := os.ReadFile(filepath.Join(dir, "synced")); err != nil || string(b) != "hello synced" {
		t.Errorf("synced = %q, %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "unsynced")); err != nil || len(b) != 0 {
		t.Errorf("unsynced = %q, %v; want empty", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "orphan")); !os.IsNotExist(err) {
		t.Errorf("stat orphan: %v, want ENOENT", err)
	}
}

// Within one mount, a read after a failed fsync sees the disk, which dropped the dirty data,
// not a kernel cache that kept it; for a file opened by create and for one opened by open. The
// dropped write overwrote bytes in place, so neither the size nor the modification time (a
// fixed instant on a Disk) tells the kernel that its cache is stale.
func TestReadsComeFromTheDisk(t *testing.T) {
	for _, how := range []string{"create", "open"} {
		t.Run(how, func(t *testing.T) {
			disk := faults.NewDisk(faults.DiskOptions{})
			syncs := 0
			rec := &recorder{hook: func(op faults.Op, n int) *faults.Fault {
				if op.Kind == faults.OpSync && op.Path == "f" {
					if syncs++; syncs == 2 {
						return &faults.Fault{Kind: faults.FsyncFail}
					}
				}
				return nil
			}}
			_, dir := mount(t, faults.New(disk, rec), fusefs.Options{})
			name := filepath.Join(dir, "f")
			flag := os.O_RDWR | os.O_CREATE
			if how == "open" {
				must(t, os.WriteFile(name, nil, 0o644))
				flag = os.O_RDWR
			}
			f, err := os.OpenFile(name, flag, 0o644)
			must(t, err)
			defer f.Close()
			_, err = f.WriteString("aaaaa")
			must(t, err)
			must(t, f.Sync())
			_, err = f.WriteAt([]byte("bbbbb"), 0)
			must(t, err)
			b := make([]byte, 5)
			if n, err := f.ReadAt(b, 0); string(b[:n]) != "bbbbb" {
				t.Fatalf("read back %q, %v", b[:n], err)
			}
			if err := f.Sync(); err == nil {
				t.Fatal("fsync succeeded; the injector failed it")
			}
			if n, err := f.ReadAt(b, 0); string(b[:n]) != "aaaaa" {
				t.Errorf("after a failed fsync the file reads %q (%v); the disk dropped the write and has %q", b[:n], err, "aaaaa")
			}
		})
	}
}
