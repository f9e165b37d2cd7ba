package faults_test

import (
	"errors"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/spf13/afero"
)

// fillOn is an Injector that fills the disk (Bytes fit, for Dur) at its first write.
type fillOn struct {
	fault faults.Fault
	done  bool
}

func (f *fillOn) Inject(op faults.Op) *faults.Fault {
	if op.Kind == faults.OpWrite && !f.done {
		f.done = true
		return &f.fault
	}
	return nil
}

// appendTo appends b to the named file through fsys, creating it, and returns what Write did.
func appendTo(t *testing.T, fsys afero.Fs, name, b string) (int, error) {
	t.Helper()
	f, err := fsys.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return f.Write([]byte(b))
}

// A full disk fits whole blocks (faults.Block), as a filesystem allocates them: a write into the
// rest of a file's last block needs no room, a write that needs a block more than is free lands
// up to a block boundary, and a budget short of a block fits nothing beyond.
func TestFullDiskFitsWholeBlocks(t *testing.T) {
	for _, tc := range []struct {
		budget      int64
		size, write int // the file's size before the write, and the write's length
		landed      int
	}{
		{0, 0, 1, 0},
		{faults.Block - 1, 0, 10, 0},
		{faults.Block, 0, 10, 10},
		{0, 10, faults.Block - 10, faults.Block - 10},
		{0, 10, faults.Block, faults.Block - 10},
		{faults.Block, 10, 2 * faults.Block, 2*faults.Block - 10},
		{faults.Block, faults.Block, 3 * faults.Block, faults.Block},
	} {
		d := faults.NewDisk(faults.DiskOptions{})
		f, _ := d.Create("log")
		f.Write(make([]byte, tc.size))
		f.Close()
		fsys := faults.New(d, &fillOn{fault: faults.Fault{Kind: faults.DiskFull, Bytes: tc.budget}})
		n, err := appendTo(t, fsys, "log", strings.Repeat("x", tc.write))
		if n != tc.landed || (n < tc.write) != (err != nil) {
			t.Errorf("budget %d, file of %d bytes, a write of %d: %d landed (%v), want %d", tc.budget, tc.size, tc.write, n, err, tc.landed)
		}
	}
}

// A full disk is the disk's, not a process's: a restarted process (a new FS over the same
// Disk), another worker, and a process after a crash all find it full. Before, each FS had its
// own budget and a restart found space again.
func TestFullDiskStaysFullAcrossProcessesAndCrashes(t *testing.T) {
	for _, crash := range []faults.Kind{faults.Kill, faults.Power} {
		t.Run(string(crash), func(t *testing.T) {
			d := faults.NewDisk(faults.DiskOptions{})
			first := faults.New(d, &fillOn{fault: faults.Fault{Kind: faults.DiskFull, Bytes: faults.Block + 3}})
			if n, err := appendTo(t, first, "log", strings.Repeat("1", faults.Block+5)); n != faults.Block || !errors.Is(err, syscall_ENOSPC) {
				t.Fatalf("the filling write = %d, %v; want a block and ENOSPC", n, err)
			}
			other := faults.New(d, nil) // another worker, at the same time
			if n, err := appendTo(t, other, "other", "x"); n != 0 || !errors.Is(err, syscall_ENOSPC) || !errors.Is(err, faults.ErrInjected) {
				t.Fatalf("another worker's write = %d, %v; want 0 and an injected ENOSPC", n, err)
			}
			d.Crash(faults.Fault{Kind: crash}, rand.New(rand.NewPCG(1, 1)))
			restarted := faults.New(d, nil)
			if n, err := appendTo(t, restarted, "log", "abc"); n != 0 || !errors.Is(err, syscall_ENOSPC) {
				t.Fatalf("after a %s, a restarted process's write = %d, %v; want 0 and ENOSPC: the disk is still full", crash, n, err)
			}
			if full, until := d.Full(); !full || !until.IsZero() {
				t.Fatalf("Full() = %v, %v; want full for good", full, until)
			}
		})
	}
}

