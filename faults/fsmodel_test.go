package faults_test

import (
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/faults"
)

// fsScenario is a short sequence of operations and, for each model, every state a power loss
// may leave of it by the model's definition (FSModel's doc): "name=content" pairs, sorted, one
// string per state ("" for an empty disk).
type fsScenario struct {
	name        string
	run         func(t *testing.T, d *faults.Disk, clock *time.Time)
	posix, ext4 []string
}

var fsScenarios = []fsScenario{{
	// ext4: the appends are delayed writes, which land as a prefix of them; POSIX keeps any
	// subset, so a later append without an earlier one (the gap reads as a zero byte).
	name: "appends to a log",
	run: func(t *testing.T, d *faults.Disk, _ *time.Time) {
		writeSynced(t, d, "log", "A")
		syncPath(t, d, "")
		appendTo(t, d, "log", "B")
		appendTo(t, d, "log", "C")
	},
	posix: []string{"log=A", "log=AB", "log=A\x00C"},
	ext4:  []string{"log=A", "log=AB", "log=ABC"},
}, {
	// Overwrites within the blocks a file has go in place, each on its own, in both models.
	name: "overwrites in place",
	run: func(t *testing.T, d *faults.Disk, _ *time.Time) {
		writeSynced(t, d, "f", "AAAA")
		syncPath(t, d, "")
		writeAt(t, d, "f", "B", 0)
		writeAt(t, d, "f", "C", 2)
	},
	posix: []string{"f=AAAA", "f=AACA", "f=BAAA"},
	ext4:  []string{"f=AAAA", "f=AACA", "f=BAAA", "f=BACA"},
}, {
	// A new snapshot written to a temporary file and renamed over the old one, with no fsync:
	// POSIX may keep the rename without the data (a zero-length snapshot); ext4's auto_da_alloc
	// writes the data before the rename commits.
	name: "replace via rename",
	run: func(t *testing.T, d *faults.Disk, _ *time.Time) {
		writeSynced(t, d, "snap", "v1")
		syncPath(t, d, "")
		writeFile(t, d, "snap.tmp", "v2", os.O_CREATE|os.O_WRONLY|os.O_TRUNC)
		rename(t, d, "snap.tmp", "snap")
	},
	posix: []string{"snap=", "snap=v1", "snap.tmp= snap=v1", "snap.tmp=v2 snap=v1", "snap=v2"},
	ext4:  []string{"snap=v1", "snap.tmp= snap=v1", "snap.tmp=v2 snap=v1", "snap=v2"},
}, {
	// Renamed to a name that did not exist, the data is not forced: ext4's zero-length window.
	name: "rename to a new name",
	run: func(t *testing.T, d *faults.Disk, _ *time.Time) {
		writeFile(t, d, "tmp", "v2", os.O_CREATE|os.O_WRONLY|os.O_TRUNC)
		rename(t, d, "tmp", "new")
	},
	posix: []string{"", "new=", "new=v2", "tmp=", "tmp=v2"},
	ext4:  []string{"", "new=", "new=v2", "tmp=", "tmp=v2"},
}, {
	// An fsync of a new file commits the transaction that created it: under ext4 its entry
	// survives without an fsync of the directory.
	name: "fsync of a new file",
	run: func(t *testing.T, d *faults.Disk, _ *time.Time) {
		writeSynced(t, d, "f", "x")
	},
	posix: []string{"", "f=x"},
	ext4:  []string{"f=x"},
}, {
	// A rename, then a write to another file and its fsync: ext4 commits the rename with the
	// write's transaction; POSIX keeps the rename only with an fsync of its directory.
	name: "a rename, then an fsync of another file",
	run: func(t *testing.T, d *faults.Disk, _ *time.Time) {
		writeSynced(t, d, "a", "1")
		writeSynced(t, d, "log", "x")
		syncPath(t, d, "")
		rename(t, d, "a", "b")
		f, err := d.OpenFile("log", os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte("y"))
		f.Sync()
		f.Close()
	},
	posix: []string{"a=1 log=xy", "b=1 log=xy"},
	ext4:  []string{"b=1 log=xy"},
}, {
	// Metadata operations survive in the order they were issued under ext4: never b without a.
	name: "two creates",
	run: func(t *testing.T, d *faults.Disk, _ *time.Time) {
		writeFile(t, d, "a", "", os.O_CREATE|os.O_WRONLY)
		writeFile(t, d, "b", "", os.O_CREATE|os.O_WRONLY)
	},
	posix: []string{"", "a=", "b="},
	ext4:  []string{"", "a=", "a= b="},
}, {
	// A file truncated to zero, rewritten and closed (replace via truncate), then another file
	// created: under ext4 the data is forced by the first commit after the close, so the second
	// file never survives beside an empty first.
	name: "replace via truncate",
	run: func(t *testing.T, d *faults.Disk, _ *time.Time) {
		writeSynced(t, d, "f", "old")
		syncPath(t, d, "")
		writeFile(t, d, "f", "new", os.O_WRONLY|os.O_TRUNC)
		writeFile(t, d, "g", "", os.O_CREATE|os.O_WRONLY)
	},
	posix: []string{"f=", "f= g=", "f=new", "f=new g=", "f=old", "f=old g="},
	ext4:  []string{"f=", "f=new", "f=new g=", "f=old"},
}, {
	// Under ext4 the journal commits at most 5 seconds after a transaction began: a create 6
	// seconds old survives.
	name: "a create 6 seconds old",
	run: func(t *testing.T, d *faults.Disk, clock *time.Time) {
		writeFile(t, d, "a", "", os.O_CREATE|os.O_WRONLY)
		*clock = clock.Add(6 * time.Second)
	},
	posix: []string{"", "a="},
	ext4:  []string{"a="},
}, {
	name: "a create 4 seconds old",
	run: func(t *testing.T, d *faults.Disk, clock *time.Time) {
		writeFile(t, d, "a", "", os.O_CREATE|os.O_WRONLY)
		*clock = clock.Add(4 * time.Second)
	},
	posix: []string{"", "a="},
	ext4:  []string{"", "a="},
}}

