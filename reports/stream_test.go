package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/afero"
)

// streamed returns r with its cases behind a Source, as a report read back from a journal has
// them.
func streamed(r *Report) *Report {
	s := *r
	cases := r.Cases
	s.Cases = nil
	s.Source = func(fn func(*Case) error) error {
		for i := range cases {
			c := cases[i] // a copy: a source hands out cases of its own
			if err := fn(&c); err != nil {
				return err
			}
		}
		return nil
	}
	return &s
}

// A report whose cases come from a Source writes, renders and summarises exactly as the same
// report with its cases in memory, and its JSON is encoding/json's.
func TestSourceRendersAsCases(t *testing.T) {
	shuffled := demoReport(t)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled.Cases), func(i, j int) {
		shuffled.Cases[i], shuffled.Cases[j] = shuffled.Cases[j], shuffled.Cases[i]
	}) // the targets' cases interleaved: JUnit groups them by suite all the same
	shuffled.Summarize(golden(shuffled))
	for name, r := range map[string]*Report{"demo": demoReport(t), "random": randomReport(t), "shuffled": shuffled,
		"empty": {Schema: Schema}, "no cases": {Schema: Schema, Cases: []Case{}}} {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			t.Fatal(err)
		}
		got, err := r.Marshal()
		if err != nil || !bytes.Equal(withoutTrailer(t, got), want.Bytes()) {
			t.Errorf("%s: Marshal, but for its trailer, differs from encoding/json (%v)", name, err)
		}
		s := streamed(r)
		for format, write := range map[string]func(*Report, io.Writer) error{
			"json": (*Report).WriteJSON, "md": (*Report).Markdown, "junit": (*Report).JUnit, "html": (*Report).HTML,
		} {
			if name == "no cases" && format == "json" {
				continue // a source of no cases is written as no cases, null
			}
			if a, b := render(t, r, write), render(t, s, write); !bytes.Equal(a, b) {
				t.Errorf("%s: %s from a source differs from %s from the cases", name, format, format)
			}
		}
		sum := r.Summary
		if err := s.Summarize(golden(r)); err != nil || !reflect.DeepEqual(s.Summary, sum) {
			t.Errorf("%s: the summary of the source differs (%v)", name, err)
		}
	}
}

func golden(r *Report) map[string]int {
	g := map[string]int{}
	for _, t := range r.Summary.Targets {
		g[t.Target] = t.GoldenBeats
	}
	return g
}

// An error in reading the cases of a source reaches the caller of every writer, and WriteDir
// leaves no file behind for it.
func TestSourceErrors(t *testing.T) {
	bad := errors.New("journal D/cases.jsonl line 3: torn")
	r := streamed(randomReport(t))
	inner := r.Source
	r.Source = func(fn func(*Case) error) error {
		n := 0
		return inner(func(c *Case) error {
			if n++; n == 700 {
				return bad
			}
			return fn(c)
		})
	}
	for _, write := range []func(*Report, io.Writer) error{(*Report).WriteJSON, (*Report).Markdown, (*Report).JUnit, (*Report).HTML} {
		if err := write(r, io.Discard); !errors.Is(err, bad) {
			t.Errorf("error %v, want %v", err, bad)
		}
	}
	if err := r.Summarize(nil); !errors.Is(err, bad) {
		t.Errorf("Summarize: %v", err)
	}
	fsys := afero.NewMemMapFs()
	written, err := WriteDir(fsys, "D", r, nil)
	if !errors.Is(err, bad) || len(written) != 0 {
		t.Errorf("WriteDir wrote %v, error %v", written, err)
	}
	if names, _ := afero.ReadDir(fsys, "D"); len(names) != 0 {
		t.Errorf("WriteDir left %d files", len(names))
	}
}

// writeRandomReport writes randomReport, with a wall-clock duration, to a report.json in a new
// directory, and returns its path and the report Load reads back from it.
func writeRandomReport(t *testing.T) (string, *Report) {
	t.Helper()
	r := randomReport(t)
	r.DurationMs = 1234.5
	path := filepath.Join(t.TempDir(), "report.json")
	if err := r.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	whole, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, whole
}

