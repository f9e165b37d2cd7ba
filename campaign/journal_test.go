package campaign

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/reference"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/spf13/afero"
)

// errCrashed is what crashAt panics with: the process dies there.
var errCrashed = errors.New("crashed by the test")

// crashAt is a faults.Injector that crashes the process at its nth operation, before the
// operation happens.
type crashAt struct{ n, ops int }

func (c *crashAt) Inject(faults.Op) *faults.Fault {
	if c.ops++; c.ops == c.n {
		panic(errCrashed)
	}
	return nil
}

// untilCrash runs f, which uses fsys, and reports whether it was crashed.
func untilCrash(f func()) (crashed bool) {
	defer func() {
		if r := recover(); r != nil {
			if r != errCrashed {
				panic(r)
			}
			crashed = true
		}
	}()
	f()
	return false
}

// journalCampaign is the small campaign the crash tests journal: random schedules, so that the
// journal holds failures with traces and diffs as well as passes.
func journalCampaign(t *testing.T) *Campaign {
	t.Helper()
	c := &Campaign{
		Targets: []Target{{Name: "reference/act-then-save", New: func() harness.Target {
			return reference.New(reference.ActThenSave, reference.Onboarding())
		}}},
		Options: Options{Faults: []faults.Kind{faults.Kill, faults.Power, faults.Torn}, Mode: Random, Cases: 6},
	}
	c.Options.Seed = 7 // three pass, three fail
	return c
}

// runOn runs the campaign with its report directory "D" on fsys, resuming st if it is not nil,
// and returns report.json's content without its wall-clock fields and trailer.
func runOn(t *testing.T, c *Campaign, fsys afero.Fs, st *JournalState) (string, *reports.Report) {
	t.Helper()
	rep, err := c.Run(context.Background(), RunOptions{FS: fsys, Dir: "D", Resume: st})
	if err != nil {
		t.Fatal(err)
	}
	b, err := rep.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	rep.Cases, rep.Source = stateCases(t, rep), nil
	if b, err = reports.Comparable(b); err != nil {
		t.Fatal(err)
	}
	return string(b), rep
}

