//go:build campaigns

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/internal/testbin"
	"github.com/chaoskit/chaoskit/reports"
)

// What merge holds of its shards does not grow with their cases: the live heap while it merges
// them (which summarises them) and while it reads the merged cases once more, as each of its
// outputs does.
func TestMergeMemoryIsFlatInCases(t *testing.T) {
	if testing.Short() {
		t.Skip("writes reports of 20,000 cases")
	}
	flatInCases(t, "merge", func(n int) uint64 {
		paths := []string{syntheticReport(t, n, "1/2"), syntheticReport(t, n, "2/2")}
		base := liveHeap()
		most := base
		var shards []*reports.Report
		for _, p := range paths {
			r, err := loadSummary(p)
			if err != nil {
				t.Fatal(err)
			}
			sampled(r, &most)
			shards = append(shards, r)
		}
		rep, err := reports.Merge(shards...)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Source == nil || rep.Summary.Targets[0].Cases != n {
			t.Fatalf("merged in memory, or a summary of %d cases, want %d", rep.Summary.Targets[0].Cases, n)
		}
		next := 0
		if err := rep.Each(func(c *reports.Case) error {
			if c.Index != next {
				return fmt.Errorf("case %d where %d belongs", c.Index, next)
			}
			next++
			return nil
		}); err != nil || next != n {
			t.Fatalf("after %d cases: %v", next, err)
		}
		most = max(most, liveHeap())
		runtime.KeepAlive(rep)
		return most - min(most, base)
	})
}

// What gate and replay --case hold of a report does not grow with its cases: the live heap after
// loading its summary, and while finding a case and once it is found.
func TestGateAndReplayMemoryIsFlatInCases(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a report of 20,000 cases")
	}
	flatInCases(t, "gate and replay", func(n int) uint64 {
		path := syntheticReport(t, n, "")
		base := liveHeap()
		rep, err := loadSummary(path)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Summary.Targets[0].Cases != n {
			t.Fatalf("summary of %d cases, want %d", rep.Summary.Targets[0].Cases, n)
		}
		most := liveHeap()
		sampled(rep, &most)
		c, err := findCase(rep, syntheticID)
		if err != nil || c == nil || c.Index != n/2 {
			t.Fatalf("findCase: %+v, %v", c, err)
		}
		most = max(most, liveHeap())
		runtime.KeepAlive(rep)
		runtime.KeepAlive(c)
		return most - min(most, base)
	})
}

func TestShardsMergeIntoTheUnshardedReport(t *testing.T) {
	for _, tc := range []struct {
		campaign []string
		shards   []string
	}{
		{[]string{"--target", "reference/act-then-save,reference", "--faults", "kill,power,diskfull", "--mode", "exhaustive"}, []string{"1/3", "2/3", "3/3"}},
		{[]string{"--target", "reference/no-fsync,reference", "--faults", "storage", "--mode", "random", "--cases", "30"}, []string{"2/2", "1/2"}},
		{[]string{"--target", "reference/act-then-save,reference", "--faults", "kill", "--mode", "exhaustive", "--cases", "50"}, []string{"1/2", "2/2"}},
	} {
		whole := campaignDir(t, tc.campaign...)
		dir := t.TempDir()
		var shards []string
		for _, s := range tc.shards {
			out := filepath.Join(dir, "shard"+s[:1])
			shards = append(shards, out)
			if code, _, errOut := chaoskit(t, append([]string{"run", "--shard", s, "--out", out, "--format", "json"}, tc.campaign...)...); code != exitFail && code != exitOK {
				t.Fatalf("shard %s: exit %d: %s", s, code, errOut)
			}
			rep := loadDir(t, out)
			if rep.Options.Shard != s {
				t.Fatalf("shard %s's report says shard %q", s, rep.Options.Shard)
			}
			for _, c := range rep.Cases {
				if c.Index%len(tc.shards) != int(s[0]-'1') {
					t.Fatalf("shard %s holds case %s of index %d", s, c.ID, c.Index)
				}
			}
		}
		merged := filepath.Join(dir, "merged")
		code, out, errOut := chaoskit(t, append([]string{"merge", "--out", merged}, shards...)...)
		if code != whole.code {
			t.Fatalf("merge: exit %d, the unsharded run's %d\n%s%s", code, whole.code, out, errOut)
		}
		sameReport(t, filepath.Join(whole.dir, "report.json"), filepath.Join(merged, "report.json"))
		// The Markdown shows no wall-clock time (the JUnit XML and the HTML do).
		a, _ := os.ReadFile(filepath.Join(whole.dir, "summary.md"))
		b, _ := os.ReadFile(filepath.Join(merged, "summary.md"))
		if len(a) == 0 || string(a) != string(b) {
			t.Errorf("the merged summary.md differs from the unsharded run's")
		}
		// The merged journal is a whole one: resuming it runs nothing and gives the same report.
		if code, _, errOut := chaoskit(t, "run", "--resume", merged, "--format", "json"); code != whole.code {
			t.Fatalf("resuming the merged journal: exit %d: %s", code, errOut)
		}
		sameReport(t, filepath.Join(whole.dir, "report.json"), filepath.Join(merged, "report.json"))
	}
}

