package faults_test

import (
	"os"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/faults"
)

// Digest covers what a process sees of the disk and nothing else: disks that hold the same names,
// bytes, modes and times digest alike however much of it is durable, and every change a process
// could see changes the digest.
func TestDigestIsWhatAProcessSees(t *testing.T) {
	build := func(synced bool, change func(d *faults.Disk)) [32]byte {
		d := faults.NewDisk(faults.DiskOptions{Pending: true})
		if err := d.Mkdir("dir", 0o755); err != nil {
			t.Fatal(err)
		}
		if synced {
			writeSynced(t, d, "dir/f", "hello")
			syncPath(t, d, "dir")
			syncPath(t, d, "")
		} else {
			f, err := d.Create("dir/f")
			must(t, err)
			_, err = f.WriteString("hello")
			must(t, err)
			must(t, f.Close())
		}
		if change != nil {
			change(d)
		}
		return d.Digest()
	}
	base := build(true, nil)
	if got := build(false, nil); got != base {
		t.Fatal("the same files, durable on one disk and pending on the other, digest differently")
	}
	for name, change := range map[string]func(d *faults.Disk){
		"a byte":   func(d *faults.Disk) { writeAt(t, d, "dir/f", "j", 0) },
		"a name":   func(d *faults.Disk) { rename(t, d, "dir/f", "dir/g") },
		"a file":   func(d *faults.Disk) { writeFile(t, d, "g", "", os.O_CREATE|os.O_WRONLY) },
		"a mode":   func(d *faults.Disk) { must(t, d.Chmod("dir/f", 0o600)) },
		"a time":   func(d *faults.Disk) { must(t, d.Chtimes("dir/f", faults.Epoch, faults.Epoch.Add(time.Hour))) },
		"the size": func(d *faults.Disk) { writeFile(t, d, "dir/f", "", os.O_WRONLY|os.O_TRUNC) },
	} {
		if build(true, change) == base {
			t.Errorf("changing %s leaves the digest as it was", name)
		}
	}
}

// Power losses at two points between the same two fsyncs leave disks of one digest: what the
// later one lost besides is lost either way, bytes and times.
func TestPowerLossesBetweenFsyncsDigestAlike(t *testing.T) {
	for _, m := range faults.FSModels() {
		t.Run(string(m), func(t *testing.T) {
			clock := faults.Epoch
			d := faults.NewDisk(faults.DiskOptions{Model: m, Now: func() time.Time { return clock }})
			d.StartLog()
			writeSynced(t, d, "log", "synced;")
			syncPath(t, d, "")
			var at []int
			for range 3 {
				at = append(at, d.LogLen())
				clock = clock.Add(time.Second)
				writeFile(t, d, "log", "lost;", os.O_WRONLY|os.O_APPEND)
			}
			var first [32]byte
			for i, n := range at {
				r := d.Replay(n, faults.DiskOptions{Now: func() time.Time { return clock }})
				r.Crash(faults.Fault{Kind: faults.Power}, nil)
				if dg := r.Digest(); i == 0 {
					first = dg
				} else if dg != first {
					t.Fatalf("a power loss after %d unsynced appends digests unlike one after none: %v", i, tree(t, r))
				}
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