// Each model's crash states of each scenario, from a plain power loss and from power:subset
// under 200 seeds, are exactly the states its definition allows: none outside, and every one
// reached.
func TestFSModelsCrashStates(t *testing.T) {
	for _, sc := range fsScenarios {
		for _, m := range faults.FSModels() {
			want := sc.posix
			if m == faults.Ext4Ordered {
				want = sc.ext4
			}
			t.Run(sc.name+"/"+string(m), func(t *testing.T) {
				got := map[string]bool{}
				for seed := range uint64(201) {
					d, _ := fsScenarioDisk(t, sc, m)
					f := faults.Fault{Kind: faults.Power, Mode: "subset"}
					if seed == 200 {
						f.Mode = ""
					}
					d.Crash(f, rand.New(rand.NewPCG(seed, 3)))
					got[state(t, d)] = true
					// What a power loss leaves is durable: another one changes nothing.
					before := state(t, d)
					d.Crash(faults.Fault{Kind: faults.Power}, nil)
					if after := state(t, d); after != before {
						t.Fatalf("seed %d: a second power loss changed %q to %q", seed, before, after)
					}
				}
				want = slices.Sorted(slices.Values(want))
				if keys := sortedKeys(got); !slices.Equal(keys, want) {
					t.Fatalf("crash states %q, want %q", keys, want)
				}
			})
		}
	}
}

// The plain power loss of each model keeps the least its definition allows: the first state
// of each list above is not it in general, so each scenario names it.
func TestFSModelsPlainPowerLoss(t *testing.T) {
	plain := map[string][2]string{ // scenario: posix, ext4
		"appends to a log":       {"log=A", "log=A"},
		"replace via rename":     {"snap=v1", "snap=v1"},
		"fsync of a new file":    {"", "f=x"},
		"replace via truncate":   {"f=old", "f=old"},
		"a create 6 seconds old": {"", "a="},
	}
	for _, sc := range fsScenarios {
		want, ok := plain[sc.name]
		if !ok {
			continue
		}
		for i, m := range faults.FSModels() {
			d, _ := fsScenarioDisk(t, sc, m)
			d.Crash(faults.Fault{Kind: faults.Power}, nil)
			if got := state(t, d); got != want[i] {
				t.Errorf("%s, %s: a plain power loss leaves %q, want %q", sc.name, m, got, want[i])
			}
		}
	}
}

// Under ext4-ordered a torn write is an overwrite in place landing up to a sector boundary (or
// with garbage after it): a delayed append lands whole or not at all, so it is never torn.
func TestExt4TearsOnlyOverwritesInPlace(t *testing.T) {
	disk := func(model faults.FSModel) *faults.Disk {
		d := faults.NewDisk(faults.DiskOptions{Sector: 4, Model: model})
		writeSynced(t, d, "f", "aaaaaaaa")
		syncPath(t, d, "")
		return d
	}
	for _, model := range faults.FSModels() {
		d := disk(model)
		appendTo(t, d, "f", "bbbbbbbb")
		if got, want := d.Tearable("prefix"), model == faults.POSIX; got != want {
			t.Errorf("%s, an append: Tearable(prefix) = %v, want %v", model, got, want)
		}
	}
	d := disk(faults.Ext4Ordered)
	writeAt(t, d, "f", "BBBBBB", 1)
	if !d.Tearable("prefix") || !d.Tearable("garbage") {
		t.Fatal("ext4-ordered, an overwrite in place across a sector boundary: not tearable")
	}
	msg := d.Crash(faults.Fault{Kind: faults.Torn, Mode: "prefix"}, rand.New(rand.NewPCG(1, 1)))
	if got := state(t, d); got != "f=aBBBaaaa" {
		t.Fatalf("%s: %q, want the overwrite landed up to byte 4", msg, got)
	}
	if want := "power lost (ext4-ordered): 0 of 0 metadata operations since the last commit kept, 0 of 1 writes not fsynced kept; torn overwrite of f: bytes 1..4 landed, 4..7 kept their old content"; msg != want {
		t.Fatalf("the crash says %q, want %q", msg, want)
	}
}

