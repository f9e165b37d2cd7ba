package process_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/adapters/process"
	"github.com/chaoskit/chaoskit/adapters/process/fusefs"
	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/internal/needs"
	"github.com/chaoskit/chaoskit/internal/testbin"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
	"github.com/spf13/afero"
)

// pyExample is one of the Python examples as chaoskit runs it.
type pyExample struct {
	script string   // the program, relative to this package
	tools  []string // its tools, as --tool takes them
	ignore []string // what legitimately differs between runs, as --ignore takes it
}

var (
	// burr is the Burr-style state machine of examples/burr.
	burr = pyExample{script: "examples/burr/app.py", tools: []string{"create_po=idempotent-by-key,latency=1s"}}
	// brat is the brat-style event log on git of examples/brat: its events carry the virtual
	// time they were written at, and its view the commit id of the log's head, which a restart
	// that rewrites an event changes.
	brat = pyExample{script: "examples/brat/brat.py", tools: []string{"spawn_session=idempotent-by-key,latency=1s,fenced"},
		ignore: []string{"$.events[*].ts", "$.view.head"}}
)

// toolFaults are the tool faults that apply to a synchronous tool (callback-dup needs an
// asynchronous one).
var toolFaults = []faults.Kind{faults.ToolTransient, faults.ToolAmbiguous, faults.ToolTimeout}

// target returns the example as a process target, the --broken variant if broken.
func (e pyExample) target(t testing.TB, broken bool) process.Target {
	t.Helper()
	tg := process.Target{Argv: pythonArgv(t, e.script), StateArgv: pythonArgv(t, e.script, "--dump-state"), Ignore: e.ignore}
	if broken {
		tg.Argv = append(tg.Argv, "--broken")
	}
	for _, spec := range e.tools {
		tool, err := process.ParseTool(spec)
		if err != nil {
			t.Fatal(err)
		}
		tg.ToolList = append(tg.ToolList, tool)
	}
	return tg
}

// flags returns the flags of chaoskit run that describe the same target.
func (e pyExample) flags(t testing.TB, broken bool) []string {
	tg := e.target(t, broken)
	args := []string{"--exec", shellJoin(tg.Argv), "--state", shellJoin(tg.StateArgv)}
	for _, spec := range e.tools {
		args = append(args, "--tool", spec)
	}
	for _, p := range e.ignore {
		args = append(args, "--ignore", p)
	}
	return args
}

func shellJoin(argv []string) string {
	words := make([]string, len(argv))
	for i, w := range argv {
		words[i] = campaign.ShellQuote(w)
	}
	return strings.Join(words, " ")
}

