package faults_test

import (
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/faults"
)

// mtime returns name's modification time as seconds after faults.Epoch.
func mtime(t *testing.T, d *faults.Disk, name string) int {
	t.Helper()
	fi, err := d.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	return int(fi.ModTime().Sub(faults.Epoch) / time.Second)
}

// A modification time is inode metadata, durable with the inode: a power loss takes back the
// time a lost write gave the file (and a lost entry its directory) and keeps the one an fsync
// made durable, under both models; a replay of the log rebuilds it.
func TestPowerLossRevertsModificationTimes(t *testing.T) {
	for _, m := range faults.FSModels() {
		t.Run(string(m), func(t *testing.T) {
			clock := faults.Epoch
			d := faults.NewDisk(faults.DiskOptions{Model: m, Now: func() time.Time { return clock }})
			d.StartLog()
			if err := d.Mkdir("dir", 0o755); err != nil {
				t.Fatal(err)
			}
			syncPath(t, d, "")
			clock = clock.Add(time.Second)
			writeSynced(t, d, "dir/f", "fsynced") // at 1 s
			syncPath(t, d, "dir")
			clock = clock.Add(time.Second)
			writeAt(t, d, "dir/f", "LOST", 0) // at 2 s, never fsynced
			writeFile(t, d, "dir/g", "", os.O_CREATE|os.O_WRONLY)
			if f, dir := mtime(t, d, "dir/f"), mtime(t, d, "dir"); f != 2 || dir != 2 {
				t.Fatalf("before the power loss: mtime of dir/f %d s, of dir %d s; want 2 and 2", f, dir)
			}
			d.Crash(faults.Fault{Kind: faults.Power}, nil)
			if f, dir := mtime(t, d, "dir/f"), mtime(t, d, "dir"); f != 1 || dir != 1 {
				t.Fatalf("after it: mtime of dir/f %d s, of dir %d s; want 1 and 1, as fsynced", f, dir)
			}
			r := d.Replay(d.LogLen(), faults.DiskOptions{})
			if f, dir := mtime(t, r, "dir/f"), mtime(t, r, "dir"); f != 1 || dir != 1 {
				t.Fatalf("replayed: mtime of dir/f %d s, of dir %d s; want 1 and 1", f, dir)
			}
		})
	}
}

// A power loss keeping a subset of the pending operations leaves each file the time of the last
// of its writes it kept.
func TestSubsetPowerLossKeepsTheTimeOfTheLastWriteKept(t *testing.T) {
	for seed := range uint64(16) {
		clock := faults.Epoch
		d := faults.NewDisk(faults.DiskOptions{Pending: true, Now: func() time.Time { return clock }})
		writeSynced(t, d, "f", "....")
		syncPath(t, d, "")
		for i, b := range "abcd" {
			clock = clock.Add(time.Second)
			writeAt(t, d, "f", string(b), int64(i)) // write i at i+1 s
		}
		d.Crash(faults.Fault{Kind: faults.Power, Mode: "subset"}, rand.New(rand.NewPCG(seed, seed)))
		got := tree(t, d)["f"]
		want := 0
		for i := range got {
			if got[i] != '.' {
				want = i + 1
			}
		}
		if at := mtime(t, d, "f"); at != want {
			t.Fatalf("seed %d: f reads %q after the power loss, mtime %d s; want %d s, the last write kept", seed, got, at, want)
		}
	}
}

// Under ext4-ordered a write's update of the inode is journaled: it survives with a metadata
// operation issued after it, or once the commit interval has passed, even where its delayed data
// does not; otherwise the file keeps the time it was fsynced at.
func TestExt4KeepsTheTimeOfACommittedWrite(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after func(d *faults.Disk, clock *time.Time)
		want  int
	}{
		{"lost", func(*faults.Disk, *time.Time) {}, 1},
		{"before a rename fsynced", func(d *faults.Disk, _ *time.Time) {
			writeSynced(t, d, "other", "x") // its fsync commits the transaction of the write to f too
		}, 2},
		{"5 s before", func(_ *faults.Disk, clock *time.Time) { *clock = clock.Add(5 * time.Second) }, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := faults.Epoch.Add(time.Second)
			d := faults.NewDisk(faults.DiskOptions{Model: faults.Ext4Ordered, Now: func() time.Time { return clock }})
			writeSynced(t, d, "f", "old")
			syncPath(t, d, "")
			clock = clock.Add(time.Second)
			writeFile(t, d, "f", "appended", os.O_WRONLY|os.O_APPEND) // delayed: lost in every case
			tc.after(d, &clock)
			d.Crash(faults.Fault{Kind: faults.Power}, nil)
			if got := tree(t, d)["f"]; got != "old" {
				t.Fatalf("f reads %q after the power loss; want %q", got, "old")
			}
			if at := mtime(t, d, "f"); at != tc.want {
				t.Fatalf("mtime of f %d s after the power loss; want %d s", at, tc.want)
			}
		})
	}
}