// A Reader reads a report case by case as Load reads it whole; LoadHead reads all but the cases.
func TestReaderAndLoadHead(t *testing.T) {
	path, whole := writeRandomReport(t)
	rd, err := OpenReport(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	if rd.Head.DurationMs != 0 || rd.Head.Seed != 3 {
		t.Errorf("head before the cases: %+v", rd.Head)
	}
	var cases []Case
	for {
		c, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, *c)
	}
	if !reflect.DeepEqual(cases, whole.Cases) || rd.Head.DurationMs != 1234.5 {
		t.Errorf("%d cases read one by one, %d whole; duration %v", len(cases), len(whole.Cases), rd.Head.DurationMs)
	}
	head, err := LoadHead(path)
	if err != nil {
		t.Fatal(err)
	}
	want := *whole
	want.Cases, want.DurationMs = nil, 0
	if !reflect.DeepEqual(head, &want) {
		t.Errorf("LoadHead = %+v\nwant %+v", head, &want)
	}
	// A report damaged in its cases is refused from its head on, naming the file; read as a
	// stream, with nothing to verify it by first, its damaged case is an error after the cases
	// before it.
	b, _ := os.ReadFile(path)
	damaged := filepath.Join(t.TempDir(), "damaged.json")
	os.WriteFile(damaged, []byte(strings.Replace(string(b), `"index": 700,`, `"index": "seven hundred",`, 1)), 0o644)
	for name, open := range map[string]func(string) error{
		"LoadHead":   func(p string) error { _, err := LoadHead(p); return err },
		"OpenReport": func(p string) error { _, err := OpenReport(p); return err },
		"Load":       func(p string) error { _, err := Load(p); return err },
	} {
		if err := open(damaged); !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), damaged) {
			t.Errorf("%s of a report damaged in its cases: %v", name, err)
		}
	}
	rd, err = NewReader(bytes.NewReader(b[:len(b)/2]))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		_, err := rd.Next()
		if err != nil {
			if n == 0 || !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "ends before its trailer") {
				t.Errorf("a report cut in half, read as a stream, after %d cases: %v", n, err)
			}
			break
		}
		n++
	}
	for _, tail := range []string{`  "seed": 4` + "\n}\n", `  "options": {"mode": "random", "faults": ["kill"]}` + "\n}\n", "\n}\n}\n"} {
		b := slices.Clone(b)
		b = append(b[:bytes.LastIndex(b, []byte("\n}"))], []byte(",\n"+tail)...)
		if tail[0] == '\n' {
			b = append(bytes.TrimSuffix(b, []byte(",\n"+tail)), []byte(tail)...)
		}
		if _, err := Decode(bytes.NewReader(b)); err == nil {
			t.Errorf("a report ending %q decodes", tail)
		}
	}
}

// LoadStream holds a report's head and reads its cases from the file each time they are asked
// for: the same cases as Load, an early stop, and a damaged case as an error naming the file.
func TestLoadStream(t *testing.T) {
	path, whole := writeRandomReport(t)
	rep, err := LoadStream(path)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Cases != nil || rep.Source == nil || !reflect.DeepEqual(rep.Summary, whole.Summary) {
		t.Fatalf("LoadStream: %d cases in memory, summary %+v", len(rep.Cases), rep.Summary)
	}
	for range 2 { // the cases can be read again
		var cases []Case
		if err := rep.Each(func(c *Case) error { cases = append(cases, *c); return nil }); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(cases, whole.Cases) {
			t.Fatalf("%d cases streamed, %d loaded", len(cases), len(whole.Cases))
		}
	}
	stop := errors.New("stop")
	n := 0
	if err := rep.Each(func(*Case) error { n++; return stop }); err != stop || n != 1 {
		t.Errorf("an early stop: %v after %d cases", err, n)
	}
	b, _ := os.ReadFile(path)
	os.WriteFile(path, []byte(strings.Replace(string(b), `"index": 700,`, `"index": "seven hundred",`, 1)), 0o644)
	n = 0
	if err := rep.Each(func(*Case) error { n++; return nil }); n != 0 || !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), path) {
		t.Errorf("a report damaged since it was loaded: %v after %d cases", err, n)
	}
}