// exampleRunner records the golden run of an example's target (twice, as NewRunner does).
func exampleRunner(t *testing.T, name string, tg process.Target) *sim.Runner {
	t.Helper()
	rn, err := sim.NewRunner(harness.Fresh(tg), sim.Options{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return rn
}

// chaoskitCLI returns the chaoskit command, built once for every test package.
func chaoskitCLI(t testing.TB) string { return testbin.Chaoskit(t) }

// shell runs command lines as a user types them: in a directory of its own, with chaoskit on
// PATH (so that a printed replay command runs as it is printed) and TMPDIR beside it (so that
// whatever chaoskit leaves behind shows).
type shell struct {
	t         *testing.T
	work, tmp string
	env       []string
}

func newShell(t *testing.T) *shell {
	t.Helper()
	pythonExe(t) // before building chaoskit, which is no use without it
	sh := &shell{t: t, work: filepath.Join(t.TempDir(), "work")}
	if err := os.Mkdir(sh.work, 0o755); err != nil {
		t.Fatal(err)
	}
	// TMPDIR short enough for chaoskit to use it (a socket's path is at most 107 bytes), so
	// that clean sees what it leaves there.
	tmp, err := os.MkdirTemp("/tmp", "ck-shell-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	sh.tmp = tmp
	bin := filepath.Dir(chaoskitCLI(t))
	sh.env = append(os.Environ(), "PATH="+bin+string(filepath.ListSeparator)+os.Getenv("PATH"), "TMPDIR="+sh.tmp)
	return sh
}

// run runs a command line and returns its output, stdout then stderr, and its exit status.
func (sh *shell) run(line string) (string, int) {
	sh.t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("/bin/sh", "-c", line)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = sh.work, sh.env, &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		sh.t.Fatalf("%s: %v", line, err)
	}
	return stdout.String() + stderr.String(), cmd.ProcessState.ExitCode()
}

// campaign runs chaoskit run on the example under faults, writing the report to out; it
// returns the output, the exit status and the report's cases.
func (sh *shell) campaign(e pyExample, broken bool, faults, out string) (string, int, []reportCase) {
	sh.t.Helper()
	words := []string{"chaoskit", "run", "--faults", faults, "--out", out, "--format", "text,json"}
	for _, w := range e.flags(sh.t, broken) {
		words = append(words, campaign.ShellQuote(w))
	}
	text, code := sh.run(strings.Join(words, " "))
	cases, err := readCases(filepath.Join(sh.work, out))
	if err != nil {
		sh.t.Fatalf("chaoskit run exited %d and %v:\n%s", code, err, text)
	}
	return text, code, cases
}

// clean fails the test if chaoskit left a directory in TMPDIR, or a process (a harness it
// started) still runs in the work directory once the reaper has had a moment.
func (sh *shell) clean() {
	sh.t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		left, _ := filepath.Glob(filepath.Join(sh.tmp, "chaoskit-*"))
		links, _ := filepath.Glob("/proc/[0-9]*/cwd")
		for _, l := range links {
			if cwd, err := os.Readlink(l); err == nil && cwd == sh.work {
				cmdline, _ := os.ReadFile(filepath.Join(filepath.Dir(l), "cmdline"))
				left = append(left, string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			sh.t.Fatalf("left behind: %q", left)
		}
	}
}

// reportCase is what the tests read of a case in report.json.
type reportCase struct {
	Schedule   string `json:"schedule"`
	Verdict    string `json:"verdict"`
	Violations []struct {
		Property string `json:"property"`
	} `json:"violations"`
	Repro string `json:"repro"`
}

func (c reportCase) breaks(property string) bool {
	return slices.ContainsFunc(c.Violations, func(v struct {
		Property string `json:"property"`
	}) bool {
		return v.Property == property
	})
}

// readCases reads the cases of the report in dir.
func readCases(dir string) ([]reportCase, error) {
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		return nil, err
	}
	var r struct{ Cases []reportCase }
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "report.json"), err)
	}
	return r.Cases, nil
}

// onFUSEDisk returns the example's target with its state directory mounted over chaoskit's
// fault disk, or skips the test (fails it under CI=true) when this machine cannot mount.
func (e pyExample) onFUSEDisk(t *testing.T, beats process.Beats) process.Target {
	t.Helper()
	needs.Err(t, fusefs.Available())
	tg := e.target(t, false)
	tg.Disk, tg.Beats = process.FUSE, beats
	return tg
}

// SQLite's weaker synchronous settings pass every kill, and a power cut catches them: a step
// the harness had committed and marked is done again (bounded-work-lost), never twice to the
// world (its keys hold). FULL does not fsync the directory after a commit unlinks the journal;
// OFF fsyncs nothing. (The whole campaigns, with their figures, are in the README's findings.)
func TestBurrWeakerSynchronousLosesCommitsToPower(t *testing.T) {
	for _, sync := range []string{"FULL", "OFF"} {
		t.Run(sync, func(t *testing.T) {
			tg := burr.onFUSEDisk(t, process.AllBeats)
			tg.Argv = append(tg.Argv, "--synchronous", sync)
			t.Parallel()
			rn := exampleRunner(t, "burr synchronous="+sync, tg)
			kinds := func(k faults.Kind, n int) []*sim.Case {
				cases, err := campaign.Explore(context.Background(), rn, campaign.Options{Faults: []faults.Kind{k}, Cases: n})
				if err != nil {
					t.Fatal(err)
				}
				return cases
			}
			for _, c := range kinds(faults.Kill, 10) {
				if c.Verdict.Outcome != oracle.Pass {
					t.Errorf("%s", c)
				}
			}
			redone := 0
			for _, c := range kinds(faults.Power, 30) {
				switch {
				case c.Breaks(oracle.NoDuplicateEffects):
					t.Errorf("a step's order filed twice despite its key: %s", c)
				case c.Breaks(oracle.BoundedWorkLost):
					redone++
				}
			}
			if redone == 0 {
				t.Errorf("no power cut of 30 made a committed step run again")
			}
			t.Logf("%d of 30 power cuts made a committed step run again", redone)
		})
	}
}

