package langgraph_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/adapters/process"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
)

// langchain-ai/langgraph#8039 on LangGraph.js 1.7.3. Under durability "sync" a superstep's
// checkpoint (put) is chained after the previous put and delta-channel writes only
// (PregelLoop._checkpointerPutAfterPrevious), not after the node's writes (putWrites): the loop
// then waits for both, in whatever order they land. So the same crash, while the checkpoint after
// place_orders is being written, leaves either the node's writes (the restart replays them) or
// nothing (the restart runs place_orders again), by which write landed first. With keys that
// change nothing; without keys it files every order twice.
//
// Both interleavings, each killed in the middle of that checkpoint's commit (its fsync of the
// database, a beat on the FUSE disk): the adapter's 'serial' order, the node's writes first (the
// order SqliteSaver's own promises produce in the call pattern chaoskit-langgraph.test.mjs checks,
// and the one langchain-ai/langgraph#8055, closed unmerged, proposed for Python), replays;
// 'put-first' (a putWrites slower
// than its put, which LangGraph.js lets happen: the run completes with the node's writes held
// until the checkpoint is committed) runs the node again.
func TestLangGraph8039WritesReplayOrNodeRerunsByInterleaving(t *testing.T) {
	needNode(t)
	needFUSE(t)
	t.Parallel()
	dir := t.TempDir()
	type outcome struct {
		schedule faults.Schedule
		c        *sim.Case
		rerun    []string // the nodes the restart ran
	}
	run := func(order, key string) outcome {
		log := filepath.Join(dir, order+"-"+key+".log")
		tg := restock(t, process.FUSE, "--saver-order", order, "--key", key, "--log-nodes", log)
		rn := runner(t, tg)
		g, _ := rn.Golden(nil)
		trace := g.Trace()
		// The commit of the checkpoint of step 3: from its first file operation after the last
		// order (put-first) or after the node's writes are marked (writes-first), to its mark.
		after := lastBeat(t, trace, "the last order", func(l string) bool { return strings.HasPrefix(l, "tool create_po") })
		if order == "serial" {
			after += firstBeat(t, trace[after:], "the node's writes marked", func(l string) bool { return l == "mark place_orders done restock-1 step 3" })
		}
		k := after + firstBeat(t, trace[after:], "the database's fsync", func(l string) bool { return l == "fs.sync checkpoints.db" })
		if m := slices.Index(trace, "mark checkpoint restock-1 step 3"); k > m {
			t.Fatalf("%s: beat %d is not inside the checkpoint's commit (marked at %d)", order, k, m)
		}
		s := faults.Schedule{{Kind: faults.Kill, Beat: k}}
		c := rn.Run(s)
		b, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		// The log holds the two golden runs, then the case's processes (0, then 1 after the
		// kill), then, for a failing case, its second run.
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		var rerun []string
		for _, l := range lines[slices.Index(lines, "1 start")+1:] {
			if !strings.HasPrefix(l, "1 ") || l == "1 start" {
				break
			}
			rerun = append(rerun, strings.TrimPrefix(l, "1 "))
		}
		return outcome{s, c, rerun}
	}
	wf, pf := run("serial", "none"), run("put-first", "none")
	t.Logf("serial (writes first), %s: %s; the restart ran %v", wf.schedule, wf.c.Verdict.Outcome, wf.rerun)
	t.Logf("put-first, %s: %s; the restart ran %v", pf.schedule, pf.c.Verdict.Outcome, pf.rerun)
	if wf.c.Verdict.Outcome != oracle.Pass || slices.Contains(wf.rerun, "place_orders") {
		t.Errorf("serial: want place_orders' writes replayed, not the node run again:\n%s", wf.c)
	}
	if !pf.c.Breaks(oracle.NoDuplicateEffects) || !slices.Contains(pf.rerun, "place_orders") || pf.c.Verdict.Metrics.Duplicates != 2 {
		t.Errorf("put-first: want place_orders run again and both orders filed twice:\n%s", pf.c)
	}
	// With the key per step the re-run files nothing twice: both interleavings pass.
	for _, order := range []string{"serial", "put-first"} {
		if o := run(order, "step"); o.c.Verdict.Outcome != oracle.Pass {
			t.Errorf("%s with the step key:\n%s", order, o.c)
		}
	}
}

// lastBeat returns the index of the last line of trace that is, failing the test if none.
func lastBeat(t testing.TB, trace []string, what string, is func(string) bool) int {
	t.Helper()
	for i := len(trace) - 1; i >= 0; i-- {
		if is(trace[i]) {
			return i
		}
	}
	t.Fatalf("no %s in the golden trace:\n%s", what, strings.Join(trace, "\n"))
	return -1
}
