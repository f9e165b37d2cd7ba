package process_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/adapters/process"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
)

// The harnesses of testdata/time, written as a team would: threads, asyncio, Promise.all,
// time.sleep and setTimeout.

// poTools are their tools: purchase orders, idempotent by key, a second of latency.
var poTools = []harness.Tool{{Name: "create_po", Contract: harness.IdempotentByKey, Latency: time.Second}}

// timeTarget returns the harness file of testdata/time run by the interpreter for it.
func timeTarget(t *testing.T, file string, args ...string) process.Target {
	t.Helper()
	var argv []string
	if strings.HasSuffix(file, ".mjs") {
		argv = append([]string{needNode(t), "testdata/time/" + file}, args...)
	} else {
		argv = pythonArgv(t, "testdata/time/"+file, args...)
	}
	target := process.Target{Argv: argv, ToolList: poTools}
	if strings.HasPrefix(file, "fanout") || strings.HasPrefix(file, "diskfull") {
		target.StateArgv = append(append([]string(nil), argv...), "--dump-state")
	}
	return target
}

// A correct harness that fans keyed calls out at once (a thread pool, asyncio.gather,
// Promise.all) and checkpoints when they are all back decides the same in every run: the calls
// are admitted in the order of their keys, and their latencies overlap in virtual time.
func TestFanOutDecidesTheSame(t *testing.T) {
	for _, tc := range []struct {
		file  string
		steps int
		width int
	}{{"fanout_threads.py", 3, 3}, {"fanout_gather.py", 2, 5}, {"fanout_all.mjs", 2, 5}} {
		t.Run(tc.file, func(t *testing.T) {
			rn, err := sim.NewRunner(harness.Fresh(timeTarget(t, tc.file)), sim.Options{Name: tc.file})
			if err != nil {
				t.Fatal(err)
			}
			g, _ := rn.Golden(nil)
			// Each step: its calls sent, then applied (their latencies overlap), in the order the
			// seeded scheduler runs their threads, then its mark.
			trace := g.Trace()
			if len(trace) != tc.steps*(2*tc.width+1) {
				t.Fatalf("golden trace %s", strings.Join(trace, "|"))
			}
			for step := range tc.steps {
				part := trace[step*(2*tc.width+1) : (step+1)*(2*tc.width+1)]
				prefix := fmt.Sprintf("tool create_po key=s%d-", step)
				for i, l := range part[:2*tc.width] {
					if !strings.HasPrefix(l, prefix) || strings.HasSuffix(l, " sent") != (i < tc.width) {
						t.Fatalf("golden trace, step %d: %s", step, strings.Join(part, "|"))
					}
				}
				if part[2*tc.width] != fmt.Sprintf("mark step %d", step) {
					t.Fatalf("golden trace, step %d: %s", step, strings.Join(part, "|"))
				}
			}
			c := rn.Run(nil)
			if c.Verdict.Outcome != oracle.Pass || fmt.Sprint(c.Result) != fmt.Sprintf(`map[steps:%d]`, tc.steps) {
				t.Fatalf("%s: %#v", c, c.Result)
			}
			if v := g.Elapsed(); v != time.Duration(tc.steps)*time.Second {
				t.Errorf("the calls' latencies did not overlap: %s of virtual time for %d steps", v, tc.steps)
			}
			for _, k := range []int{1, tc.width + 1, 2*tc.width + 1} {
				if c := rn.Run(faults.Schedule{{Kind: faults.Kill, Beat: k}}); c.Verdict.Outcome != oracle.Pass {
					t.Errorf("%s", c)
				}
			}
		})
	}
}

// A harness whose concurrent calls depend on the order their replies come in is refused: the
// counted golden run hands the replies due at one instant over in the reverse order.
func TestReplyOrderDependenceIsRefused(t *testing.T) {
	_, err := sim.NewRunner(harness.Fresh(timeTarget(t, "order_counter.py")), sim.Options{Name: "order_counter"})
	if !errors.Is(err, sim.ErrNondeterministic) {
		t.Fatalf("err = %v, want a refusal as not deterministic", err)
	}
}

// A harness that retries a 429 after its retry-after with time.sleep, or setTimeout, waits in
// virtual time: the case takes well under a second, and the harness saw the 20 seconds pass.
func TestRetryAfterWaitsInVirtualTime(t *testing.T) {
	for _, file := range []string{"retry429_sleep.py", "retry429.mjs"} {
		t.Run(file, func(t *testing.T) {
			rn, err := sim.NewRunner(harness.Fresh(timeTarget(t, file)), sim.Options{Name: file})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			c := rn.Run(faults.Schedule{{Kind: faults.ModelRateLimit, Beat: 0}})
			wall := time.Since(start)
			if c.Verdict.Outcome != oracle.Pass {
				t.Fatalf("%s", c)
			}
			s := faults.Schedule{{Kind: faults.ModelRateLimit, Beat: 0}}
			if got := labels(rn.Beats(s, len(s))); !strings.Contains(got, "wait 20s") {
				t.Errorf("no beat for the wait: %s", got)
			}
			t.Logf("%s: %v of wall time", file, wall)
		})
	}
}