// The brat example's git objects are the same every time it runs: with nothing ignored, not
// the events' times nor the head's commit id, a run without faults has the golden run's state.
func TestBratExampleObjectIDsRepeat(t *testing.T) {
	needs.Command(t, "git", installGit)
	t.Parallel()
	tg := brat.target(t, false)
	tg.Ignore = nil
	c := exampleRunner(t, "brat", tg).Run(nil)
	head, _ := c.State.(map[string]any)["view"].(map[string]any)["head"].(string)
	if c.Verdict.Outcome != oracle.Pass || len(head) != 40 {
		t.Fatalf("head %q\n%s", head, c)
	}
}

// BenchmarkBurrCaseVsBareRun alternates, in one loop, a case of the Burr example and a bare
// run of the same command on a plain directory (sim.RunBare on a MemMapFs: no beats, no
// faults, no state command), and reports the ratio of their times. kill: a kill case on the
// plain disk (its crash state derived from the golden recording, the recovery run on it, the
// state command unless its disk was seen before, and the oracle); power-on-fuse: a power cut on
// the FUSE disk, where every file operation is a beat. Each cycles through a fault at the first
// golden beats, where the recovery does the most. (chaoskit bench --exec measures cases spread
// over the whole golden run, against bare runs on the same disk too.)
func BenchmarkBurrCaseVsBareRun(b *testing.B) {
	for _, bc := range []struct {
		name string
		kind faults.Kind
		disk process.Disk
	}{{"kill", faults.Kill, process.Plain}, {"power-on-fuse", faults.Power, process.FUSE}} {
		b.Run(bc.name, func(b *testing.B) {
			bare := burr.target(b, false)
			tg := bare
			tg.Disk = bc.disk
			if bc.disk == process.FUSE {
				needs.Err(b, fusefs.Available())
			}
			faultCase := faultCycle(b, harness.Fresh(tg), bc.kind, sim.Options{})
			var caseT, bareT time.Duration
			i := 0
			for b.Loop() {
				t0 := time.Now()
				faultCase(i)
				t1 := time.Now()
				if _, err := sim.RunBare(harness.Fresh(bare), afero.NewMemMapFs(), sim.Options{}); err != nil {
					b.Fatal(err)
				}
				t2 := time.Now()
				caseT, bareT = caseT+t1.Sub(t0), bareT+t2.Sub(t1)
				i++
			}
			b.ReportMetric(float64(caseT)/float64(bareT), "case/bare")
			b.ReportMetric(float64(caseT.Milliseconds())/float64(i), "case-ms")
			b.ReportMetric(float64(bareT.Milliseconds())/float64(i), "bare-ms")
		})
	}
}

// faultCycle records the golden run of the target newTarget builds and returns a function that
// runs the i-th case of a cycle through a fault of kind at every golden beat, failing the
// benchmark if the case does not pass.
func faultCycle(b *testing.B, newTarget func() harness.Target, kind faults.Kind, opts sim.Options) func(i int) *sim.Case {
	opts.Name = "burr"
	rn, err := sim.NewRunner(newTarget, opts)
	if err != nil {
		b.Fatal(err)
	}
	g, _ := rn.Golden(nil)
	return func(i int) *sim.Case {
		c := rn.Run(faults.Schedule{{Kind: kind, Beat: i % g.Len()}})
		if c.Verdict.Outcome != oracle.Pass {
			b.Fatalf("%s", c)
		}
		return c
	}
}

// stampedTarget is a process target that notes when each of its processes ended, in wall-clock
// time: once chaoskit has SIGKILLed and reaped it and copied its state directory back.
type stampedTarget struct {
	process.Target
	ended *stamps
}

