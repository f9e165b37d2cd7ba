package faults_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/spf13/afero"
	"pgregory.net/rapid"
)

var subset = faults.Fault{Kind: faults.Power, Mode: "subset"}

// twoAppends returns a disk whose log holds "A" durably, then "B" and "C" appended without an
// fsync between or after them.
func twoAppends(t *testing.T) *faults.Disk {
	t.Helper()
	d := faults.NewDisk(faults.DiskOptions{Pending: true})
	d.StartLog()
	writeSynced(t, d, "log", "A")
	syncPath(t, d, "")
	f, err := d.OpenFile("log", os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("B"))
	f.Write([]byte("C"))
	f.Close()
	return d
}

// A power loss that keeps a subset of two un-fsynced appends keeps one of them: the first (in
// order) or the second without the first (a reordering: the gap reads as a zero byte). Never
// neither (a plain power loss) nor both (a kill), and every seed gives one of the two.
func TestSubsetKeepsALaterWriteWithoutAnEarlierOne(t *testing.T) {
	if !twoAppends(t).Tearable("subset") {
		t.Fatal(`Tearable("subset") = false with two appends pending`)
	}
	seen := map[string]int{}
	for seed := range uint64(64) {
		d := twoAppends(t)
		msg := d.Crash(subset, rand.New(rand.NewPCG(seed, 9)))
		got := tree(t, d)["log"]
		seen[got]++
		if !strings.HasPrefix(msg, "power lost, keeping 1 of 2 operations not fsynced: kept write log +1B @") {
			t.Fatalf("seed %d: %q", seed, msg)
		}
		if d.Tearable("subset") {
			t.Fatal("after the power loss something is still pending")
		}
		// The outcome is durable: a later plain power loss keeps it.
		d.Crash(faults.Fault{Kind: faults.Power}, nil)
		if again := tree(t, d)["log"]; again != got {
			t.Fatalf("seed %d: a later power loss changed %q to %q", seed, got, again)
		}
	}
	if len(seen) != 2 || seen["AB"] == 0 || seen["A\x00C"] == 0 {
		t.Fatalf("outcomes over 64 seeds: %v, want AB and A\\0C only", seen)
	}
}

// The same crash with the same source gives the same disk; and replaying the disk's log, crash
// included, rebuilds it exactly, which is what lets a derived crash state equal a re-run.
func TestSubsetIsDeterministicAndReplays(t *testing.T) {
	for seed := range uint64(16) {
		a, b := twoAppends(t), twoAppends(t)
		a.Crash(subset, rand.New(rand.NewPCG(seed, 1)))
		b.Crash(subset, rand.New(rand.NewPCG(seed, 1)))
		if got, want := tree(t, a), tree(t, b); !equalTrees(got, want) {
			t.Fatalf("seed %d: %v and %v from the same source", seed, got, want)
		}
		if got, want := tree(t, a.Replay(a.LogLen(), faults.DiskOptions{})), tree(t, a); !equalTrees(got, want) {
			t.Fatalf("seed %d: replay %v, disk %v", seed, got, want)
		}
	}
}

// Directory operations are kept or lost one by one too, a rename within a directory whole: a
// snapshot written to a temporary file, fsynced and renamed over the old one without a
// directory fsync comes back as the old snapshot with or without the temporary file, or as the
// new snapshot; never as a missing snapshot.
func TestSubsetKeepsDirectoryOperationsOneByOne(t *testing.T) {
	setup := func() *faults.Disk {
		d := faults.NewDisk(faults.DiskOptions{Pending: true})
		writeSynced(t, d, "snap", "v1")
		syncPath(t, d, "")
		writeSynced(t, d, "snap.tmp", "v2") // entry added: pending
		if err := d.Rename("snap.tmp", "snap"); err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := setup(); !d.Tearable("subset") {
		t.Fatal(`Tearable("subset") = false with a create and a rename pending`)
	}
	seen := map[string]bool{}
	for seed := range uint64(64) {
		d := setup()
		d.Crash(subset, rand.New(rand.NewPCG(seed, 5)))
		got := tree(t, d)
		var keys []string
		for k, v := range got {
			keys = append(keys, k+"="+v)
		}
		slices.Sort(keys)
		seen[strings.Join(keys, " ")] = true
	}
	want := map[string]bool{"snap.tmp=v2 snap=v1": true, "snap=v2": true}
	if len(seen) != len(want) {
		t.Fatalf("outcomes %v, want %v", seen, want)
	}
	for k := range want {
		if !seen[k] {
			t.Fatalf("outcomes %v, want %v", seen, want)
		}
	}
}

// Nothing pending, or nothing a power loss could leave reachable, and a subset crash has
// nothing to keep: it is a plain power loss, and Tearable says so.
func TestSubsetWithNothingPending(t *testing.T) {
	d := faults.NewDisk(faults.DiskOptions{Pending: true})
	writeSynced(t, d, "a", "1")
	syncPath(t, d, "")
	f, _ := d.OpenFile("gone", os.O_CREATE|os.O_WRONLY, 0o644)
	f.Write([]byte("never reachable")) // its file is removed, and the removal made durable
	f.Close()
	d.Remove("gone")
	syncPath(t, d, "")
	if d.Tearable("subset") {
		t.Fatal(`Tearable("subset") = true with nothing a power loss could keep`)
	}
	msg := d.Crash(subset, rand.New(rand.NewPCG(1, 1)))
	if !strings.Contains(msg, "nothing was pending") || !equalTrees(tree(t, d), map[string]string{"a": "1"}) {
		t.Fatalf("%s: %v", msg, tree(t, d))
	}
}

// Whatever operations ran, a subset power loss leaves every file holding its durable bytes with
// some of the writes and truncations issued since its last fsync applied, in order, under
// some name, and nothing else: no bytes invented.
func TestSubsetKeepsOnlyWhatWasIssued(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		disk := faults.NewDisk(faults.DiskOptions{Pending: true})
		m := &model{root: newMdir()}
		fsys := faults.New(disk, nil)
		steps := rapid.IntRange(1, 14).Draw(rt, "steps")
		var objs []*mobj
		for i := 0; i < steps; i++ {
			step(rt, fsys, m)
			objs = collect(m.root, objs)
		}
		// Each object's possible contents: its durable bytes with any ordered subset of the
		// operations since, which the model replays from its history.
		possible := map[string]bool{}
		for _, o := range objs {
			for _, c := range o.outcomes() {
				possible[c] = true
			}
		}
		disk.Crash(subset, rand.New(rand.NewPCG(rapid.Uint64().Draw(rt, "seed"), 0)))
		for p, content := range tree(t, disk) {
			if !strings.HasSuffix(p, "/") && !possible[content] {
				rt.Fatalf("after a subset power loss %s holds %q, which no subset of its pending writes gives", p, content)
			}
		}
		// And the disk is consistent: what a process sees is what is durable.
		before := tree(t, disk)
		disk.Crash(faults.Fault{Kind: faults.Power}, nil)
		if after := tree(t, disk); !equalTrees(before, after) {
			rt.Fatalf("a plain power loss after the subset one changed %v to %v", before, after)
		}
	})
}