// A harness that retries a 429 at once, ignoring its retry-after, is refused every time until
// the window ends, which it never lets come: it spins, and fails completes.
func TestRetryAtOnceFails(t *testing.T) {
	rn, err := sim.NewRunner(harness.Fresh(timeTarget(t, "retry429_now.py")), sim.Options{Name: "retry429_now", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	c := rn.Run(faults.Schedule{{Kind: faults.ModelRateLimit, Beat: 0}})
	if c.Verdict.Outcome != oracle.Fail || !c.Breaks(oracle.Completes) {
		t.Fatalf("%s", c)
	}
}

// A harness that waits out a full disk by retrying its writes once a second, with time.sleep,
// gets its space back after the fault's minute, in virtual time.
func TestDiskFullRetriedOnTheCommandsClock(t *testing.T) {
	target := timeTarget(t, "diskfull_retry.py")
	target.Disk = process.FUSE
	if err := target.Validate(); err != nil {
		t.Skip(err)
	}
	rn, err := sim.NewRunner(harness.Fresh(target), sim.Options{Name: "diskfull_retry"})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := rn.Golden(nil)
	write := -1
	for k := range g.Len() {
		if b := g.Beat(k); b.Kind == sim.BeatFS && b.Admits(faults.DiskFull) {
			write = k
			break
		}
	}
	s := faults.Schedule{{Kind: faults.DiskFull, Beat: write, Bytes: 1, Dur: time.Minute}}
	start := time.Now()
	c := rn.Run(s)
	if c.Verdict.Outcome != oracle.Pass {
		t.Fatalf("%s", c)
	}
	beats := rn.Beats(s, len(s))
	if got := labels(beats); !strings.Contains(got, "wait 1s (clock_nanosleep)") {
		t.Errorf("no wait beats: %s", got)
	}
	t.Logf("%s: %d beats, %v of wall time", s, len(beats), time.Since(start))
}

// labels joins the beats' labels.
func labels(beats []sim.Beat) string {
	var out []string
	for _, b := range beats {
		out = append(out, b.Label())
	}
	return strings.Join(out, "|")
}

// A front door (here a fake HTTP one) submits its requests through process.Admit: three
// requests a harness makes at once from three threads are admitted in the order of their keys,
// whatever order they arrive in, and their latencies overlap.
func TestFrontDoorAdmitsInCanonicalOrder(t *testing.T) {
	door := process.NewFrontDoor()
	defer door.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /t/{token}/po/{key}", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		key := r.PathValue("key")
		reply, err := process.Admit(r.Context(), r.PathValue("token"), process.Key{Op: "po", Name: "create_po", Key: key, Args: string(body)},
			func(ctx context.Context, env *harness.Env) any {
				rep, err := env.Call(ctx, harness.Call{Tool: "create_po", Key: key, Args: body})
				if err != nil {
					return err.Error()
				}
				return rep.ID
			})
		if err != nil {
			http.Error(w, err.Error(), http.StatusGone)
			return
		}
		fmt.Fprint(w, reply)
	})
	srv := &http.Server{Handler: door.Handler(mux), ConnState: door.ConnState}
	go srv.Serve(door.Listener(ln))
	defer srv.Close()
	script := `
import json, os, sys, urllib.request
from concurrent.futures import ThreadPoolExecutor
sys.path.insert(0, "python")
import chaoskit
base = "http://%s/t/%s/po/" % (os.environ["DOOR"], os.environ["CHAOSKIT_TOKEN"])
def post(key):
    return urllib.request.urlopen(urllib.request.Request(base + key, data=b'{"n":1}', method="POST"), timeout=30).read().decode()
with ThreadPoolExecutor(3) as pool:
    ids = list(pool.map(post, ["c", "a", "b"]))
chaoskit.connect().done(ids)
`
	target := process.Target{Argv: []string{pythonExe(t), "-S", "-c", script}, ToolList: poTools, Env: []string{"DOOR=" + ln.Addr().String()}}
	rn, err := sim.NewRunner(harness.Fresh(target), sim.Options{Name: "frontdoor"})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := rn.Golden(nil)
	trace := g.Trace()
	sent := strings.Join(trace[:3], "|")
	for _, k := range []string{"a", "b", "c"} {
		if !strings.Contains(sent, "key="+k+" sent") || len(trace) != 6 {
			t.Fatalf("golden trace %s", strings.Join(trace, "|"))
		}
	}
	c := rn.Run(nil)
	if c.Verdict.Outcome != oracle.Pass {
		t.Fatalf("%s", c)
	}
	t.Logf("trace %s, result %v", strings.Join(trace, "|"), c.Result)
	if v := g.Elapsed(); v != time.Second {
		t.Errorf("%s of virtual time: the calls' latencies did not overlap", v)
	}
}