func (s *stampedTarget) Run(ctx context.Context, env *harness.Env) (any, error) {
	proc := env.Process()
	env.AtEnd(func() { s.ended.add("ended", proc, time.Now().UnixNano()) }) // runs after the kill's
	return s.Target.Run(ctx, env)
}

// stamps are wall-clock instants, in Unix nanoseconds, by what happened and the process's number.
type stamps struct {
	mu sync.Mutex
	at map[string]int64
}

func (s *stamps) add(what string, proc int, ns int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.at[what+" "+strconv.Itoa(proc)] = ns // the last of each
}

// timedPy runs a Python harness with the client patched to append to $CHAOSKIT_BENCH_LOG the
// wall-clock time of each request it sends and of each hello answered.
const timedPy = `import os, runpy, sys, time
sys.path.insert(0, sys.argv[1])
import chaoskit

def stamp(what, process):
    with open(os.environ["CHAOSKIT_BENCH_LOG"], "a") as f:
        f.write("%s %d %d\n" % (what, process, time.time_ns()))

do, connect = chaoskit.Client._do, chaoskit.connect

def timed_do(self, req):
    if req["op"] != "hello":
        stamp("sent", self.process)
    return do(self, req)

def timed_connect(*args, **kwargs):
    ck = connect(*args, **kwargs)
    stamp("hello", ck.process)
    return ck

chaoskit.Client._do, chaoskit.connect = timed_do, timed_connect
sys.argv = sys.argv[2:]
runpy.run_path(sys.argv[0], run_name="__main__")
`

// BenchmarkBurrKillToRestart measures, in wall-clock time, what a kill of the Burr example at
// a beat costs until the restarted process has said hello: from the request the kill fired at
// leaving the first process to the second's hello answered (kill→hello), split at the moment
// chaoskit had killed and reaped the first and copied its state back (kill→reaped and
// reaped→hello: a new state directory, the command started, Python's start-up, the hello). It
// cycles through a kill at every golden beat, re-running the prefix (NoDerive) so that a real
// process is there to kill.
func BenchmarkBurrKillToRestart(b *testing.B) {
	dir := b.TempDir()
	wrapper, log := filepath.Join(dir, "timed.py"), filepath.Join(dir, "stamps.log")
	if err := os.WriteFile(wrapper, []byte(timedPy), 0o644); err != nil {
		b.Fatal(err)
	}
	plain := burr.target(b, false)
	client, _ := filepath.Abs("python")
	target := stampedTarget{Target: plain, ended: &stamps{at: map[string]int64{}}}
	target.Argv = append([]string{plain.Argv[0], "-S", "-B", wrapper, client}, plain.Argv[3:]...)
	target.Env = []string{"CHAOSKIT_BENCH_LOG=" + log}
	killCase := faultCycle(b, harness.Fresh(target), faults.Kill, sim.Options{NoDerive: true})
	var killToReaped, reapedToHello time.Duration
	i := 0
	for b.Loop() {
		os.Remove(log)
		target.ended.at = map[string]int64{}
		c := killCase(i)
		at := readStamps(b, log, target.ended)
		sent, reaped, hello := at["sent 0"], at["ended 0"], at["hello 1"]
		if sent == 0 || reaped == 0 || hello == 0 || !(sent <= reaped && reaped <= hello) {
			b.Fatalf("%s: stamps missing or out of order: %v", c.Schedule, at)
		}
		killToReaped += time.Duration(reaped - sent)
		reapedToHello += time.Duration(hello - reaped)
		i++
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(i) }
	b.ReportMetric(ms(killToReaped+reapedToHello), "kill-to-hello-ms")
	b.ReportMetric(ms(killToReaped), "kill-to-reaped-ms")
	b.ReportMetric(ms(reapedToHello), "reaped-to-hello-ms")
}

// readStamps returns the Python side's stamps from log with the Go side's.
func readStamps(b *testing.B, log string, goSide *stamps) map[string]int64 {
	text, err := os.ReadFile(log)
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(text)), "\n") {
		var what string
		var proc int
		var ns int64
		if _, err := fmt.Sscanf(line, "%s %d %d", &what, &proc, &ns); err != nil {
			b.Fatalf("%s: %q: %v", log, line, err)
		}
		goSide.add(what, proc, ns)
	}
	return goSide.at
}