// Merge of shards whose cases stream merges them as they stream, into the report Merge makes of
// the shards in memory; shards whose cases are not in campaign order, or whose options do not
// list their targets, are merged in memory; a damaged shard is an error naming its file.
func TestMergeOfStreamingShards(t *testing.T) {
	whole := randomReport(t)
	whole.Options.Targets = []string{"other", "agent"}
	for _, c := range slices.Clone(whole.Cases) {
		c.Target, c.ID = "other", "other"+strings.TrimPrefix(c.ID, "agent")
		whole.Cases = append(whole.Cases, c)
	}
	whole.SortCases()
	write := func(targets []string, reverse bool) []string {
		dir := t.TempDir()
		var paths []string
		for i := 1; i <= 3; i++ {
			sh := &Report{Schema: Schema, Seed: whole.Seed, Options: whole.Options, DurationMs: float64(10 * i)}
			sh.Options.Shard, sh.Options.Targets = Shard{i, 3}.String(), targets
			for _, c := range whole.Cases {
				if (Shard{i, 3}).Holds(c.Index) {
					sh.Cases = append(sh.Cases, c)
				}
			}
			if reverse {
				slices.Reverse(sh.Cases)
			}
			sh.Summarize(map[string]int{"agent": 90, "other": 90})
			path := filepath.Join(dir, fmt.Sprintf("shard%d.json", i))
			if err := sh.WriteFile(path); err != nil {
				t.Fatal(err)
			}
			paths = append(paths, path)
		}
		return paths
	}
	merge := func(load func(string) (*Report, error), paths []string) (*Report, []byte) {
		var shards []*Report
		for _, p := range paths {
			r, err := load(p)
			if err != nil {
				t.Fatal(err)
			}
			shards = append(shards, r)
		}
		m, err := Merge(shards...)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := m.WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		return m, b.Bytes()
	}
	for _, tc := range []struct {
		name    string
		targets []string
		reverse bool
		streams bool
	}{
		{"in campaign order", whole.Options.Targets, false, true},
		{"out of order", whole.Options.Targets, true, false},
		{"targets unlisted", nil, false, false},
	} {
		paths := write(tc.targets, tc.reverse)
		_, want := merge(Load, paths)
		m, got := merge(LoadStream, paths)
		if (m.Source != nil) != tc.streams || m.DurationMs != 30 || !bytes.Equal(got, want) {
			t.Errorf("%s: streams %v, duration %v; the same as in memory: %v", tc.name, m.Source != nil, m.DurationMs, bytes.Equal(got, want))
		}
	}
	// A shard damaged after it was loaded is an error of the merge, naming its file.
	paths := write(whole.Options.Targets, false)
	var shards []*Report
	for _, p := range paths {
		r, err := LoadStream(p)
		if err != nil {
			t.Fatal(err)
		}
		shards = append(shards, r)
	}
	b, _ := os.ReadFile(paths[1])
	os.WriteFile(paths[1], []byte(strings.Replace(string(b), `"index": 700,`, `"index": "seven hundred",`, 1)), 0o644)
	if _, err := Merge(shards...); !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), paths[1]) {
		t.Errorf("Merge of a damaged shard: %v", err)
	}
}

// withoutTrailer returns a report file's content without its trailer: what encoding/json
// writes of the report.
func withoutTrailer(t testing.TB, b []byte) []byte {
	t.Helper()
	at := bytes.LastIndex(b, []byte(",\n  \"trailer\": "))
	if at < 0 || !bytes.HasSuffix(b, []byte("}\n}\n")) {
		t.Fatalf("no trailer at the end of %.200q", b)
	}
	return append(b[:at:at], "\n}\n"...)
}
