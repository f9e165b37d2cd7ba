// Tests of the LangGraph.js adapter: the example graph (example/restock.mjs) run by chaoskit as
// a process target, its correct configuration passing every fault kind it can, and its common
// mistakes caught by the property each breaks. They need node (>= 20) and the installed
// node_modules (cd adapters/langgraph && npm_config_nodedir=/usr npm ci), and FUSE for the disk
// faults; without them each test skips with one line saying what is missing, except under
// CI=true, where that is a failure.
package langgraph_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
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
)

// TestMain lets chaoskit run its helpers (the reaper, the FUSE disks' server) as copies of this
// test binary.
func TestMain(m *testing.M) {
	process.Init()
	os.Exit(m.Run())
}

// install is what installs the example's Node packages.
const install = "cd adapters/langgraph && npm_config_nodedir=/usr npm ci"

// needNode returns node's path once node and the example's node_modules are there, or skips.
func needNode(t testing.TB) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		needs.Missing(t, "node is not in PATH: apt-get install -y nodejs (Node >= 20), then "+install)
	}
	for _, f := range []string{"node_modules/@langchain/langgraph/package.json", "node_modules/@langchain/langgraph-checkpoint-sqlite/package.json",
		"node_modules/better-sqlite3/build/Release/better_sqlite3.node"} {
		if _, err := os.Stat(f); err != nil {
			needs.Missing(t, "adapters/langgraph/node_modules is not installed ("+f+" is missing): "+install)
		}
	}
	return node
}

// needFUSE skips the test unless this machine can mount chaoskit's disk.
func needFUSE(t testing.TB) {
	t.Helper()
	if err := fusefs.Available(); err != nil {
		needs.Missing(t, err.Error())
	}
}