// collect adds the file objects under d to objs, once each.
func collect(d *mobj, objs []*mobj) []*mobj {
	for _, o := range d.kids {
		if o.dir {
			objs = collect(o, objs)
		} else if !slices.Contains(objs, o) {
			objs = append(objs, o)
		}
	}
	return objs
}

// outcomes lists what o may hold after a power loss that keeps a subset of what was written to
// it since its last fsync.
func (o *mobj) outcomes() []string {
	return pendingOutcomes(o.dur, o.hist)
}

// pendingOutcomes applies every ordered subset of ops to base.
func pendingOutcomes(base []byte, ops []mop) []string {
	var out []string
	for mask := 0; mask < 1<<len(ops); mask++ {
		data := append([]byte(nil), base...)
		for i, op := range ops {
			if mask&(1<<i) == 0 {
				continue
			}
			if op.trunc {
				for int64(len(data)) < op.off {
					data = append(data, 0)
				}
				data = data[:op.off]
				continue
			}
			for int64(len(data)) < op.off+int64(len(op.data)) {
				data = append(data, 0)
			}
			copy(data[op.off:], op.data)
		}
		out = append(out, string(data))
	}
	return out
}

var _ afero.Fs = (*faults.Disk)(nil)

// TearableAt answers, from one replay, what Tearable answers on a replay at each log length:
// here over a log that appends, fsyncs, renames and removes, where each mode comes and goes.
func TestTearableAtIsTearableOnEachReplay(t *testing.T) {
	d := faults.NewDisk(faults.DiskOptions{Sector: 4, Pending: true})
	d.StartLog()
	fsys := faults.New(d, nil)
	write := func(name, b string, sync bool) {
		f, err := fsys.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte(b))
		if sync {
			f.Sync()
		}
		f.Close()
	}
	syncDir := func() {
		dir, _ := fsys.Open(".")
		dir.Sync()
		dir.Close()
	}
	write("log", "first record", true)
	syncDir()
	write("log", "second record", false)
	write("log", "x", false)
	write("tmp", "whole new file", true)
	fsys.Rename("tmp", "view")
	syncDir()
	write("log", "", true)
	fsys.Remove("view")
	write("other", "1234567890", false)
	checkTearableAt(t, d)
}

// A power loss keeping a subset needs the operations a disk keeps only when asked to
// (DiskOptions.Pending): on another disk it is a misuse, and panics rather than quietly
// keeping nothing.
func TestSubsetNeedsPending(t *testing.T) {
	d := faults.NewDisk(faults.DiskOptions{})
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "DiskOptions.Pending") {
			t.Fatalf("recovered %v; want a panic naming DiskOptions.Pending", r)
		}
	}()
	d.Crash(faults.Fault{Kind: faults.Power, Mode: "subset"}, nil)
}

// checkTearableAt checks that d.TearableAt answers, at every length of d's log and for every
// mode, what Tearable answers on a replay of the log to that length, and that each mode comes
// and goes over the log (else the check compares nothing).
func checkTearableAt(t *testing.T, d *faults.Disk) {
	t.Helper()
	modes := []string{"prefix", "garbage", "subset"}
	at := make([]int, d.LogLen()+1)
	for i := range at {
		at[i] = i
	}
	got := d.TearableAt(at, modes)
	some := map[string]bool{}
	for i, n := range at {
		for j, m := range modes {
			if want := d.Replay(n, faults.DiskOptions{}).Tearable(m); got[i][j] != want {
				t.Errorf("at %d mutations, mode %s: TearableAt says %v, Tearable on a replay %v", n, m, got[i][j], want)
			}
			some[fmt.Sprintf("%s %v", m, got[i][j])] = true
		}
	}
	for _, m := range modes {
		if !some[m+" true"] || !some[m+" false"] {
			t.Errorf("mode %s is never both tearable and not over the log: the test compares nothing", m)
		}
	}
}