// stateCases returns the cases of a journal or a report, in campaign order.
func stateCases(t *testing.T, of interface {
	Each(func(*reports.Case) error) error
}) []reports.Case {
	t.Helper()
	var cases []reports.Case
	if err := of.Each(func(c *reports.Case) error {
		cases = append(cases, *c)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return cases
}

// readState reads the journal D/cases.jsonl of fsys, returning nil if there is none.
func readState(t *testing.T, fsys afero.Fs) *JournalState {
	t.Helper()
	st, err := ReadJournal(fsys, JournalPath("D"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// The journal, written on chaoskit's own fault filesystem and crashed at every one of its
// operations (killed, power lost, the last write torn as a prefix or with a garbage tail), keeps
// every case it fsynced; resuming from what survived gives the report of an uninterrupted run.
// So does a second crash while the resumed run cuts a torn line off the journal.
func TestJournalSurvivesCrashes(t *testing.T) {
	camp := journalCampaign(t)
	want, whole := runOn(t, camp, faults.NewDisk(faults.DiskOptions{}), nil)
	if whole.Summary.Targets[0].Failed == 0 || whole.Summary.Targets[0].Passed == 0 {
		t.Fatalf("the campaign should have both passes and failures: %+v", whole.Summary.Targets[0].Stats)
	}
	// journal writes the uninterrupted run's journal on disk through the fault layer, crashing
	// at operation n, and returns how many cases it had appended and fsynced by then. It
	// appends them in batches of 1, 2 and 3, as the journal writer's group commit does, so that
	// a crash tears a write of one line or of several.
	journal := func(disk *faults.Disk, n int) (synced int, crashed bool) {
		fsys := faults.New(disk, &crashAt{n: n})
		crashed = untilCrash(func() {
			j, err := camp.openJournal(RunOptions{FS: fsys, Dir: "D"})
			if err != nil {
				t.Fatal(err)
			}
			for size := 1; synced < len(whole.Cases); size = size%3 + 1 {
				var batch []*reports.Case
				for i := synced; i < min(synced+size, len(whole.Cases)); i++ {
					batch = append(batch, &whole.Cases[i])
				}
				if err := j.append(batch...); err != nil {
					t.Fatal(err)
				}
				synced += len(batch)
			}
		})
		return synced, crashed
	}
	crashes := []faults.Fault{{Kind: faults.Kill}, {Kind: faults.Power}, {Kind: faults.Torn}, {Kind: faults.Torn, Mode: "garbage"}}
	points, tornTails := 0, 0
	for n := 1; ; n++ {
		if _, crashed := journal(faults.NewDisk(faults.DiskOptions{}), n); !crashed {
			break
		}
		points++
		for _, crash := range crashes {
			// Crash again at operation m of the resumed run's opening of the journal (m = 0: no
			// second crash).
			for m := 0; ; m++ {
				disk := faults.NewDisk(faults.DiskOptions{})
				synced, _ := journal(disk, n)
				disk.Crash(crash, rand.New(rand.NewPCG(uint64(n), 1)))
				st := readState(t, disk)
				if st != nil && st.Len() < synced {
					t.Fatalf("crash %s at operation %d: the journal kept %d cases of the %d fsynced", crash.Kind, n, st.Len(), synced)
				}
				if st == nil && synced > 0 {
					t.Fatalf("crash %s at operation %d: the journal is gone, with %d cases fsynced", crash.Kind, n, synced)
				}
				if m > 0 {
					if st == nil {
						break
					}
					again := untilCrash(func() {
						if _, err := openJournal(faults.New(disk, &crashAt{n: m}), JournalPath("D"), st.size); err != nil {
							t.Fatal(err)
						}
					})
					if !again {
						break
					}
					disk.Crash(crash, rand.New(rand.NewPCG(uint64(n), uint64(m))))
					st = readState(t, disk)
				}
				if st != nil {
					if fi, _ := disk.Stat(JournalPath("D")); fi.Size() > st.size {
						tornTails++
					}
				}
				if got, _ := runOn(t, camp, disk, st); got != want {
					t.Fatalf("crash %s at operation %d (then %d): the resumed report differs from the uninterrupted run's", crash.Kind, n, m)
				}
				if after := readState(t, disk); after == nil || after.Len() != len(whole.Cases) {
					t.Fatalf("crash %s at operation %d (then %d): the resumed journal does not hold every case", crash.Kind, n, m)
				}
				if m == 0 && crash.Kind == faults.Kill {
					break // a kill leaves nothing torn to cut off
				}
			}
		}
	}
	// Creating the directory and the header take 7 operations, each batch of cases 2.
	batches := 0
	for done, size := 0, 1; done < len(whole.Cases); size = size%3 + 1 {
		done += size
		batches++
	}
	if points != 7+2*batches || tornTails == 0 {
		t.Fatalf("%d crash points (want %d), %d torn tails", points, 7+2*batches, tornTails)
	}
}

// The journal writer journals every case it is given, in order, and reports an error in
// writing the journal when it is closed.
func TestJournalWriter(t *testing.T) {
	disk := faults.NewDisk(faults.DiskOptions{})
	j, err := journalCampaign(t).openJournal(RunOptions{FS: disk, Dir: "D"})
	if err != nil {
		t.Fatal(err)
	}
	w := newJournalWriter(j, map[string]int{}, 0)
	var want []string
	for i := range 3000 {
		c := &reports.Case{ID: fmt.Sprint("t:kill@", i), Index: i}
		want = append(want, c.ID)
		w.add(c)
	}
	if err := w.close(); err != nil {
		t.Fatal(err)
	}
	st := readState(t, disk)
	var got []string
	for _, c := range stateCases(t, st) {
		got = append(got, c.ID)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("journaled %d cases, want %d in order", len(got), len(want))
	}

	// The disk fills up at the first append, with no block free: what is left of the journal's
	// first block holds one line and a bit. The error names the journal, and the line that
	// fitted is journaled, however the cases were batched.
	cases := make([]reports.Case, 10)
	for i := range cases {
		cases[i] = reports.Case{ID: fmt.Sprint("t:kill@", i), Index: i, Reason: strings.Repeat("r", faults.Block/2)}
	}
	disk = faults.NewDisk(faults.DiskOptions{})
	fill := &fillAt{n: 2} // the header is the first write
	if j, err = journalCampaign(t).openJournal(RunOptions{FS: faults.New(disk, fill), Dir: "D"}); err != nil {
		t.Fatal(err)
	}
	w = newJournalWriter(j, map[string]int{}, 0)
	for i := range cases {
		w.add(&cases[i])
	}
	if err := w.close(); err == nil || !strings.Contains(err.Error(), "D/cases.jsonl: write D/cases.jsonl: no space left on device") {
		t.Fatalf("close: %v", err)
	}
	if st := readState(t, disk); st.Len() != 1 {
		t.Fatalf("%d cases journaled, want the one that fitted", st.Len())
	}
}

// fillAt is an Injector that fills the disk at the nth write, leaving room for bytes more.
type fillAt struct {
	n, writes int
	bytes     int64
}

func (f *fillAt) Inject(op faults.Op) *faults.Fault {
	if op.Kind == faults.OpWrite {
		if f.writes++; f.writes == f.n {
			return &faults.Fault{Kind: faults.DiskFull, Bytes: f.bytes}
		}
	}
	return nil
}

// writeLines writes a journal of the given lines into a new report directory.
func writeLines(t *testing.T, lines ...string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, journalName), []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// journalLines returns the lines of the journal of a finished run, newlines kept.
func journalLines(t *testing.T) []string {
	fsys := afero.NewMemMapFs()
	runOn(t, journalCampaign(t), fsys, nil)
	b, err := afero.ReadFile(fsys, JournalPath("D"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.SplitAfter(string(b), "\n")
}

// A torn or garbage last line is ignored and cut off before the resumed run appends; a
// malformed line with cases after it is an error naming the file and the line.
func TestJournalTornAndMalformedLines(t *testing.T) {
	lines := journalLines(t)
	head, c1, c2, c3 := lines[0], lines[1], lines[2], lines[3]
	for _, tc := range []struct {
		name  string
		lines []string
		cases int
	}{
		{"no newline", []string{head, c1, c2, c3[:len(c3)-1]}, 2},
		{"torn prefix", []string{head, c1, c2, c3[:40]}, 2},
		{"garbage tail", []string{head, c1, c2[:30], "\x00\xff{\n", "garbage\n", "}"}, 1},
		{"leading zero", []string{head, c1, strings.Replace(c2, `"index":`, `"index":0`, 1)}, 1},
		{"escaped differently", []string{head, c1, strings.Replace(c2, `"target"`, `"\u0074arget"`, 1)}, 1},
		{"unknown field", []string{head, c1, strings.Replace(c2, `"index"`, `"indexx"`, 1)}, 1},
		{"header only", []string{head}, 0},
		{"a case twice", []string{head, c1, c2, c1}, 2},
	} {
		st, err := ReadJournal(afero.NewOsFs(), filepath.Join(writeLines(t, tc.lines...), journalName))
		intact := strings.Join(tc.lines, "")
		if tc.name != "a case twice" {
			intact = strings.Join(lines[:tc.cases+1], "")
		}
		if err != nil || st.Len() != tc.cases || st.size != int64(len(intact)) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	for _, tc := range []struct {
		name  string
		lines []string
		line  int
		want  string
	}{
		{"garbage line", []string{head, c1, "garbage\n", c3}, 3, "not a case, yet cases follow it"},
		{"torn line", []string{head, c1[:50], c2, c3}, 2, "not a case, yet cases follow it"},
		{"no header", []string{c1, c2}, 1, "not a chaoskit journal header"},
		{"other version", []string{strings.Replace(head, journalSchema, "chaoskit.journal/v9", 1), c1}, 1, `journal format is "chaoskit.journal/v9"`},
		{"empty", nil, 0, "empty"},
	} {
		path := filepath.Join(writeLines(t, tc.lines...), journalName)
		_, err := ReadJournal(afero.NewOsFs(), path)
		var je *JournalError
		if !errors.As(err, &je) || je.Path != path || je.Line != tc.line || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want a JournalError at %s line %d saying %q", tc.name, err, path, tc.line, tc.want)
		}
	}
}