// exampleDir is the example's directory, as an absolute path.
func exampleDir(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs("example")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// toolSpecs are the example's tools, as chaoskit run --tool takes them.
var toolSpecs = []string{"check_inventory=read-only", "create_po=idempotent-by-key,latency=1s"}

// restock returns the example as a target, with flags choosing its configuration, on disk.
//
// It runs on the wall clock, as these findings were measured. On the virtual clock its golden
// runs diverge: on FUSE, Node's start waits in epoll_pwait while a file operation of libuv's
// thread pool is on its way to chaoskit's FUSE server, not yet read, and the wait is taken for
// quiescence ("wait 8.1s (epoll_pwait)" against "fs.create checkpoints.db"); with
// --durability async, LangGraph's background checkpoint write and the next node's mark come in
// either order. Both are open in chaoskit (a FUSE request not yet read is not counted as owed).
func restock(t testing.TB, disk process.Disk, flags ...string) process.Target {
	t.Helper()
	node := needNode(t)
	if disk == process.FUSE {
		needFUSE(t)
	}
	tg := process.Target{
		Argv:      append([]string{node, "restock.mjs"}, flags...),
		Dir:       exampleDir(t),
		StateArgv: []string{node, "restock.mjs", "--dump-state"},
		Disk:      disk,
		Clock:     process.WallClock,
	}
	for _, spec := range toolSpecs {
		tool, err := process.ParseTool(spec)
		if err != nil {
			t.Fatal(err)
		}
		tg.ToolList = append(tg.ToolList, tool)
	}
	return tg
}

// runner records the golden run of a target (twice: it must be deterministic).
func runner(t testing.TB, tg process.Target) *sim.Runner {
	t.Helper()
	rn, err := sim.NewRunner(harness.Fresh(tg), sim.Options{Name: strings.Join(append([]string{"restock"}, tg.Argv[2:]...), " ")})
	if err != nil {
		t.Fatal(err)
	}
	return rn
}

// explore runs the exhaustive campaign of kinds, at most cases of it taken evenly (0: all).
func explore(t testing.TB, rn *sim.Runner, cases int, kinds ...faults.Kind) []*sim.Case {
	t.Helper()
	cs, err := campaign.Explore(context.Background(), rn, campaign.Options{Faults: kinds, Cases: cases})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// requests are the beats of the example's golden run that are requests (on a plain disk, all
// of them): what each node asks of chaoskit, and the progress marks of the checkpointer, in
// sync durability.
var requests = []string{
	"mark checkpoint restock-1 step -1",
	"mark __start__ done restock-1 step 0",
	"mark checkpoint restock-1 step 0",
	"tool check_inventory sent",
	"tool check_inventory applied",
	"mark check_stock done restock-1 step 1",
	"mark checkpoint restock-1 step 1",
	"model plan restock-1 step 2",
	"mark plan done restock-1 step 2",
	"mark checkpoint restock-1 step 2",
	"tool create_po key=restock-1:3:place_orders:0 sent",
	"tool create_po key=restock-1:3:place_orders:0 applied",
	"tool create_po key=restock-1:3:place_orders:1 sent",
	"tool create_po key=restock-1:3:place_orders:1 applied",
	"mark place_orders done restock-1 step 3",
	"mark checkpoint restock-1 step 3",
	"model report restock-1 step 4",
	"mark report done restock-1 step 4",
	"mark checkpoint restock-1 step 4",
}

// The correct configuration (durability "sync", keys THREAD:STEP:NODE:I, the checkpointer in
// rollback-journal mode with synchronous=EXTRA, waiting for space on a full disk) on the FUSE
// disk, where every file operation of SQLite is a beat: each step's commit fsyncs the directory
// after unlinking the journal before the step is marked, and the graph survives a kill, a power
// cut, a torn write and a full disk (full for a minute of virtual time, restarts included) at an
// even sample of the beats (the whole campaign is about a thousand cases).
func TestRestockSurvivesStorageFaultsOnFUSE(t *testing.T) {
	tg := restock(t, process.FUSE)
	t.Parallel()
	rn := runner(t, tg)
	g, _ := rn.Golden(nil)
	trace := g.Trace()
	var calls []string
	for _, l := range trace {
		if !strings.HasPrefix(l, "fs.") {
			calls = append(calls, l)
		}
	}
	if !slices.Equal(calls, requests) {
		t.Errorf("the golden run's requests:\n%s\nwant:\n%s", strings.Join(calls, "\n"), strings.Join(requests, "\n"))
	}
	if j := strings.Join(trace, "|"); !strings.Contains(j, "fs.remove checkpoints.db-journal|fs.syncdir .|mark checkpoint restock-1 step 0") {
		t.Errorf("the checkpoint of step 0 is marked before its journal's unlinking is fsynced:\n%s", j)
	}
	kinds := map[faults.Kind]int{}
	for _, c := range explore(t, rn, 40, faults.Kill, faults.Power, faults.Torn, faults.DiskFull) {
		kinds[c.Schedule[0].Kind]++
		if c.Verdict.Outcome != oracle.Pass {
			t.Errorf("%s", c)
		}
	}
	for _, k := range []faults.Kind{faults.Kill, faults.Power, faults.Torn, faults.DiskFull} {
		if kinds[k] == 0 {
			t.Errorf("no %s case among %v", k, kinds)
		}
	}
	t.Logf("%d golden beats; cases %v", g.Len(), kinds)
}

// The correct configuration survives every tool fault at each tool call and every model fault
// at each model call: a call whose outcome is open is retried under its key, one call at a time
// (ToolNode runs a message's calls concurrently, and a retried call overtaken by the next would
// file the orders in another order), a rate limit is waited out, a failed process restarted.
func TestRestockSurvivesToolAndModelFaults(t *testing.T) {
	tg := restock(t, process.Plain)
	t.Parallel()
	rn := runner(t, tg)
	g, _ := rn.Golden(nil)
	if got := g.Trace(); !slices.Equal(got, requests) {
		t.Errorf("golden trace:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(requests, "\n"))
	}
	cases := explore(t, rn, 0, faults.ToolTransient, faults.ToolAmbiguous, faults.ToolTimeout,
		faults.ModelRateLimit, faults.ModelError, faults.ModelContext, faults.ModelHang)
	for _, c := range cases {
		if c.Verdict.Outcome != oracle.Pass {
			t.Errorf("%s", c)
		}
	}
	if len(cases) != 3*3+2*4 {
		t.Errorf("%d cases, want each tool fault at each of 3 calls and each model fault at each of 2", len(cases))
	}
}

// The adapter's own unit tests (chaoskit-langgraph.test.mjs: the checkpointer's journal mode
// and marks, the keys, the state reader), run by node's test runner.
func TestAdapterUnitTests(t *testing.T) {
	node := needNode(t)
	t.Parallel()
	cmd := exec.Command(node, "--test", "chaoskit-langgraph.test.mjs")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("node --test: %v\n%s", err, out)
	}
}

// firstBeat returns the first beat of trace that match accepts; what names it for the error.
func firstBeat(t testing.TB, trace []string, what string, match func(string) bool) int {
	t.Helper()
	if i := slices.IndexFunc(trace, match); i >= 0 {
		return i
	}
	t.Fatalf("the golden run has no %s:\n%s", what, strings.Join(trace, "\n"))
	return -1
}

// firstOrder returns a matcher of the first create_po call's beat that ends with suffix:
// " sent" (the call leaving the process) or " applied" (the order filed, before the reply).
func firstOrder(suffix string) func(string) bool {
	return func(l string) bool { return strings.HasPrefix(l, "tool create_po ") && strings.HasSuffix(l, suffix) }
}

// killAfterFirstOrder kills the process once the first purchase order is filed, before its reply
// reaches the graph: at the first create_po's applied beat, wherever the configuration puts it
// (under durability "exit" nothing is checkpointed before the end, and it comes earlier).
func killAfterFirstOrder(t testing.TB, trace []string) faults.Schedule {
	return faults.Schedule{{Kind: faults.Kill, Beat: firstBeat(t, trace, "create_po applied", firstOrder(" applied"))}}
}

// Mistakes, each caught by the property its bug breaks, at the beat where it bites, found in the
// configuration's own golden trace.
func TestRestockMistakesAreCaught(t *testing.T) {
	needNode(t)
	for _, m := range []struct {
		name     string
		flags    []string
		fuse     bool
		schedule func(t testing.TB, trace []string) faults.Schedule // the schedule that catches it
		property string
	}{
		// Resuming with the input instead of null starts the run again on the thread, under new
		// superstep numbers, so new keys: killed after the first order, it files it again.
		{"restart-input", []string{"--restart-input"}, false, killAfterFirstOrder, oracle.NoDuplicateEffects},
		// Under "exit" nothing is saved until the end: a kill re-runs the graph from the
		// input, the model is asked again and draws new tool-call ids, so a key made of the
		// tool-call id changes.
		{"tool-call-id key, exit", []string{"--durability", "exit", "--key", "tool-call-id"}, false, killAfterFirstOrder, oracle.NoDuplicateEffects},
		// Without retries ToolNode turns the tool's error into a message for the model: a
		// transient failure (the order not filed) is taken for done, and the order is lost.
		{"no-retry", []string{"--no-retry"}, false, func(t testing.TB, trace []string) faults.Schedule {
			return faults.Schedule{{Kind: faults.ToolTransient, Beat: firstBeat(t, trace, "create_po sent", firstOrder(" sent"))}}
		}, oracle.NoLostEffects},
	} {
		t.Run(m.name, func(t *testing.T) {
			disk := process.Plain
			if m.fuse {
				disk = process.FUSE
			}
			tg := restock(t, disk, m.flags...)
			t.Parallel()
			rn := runner(t, tg)
			g, _ := rn.Golden(nil)
			c := rn.Run(m.schedule(t, g.Trace()))
			if !c.Breaks(m.property) {
				t.Errorf("want %s broken:\n%s", m.property, c)
			}
		})
	}
}

// Under durability "async" LangGraph saves a step's checkpoint while the next node runs, and
// which of the two goes on first follows the order the replies to their requests come back in:
// chaoskit's counted golden run hands replies due at once back in reverse (PROTOCOL.md,
// "Requests made at once"), the two golden runs differ, and the example is refused as not
// deterministic rather than judged by luck. (Before that rule, a kill after the first order
// made its task-id key file the order again: docs/findings.md.)
func TestRestockAsyncFollowsReplyOrder(t *testing.T) {
	needNode(t)
	for _, key := range []string{"task-id", "step"} {
		_, err := sim.NewRunner(harness.Fresh(restock(t, process.Plain, "--durability", "async", "--key", key)), sim.Options{Name: "restock async"})
		if err == nil || !strings.Contains(err.Error(), "not deterministic: two golden runs diverge") || !strings.Contains(err.Error(), "mark check") {
			t.Errorf("--durability async --key %s: err = %v; want refused, its two golden runs diverging at a mark", key, err)
		}
	}
}

// A full disk fails the checkpointer's write with SQLITE_FULL, and the run with it, as LangGraph
// does; the supervisor restarts the process after its back-off, and once space is back (a minute
// of virtual time) the restarted process resumes from the last checkpoint and passes.
func TestRestockRestartsOutAFullDisk(t *testing.T) {
	tg := restock(t, process.FUSE)
	t.Parallel()
	rn := runner(t, tg)
	g, _ := rn.Golden(nil)
	trace := g.Trace()
	plan := firstBeat(t, trace, "model call", func(l string) bool { return strings.HasPrefix(l, "model plan") })
	j := firstBeat(t, trace[plan:], "journal write after the model call", func(l string) bool {
		return strings.HasPrefix(l, "fs.write checkpoints.db-journal ")
	})
	c := rn.Run(faults.Schedule{{Kind: faults.DiskFull, Beat: plan + j, Bytes: 2, Dur: time.Minute}})
	if c.Verdict.Outcome != oracle.Pass {
		t.Fatalf("%s", c)
	}
	if m := c.Verdict.Metrics; m.FailedProcesses == 0 || m.Restarts != m.FailedProcesses {
		t.Errorf("want the full disk ridden out by restarts of failed processes: %d restarts, %d failed", m.Restarts, m.FailedProcesses)
	}
}

// LangGraph's own ids come from the wall clock and crypto's randomness: a key made of the task id
// (derived from the checkpoint id) is new in every run, in every durability mode, and chaoskit
// refuses such a target as not deterministic, naming the beat where two golden runs part. The
// adapter's reproducibleIds(), which the example calls unless --wall-clock-ids, draws them from
// chaoskit's virtual clock and seeded source instead; that is what lets the task-id mistake
// above be caught at all.
func TestRestockWallClockIdsAreRefusedAsNondeterministic(t *testing.T) {
	tg := restock(t, process.Plain, "--key", "task-id", "--wall-clock-ids")
	t.Parallel()
	_, err := sim.NewRunner(harness.Fresh(tg), sim.Options{Name: "restock --key task-id --wall-clock-ids"})
	if err == nil {
		t.Fatal("two golden runs agreed, want them to differ in the task-id key")
	}
	beat := slices.IndexFunc(requests, firstOrder(" sent"))
	want := fmt.Sprintf("target is not deterministic: two golden runs diverge at beat %d: the first did \"tool create_po key=", beat)
	if msg := err.Error(); !strings.Contains(msg, want) || strings.Contains(msg, "\n") {
		t.Errorf("got %q, want one line with %q", msg, want)
	}
}

// A power cut after a commit, before anything fsyncs the directory, takes the commit away
// unless synchronous=EXTRA: with FULL the journal SQLite unlinked at the commit comes back, the
// next open rolls the checkpoint back, and the step that had been marked durable is done again.
// (The beat is found in the golden trace: the first commit after the model's first call ends by
// unlinking the journal; its mark follows, and the power goes at the beat after the mark.)
func TestRestockSynchronousFullLosesACommitToPower(t *testing.T) {
	tg := restock(t, process.FUSE, "--synchronous", "FULL")
	t.Parallel()
	rn := runner(t, tg)
	g, _ := rn.Golden(nil)
	trace := g.Trace()
	beat, model := -1, false
	for i, l := range trace {
		if strings.HasPrefix(l, "model plan") {
			model = true
		}
		if model && l == "fs.remove checkpoints.db-journal" && i+2 < len(trace) && strings.HasPrefix(trace[i+1], "mark ") {
			beat = i + 2
			break
		}
	}
	if beat < 0 {
		t.Fatalf("no commit marked after the model call:\n%s", strings.Join(trace, "\n"))
	}
	c := rn.Run(faults.Schedule{{Kind: faults.Power, Beat: beat}})
	if !c.Breaks(oracle.BoundedWorkLost) {
		t.Errorf("want bounded-work-lost broken:\n%s", c)
	}
}

// Through the command line, as a team would run it: the graph without idempotency keys is
// caught by no-duplicate-effects wherever a kill lands between an order and the durable write
// of the node that filed it, and the replay command chaoskit prints reproduces the failure.
func TestRestockWithoutKeysIsCaughtByTheCLI(t *testing.T) {
	needNode(t)
	t.Parallel()
	root := t.TempDir()
	bin, tmp := filepath.Dir(testbin.Chaoskit(t)), filepath.Join(root, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := exampleDir(t)
	env := append(os.Environ(), "PATH="+bin+string(filepath.ListSeparator)+os.Getenv("PATH"), "TMPDIR="+tmp)
	run := func(line string) (string, int) {
		t.Helper()
		var out bytes.Buffer
		cmd := exec.Command("/bin/sh", "-c", line)
		cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, &out, &out
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("%s: %v", line, err)
		}
		return out.String(), cmd.ProcessState.ExitCode()
	}
	// On the wall clock, as restock's targets (restock says why).
	line := "chaoskit run --exec 'node restock.mjs --key none' --state 'node restock.mjs --dump-state'" +
		" --tool check_inventory=read-only --tool create_po=idempotent-by-key,latency=1s --clock wall" +
		" --faults kill --format text,json --out " + campaign.ShellQuote(filepath.Join(root, "report"))
	out, code := run(line)
	if code != 1 || !strings.Contains(out, "no-duplicate-effects") {
		t.Fatalf("%s\nexited %d, want 1 and no-duplicate-effects:\n%s", line, code, out)
	}
	// The kills after the first order was applied and before place_orders' writes were saved
	// (kill@11, kill@12 and kill@13 in the golden trace of requests).
	from := slices.IndexFunc(requests, firstOrder(" applied"))
	to := slices.Index(requests, "mark place_orders done restock-1 step 3")
	for k := from; k < to; k++ {
		if s := fmt.Sprintf("kill@%d", k); !strings.Contains(out, s+":") {
			t.Errorf("%s is not among the failures:\n%s", s, out)
		}
	}
	var replay string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "chaoskit replay ") {
			replay = l
			break
		}
	}
	if replay == "" {
		t.Fatalf("no replay command printed:\n%s", out)
	}
	if out, code := run(replay); code != 1 || !strings.Contains(out, "no-duplicate-effects") {
		t.Fatalf("%s\nexited %d, want 1 and no-duplicate-effects:\n%s", replay, code, out)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		left, _ := filepath.Glob(filepath.Join(tmp, "chaoskit-*"))
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("left behind: %v", left)
		}
	}
}