// An ext4-ordered crash is a function of the disk and the random source, and replaying the
// disk's log, crash included, rebuilds it exactly: what derived crash states rest on.
func TestExt4CrashIsDeterministicAndReplays(t *testing.T) {
	sc := fsScenarios[slices.IndexFunc(fsScenarios, func(sc fsScenario) bool { return sc.name == "replace via truncate" })]
	for seed := range uint64(16) {
		a, _ := fsScenarioDisk(t, sc, faults.Ext4Ordered)
		b, _ := fsScenarioDisk(t, sc, faults.Ext4Ordered)
		f := faults.Fault{Kind: faults.Power, Mode: "subset"}
		ma := a.Crash(f, rand.New(rand.NewPCG(seed, 1)))
		mb := b.Crash(f, rand.New(rand.NewPCG(seed, 1)))
		if ma != mb || state(t, a) != state(t, b) {
			t.Fatalf("seed %d: %q (%s) and %q (%s) from the same source", seed, state(t, a), ma, state(t, b), mb)
		}
		if got, want := state(t, a.Replay(a.LogLen(), faults.DiskOptions{})), state(t, a); got != want {
			t.Fatalf("seed %d: replay %q, disk %q", seed, got, want)
		}
	}
}

// TearableAt answers under ext4-ordered what Tearable answers on a replay at each log length,
// over a log where each mode comes and goes.
func TestExt4TearableAtIsTearableOnEachReplay(t *testing.T) {
	d := faults.NewDisk(faults.DiskOptions{Sector: 4, Model: faults.Ext4Ordered})
	d.StartLog()
	writeSynced(t, d, "log", "first record")
	syncPath(t, d, "")
	appendTo(t, d, "log", "second")
	writeAt(t, d, "log", "FIRST", 0)
	writeSynced(t, d, "log", "")
	writeFile(t, d, "tmp", "view", os.O_CREATE|os.O_WRONLY)
	rename(t, d, "tmp", "view")
	syncPath(t, d, "")
	checkTearableAt(t, d)
}

// A model's name parses back to it; anything else is refused, naming the models.
func TestParseFSModel(t *testing.T) {
	for _, m := range faults.FSModels() {
		if got, err := faults.ParseFSModel(m.String()); err != nil || got != m {
			t.Errorf("ParseFSModel(%q) = %q, %v", m, got, err)
		}
	}
	if got, err := faults.ParseFSModel(""); err != nil || got != faults.POSIX {
		t.Errorf(`ParseFSModel("") = %q, %v; want posix`, got, err)
	}
	if _, err := faults.ParseFSModel("xfs"); err == nil || !strings.Contains(err.Error(), "posix or ext4-ordered") {
		t.Errorf("ParseFSModel(xfs): %v", err)
	}
}

// fsScenarioDisk runs sc on a new disk of model m whose clock it returns.
func fsScenarioDisk(t *testing.T, sc fsScenario, m faults.FSModel) (*faults.Disk, *time.Time) {
	t.Helper()
	clock := faults.Epoch
	d := faults.NewDisk(faults.DiskOptions{Model: m, Pending: true, Now: func() time.Time { return clock }})
	d.StartLog()
	sc.run(t, d, &clock)
	return d, &clock
}

// state is the disk's files as "name=content" pairs, sorted and joined by spaces.
func state(t *testing.T, d *faults.Disk) string {
	t.Helper()
	var pairs []string
	for p, c := range tree(t, d) {
		pairs = append(pairs, p+"="+c)
	}
	slices.Sort(pairs)
	return strings.Join(pairs, " ")
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// writeFile opens name with flag, writes body (if any) and closes it, without an fsync.
func writeFile(t *testing.T, d *faults.Disk, name, body string, flag int) {
	t.Helper()
	f, err := d.OpenFile(name, flag, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		if _, err := f.WriteString(body); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func writeAt(t *testing.T, d *faults.Disk, name, body string, off int64) {
	t.Helper()
	f, err := d.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte(body), off); err != nil {
		t.Fatal(err)
	}
}

func rename(t *testing.T, d *faults.Disk, from, to string) {
	t.Helper()
	if err := d.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}