// diskfull@K:BYTES+DUR: space returns once DUR has passed on the disk's (virtual) clock, for
// every FS over the disk; until then the disk stays full.
func TestSpaceReturnsAfterTheDuration(t *testing.T) {
	clock := faults.NewClock(faults.Epoch)
	d := faults.NewDisk(faults.DiskOptions{Now: clock.Now})
	fsys := faults.New(d, &fillOn{fault: faults.Fault{Kind: faults.DiskFull, Bytes: 0, Dur: time.Minute}})
	if n, err := appendTo(t, fsys, "log", "a"); n != 0 || err == nil {
		t.Fatalf("the filling write = %d, %v; want 0 and ENOSPC", n, err)
	}
	clock.Advance(59 * time.Second)
	if full, until := d.Full(); !full || !until.Equal(faults.Epoch.Add(time.Minute)) {
		t.Fatalf("after 59s Full() = %v, %v; want full until a minute past the epoch", full, until)
	}
	if n, err := appendTo(t, faults.New(d, nil), "log", "b"); n != 0 || err == nil {
		t.Fatalf("after 59s a write = %d, %v; want ENOSPC still", n, err)
	}
	clock.Advance(time.Second)
	if n, err := appendTo(t, faults.New(d, nil), "log", "cd"); n != 2 || err != nil {
		t.Fatalf("after a minute a write = %d, %v; want it whole: space has returned", n, err)
	}
	if n, err := appendTo(t, fsys, "log", "ef"); n != 2 || err != nil {
		t.Fatalf("after a minute the filling process's write = %d, %v; want it whole", n, err)
	}
	if full, _ := d.Full(); full {
		t.Fatal("Full() after the duration = true")
	}
}

// A second diskfull while the disk is full leaves the room as it is and keeps it full until
// the later end: here, for good.
func TestASecondFillKeepsTheLaterEnd(t *testing.T) {
	clock := faults.NewClock(faults.Epoch)
	d := faults.NewDisk(faults.DiskOptions{Now: clock.Now})
	appendTo(t, faults.New(d, &fillOn{fault: faults.Fault{Kind: faults.DiskFull, Bytes: 2 * faults.Block, Dur: time.Minute}}), "a", "x")
	if n, _ := appendTo(t, faults.New(d, &fillOn{fault: faults.Fault{Kind: faults.DiskFull, Bytes: 100 * faults.Block}}), "b", strings.Repeat("y", 3*faults.Block)); n != faults.Block {
		t.Fatalf("under a second fill %d bytes landed, want the block left by the first", n)
	}
	clock.Advance(time.Hour)
	if full, until := d.Full(); !full || !until.IsZero() {
		t.Fatalf("Full() = %v, %v; want full for good", full, until)
	}
}

// An FS over another filesystem keeps the room itself, through the same type, for its own
// life; FSes over it (an FS over an FS) share it.
func TestFSOverAnotherFilesystemKeepsItsOwnBudget(t *testing.T) {
	mem := afero.NewMemMapFs()
	fsys := faults.New(mem, &fillOn{fault: faults.Fault{Kind: faults.DiskFull, Bytes: faults.Block, Dur: time.Minute}})
	if n, err := appendTo(t, fsys, "log", strings.Repeat("a", faults.Block+1)); n != faults.Block || err == nil {
		t.Fatalf("the filling write = %d, %v; want a block and ENOSPC", n, err)
	}
	if n, err := appendTo(t, faults.New(fsys, nil), "log", "c"); n != 0 || err == nil {
		t.Fatalf("through an FS over the FS: %d, %v; want ENOSPC: it shares the budget", n, err)
	}
	if n, err := appendTo(t, faults.New(mem, nil), "log", "d"); n != 1 || err != nil {
		t.Fatalf("through a new FS over the MemMapFs: %d, %v; want space: the budget is the FS's", n, err)
	}
}

// A disk rebuilt from its log (a derived crash state) starts with space.
func TestReplayStartsWithSpace(t *testing.T) {
	d := faults.NewDisk(faults.DiskOptions{})
	d.StartLog()
	appendTo(t, faults.New(d, &fillOn{fault: faults.Fault{Kind: faults.DiskFull}}), "log", "abc")
	if full, _ := d.Replay(d.LogLen(), faults.DiskOptions{}).Full(); full {
		t.Fatal("a replayed disk is full")
	}
}