// A campaign SIGKILLed halfway (once 300 of its 600 cases are journaled), by the kernel and for real, resumes to the report an
// uninterrupted run writes.
func TestResumeAfterSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds chaoskit and runs a campaign three times")
	}
	dir := t.TempDir()
	bin := testbin.Chaoskit(t)
	campaign := []string{"run", "--target", "reference,reference/act-then-save,reference/no-fsync", "--faults", "storage",
		"--mode", "random", "--cases", "200", "--parallel", "1", "--format", "json"}
	chaoskit := func(args ...string) *exec.Cmd {
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = new(bytes.Buffer), new(bytes.Buffer)
		return cmd
	}
	exitCode := func(cmd *exec.Cmd) int {
		err := cmd.Run()
		if _, ok := err.(*exec.ExitError); err != nil && !ok {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode()
	}

	whole := filepath.Join(dir, "whole")
	start := time.Now()
	if code := exitCode(chaoskit(append(campaign, "--out", whole)...)); code != exitFail {
		t.Fatalf("uninterrupted run: exit %d", code)
	}
	took := time.Since(start)

	killed := filepath.Join(dir, "killed")
	cmd := chaoskit(append(campaign, "--out", killed)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	journal := filepath.Join(killed, "cases.jsonl")
	lines := 0
	for deadline := time.Now().Add(time.Minute); lines < 300; time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the campaign journaled nothing in a minute")
		}
		b, _ := os.ReadFile(journal)
		lines = bytes.Count(b, []byte("\n"))
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the campaign was not killed but ended: %v (it took %v uninterrupted)", err, took)
	}
	if _, err := os.Stat(filepath.Join(killed, "report.json")); err == nil {
		t.Fatal("the killed campaign wrote its report")
	}
	b, _ := os.ReadFile(journal)
	done := bytes.Count(b, []byte("\n")) - 1
	if done >= 600 {
		t.Fatalf("the campaign had journaled all its %d cases", done)
	}

	resume := chaoskit("run", "--resume", killed)
	if code := exitCode(resume); code != exitFail {
		t.Fatalf("resume: exit %d\n%s", code, resume.Stderr)
	}
	if !strings.Contains(resume.Stderr.(*bytes.Buffer).String(), "cases failed") {
		t.Errorf("resume: stderr %q", resume.Stderr)
	}
	sameReport(t, filepath.Join(whole, "report.json"), filepath.Join(killed, "report.json"))
	t.Logf("killed after %d of 600 cases; the uninterrupted campaign took %v", done, took.Round(time.Millisecond))
}
