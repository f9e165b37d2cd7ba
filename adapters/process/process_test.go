package process_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/adapters/process"
	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/internal/testbin"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
)

// childBin is the test child, built once by TestMain.
var childBin string

func TestMain(m *testing.M) {
	process.Init()
	dir, err := os.MkdirTemp("", "chaoskit-process-test-")
	if err != nil {
		panic(err)
	}
	// The campaigns' own directories (and mounts) go under dir too, so that a check for what
	// they left sees only this test process's, never another chaoskit's running beside it.
	os.Setenv("TMPDIR", dir)
	if childBin, err = testbin.Path("./adapters/process/testdata/child"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// tools are the tools the test child calls.
var tools = []harness.Tool{
	{Name: "create_po", Contract: harness.IdempotentByKey, Latency: time.Second},
	{Name: "check", Contract: harness.IdempotentByKey, Async: 10 * time.Minute},
}

// child returns the test child in the given mode as a target.
func child(mode string) process.Target {
	return process.Target{Argv: []string{childBin, "-mode", mode}, ToolList: tools,
		StateArgv: []string{childBin, "-dump-state"}}
}

func newRunner(t *testing.T, target process.Target, opts sim.Options) (*sim.Runner, error) {
	t.Helper()
	if opts.Name == "" {
		opts.Name = "child/" + target.Argv[2]
	}
	return sim.NewRunner(harness.Fresh(target), opts)
}

func explore(t *testing.T, rn *sim.Runner, kinds ...faults.Kind) []*sim.Case {
	t.Helper()
	cases, err := campaign.Explore(context.Background(), rn, campaign.Options{Faults: kinds})
	if err != nil {
		t.Fatal(err)
	}
	return cases
}

// The correct child survives a real SIGKILL at every beat, and every tool fault: its
// checkpoint is written before its mark, and it retries with the same key.
func TestCorrectChildSurvivesEveryKill(t *testing.T) {
	rn, err := newRunner(t, child("correct"), sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cases := explore(t, rn, faults.Kill, faults.ToolTransient, faults.ToolAmbiguous, faults.ToolTimeout)
	restarts := 0
	for _, c := range cases {
		if c.Verdict.Outcome != oracle.Pass {
			t.Errorf("%s", c)
		}
		restarts += c.Verdict.Metrics.Restarts
	}
	if len(cases) != 9+3*3 || restarts != 9 {
		t.Fatalf("%d cases, %d restarts: want 9 kills (one restart each) and 3 tool faults of each kind", len(cases), restarts)
	}
	g, _ := rn.Golden(nil)
	if got := strings.Join(g.Trace(), "|"); got != "tool create_po key=po-0 sent|tool create_po key=po-0 applied|mark po 0 filed|tool create_po key=po-1 sent|tool create_po key=po-1 applied|mark po 1 filed|tool create_po key=po-2 sent|tool create_po key=po-2 applied|mark po 2 filed" {
		t.Errorf("golden trace %s", got)
	}
}

// The child that acts before it saves, without a key, files an order twice when it is killed
// between the two: no-duplicate-effects catches it, and the case replays.
func TestActThenSaveChildIsCaught(t *testing.T) {
	rn, err := newRunner(t, child("act-then-save"), sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var caught []string
	for _, c := range explore(t, rn, faults.Kill) {
		if c.Breaks(oracle.NoDuplicateEffects) {
			caught = append(caught, c.Schedule.String())
		}
	}
	// The kills after an order was applied and before it was saved: at each applied beat. (At
	// the mark the order is saved already.)
	if want := "kill@1 kill@4 kill@7"; strings.Join(caught, " ") != want {
		t.Fatalf("caught under %v, want %s", caught, want)
	}
	if c := rn.Run(faults.Schedule{{Kind: faults.Kill, Beat: 1}}); !c.Breaks(oracle.NoDuplicateEffects) {
		t.Fatalf("kill@1 does not replay: %s", c)
	}
}

// Every request of the protocol answers as its Env call does in-process.
func TestEveryRequest(t *testing.T) {
	rn, err := newRunner(t, child("tour"), sim.Options{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	c := rn.Run(nil)
	want := `map[attempt:0 await_deadline:true lookup:create_po-1 true false message:check-1 messages:1 model:file the order po:create_po-1 process:0 random:true replayed:true slept:1m30s token:1 worker:0]`
	if got := fmt.Sprint(c.Result); got != want || c.Verdict.Outcome != oracle.Pass {
		t.Fatalf("result %s\nwant   %s\n%s", got, want, c)
	}
}

// A command that refuses to go on ends its run there, whatever its exit status: the case passes
// as refused.
func TestRefusal(t *testing.T) {
	target := child("refuse")
	target.Argv = []string{"sh", "-c", `if [ "$CHAOSKIT_PROCESS" = 0 ]; then exec "$0" -mode tour; else exec "$0" -mode refuse; fi`, childBin}
	rn, err := sim.NewRunner(harness.Fresh(target), sim.Options{Name: "refuser"})
	if err != nil {
		t.Fatal(err)
	}
	c := rn.Run(faults.Schedule{{Kind: faults.Kill, Beat: 3}})
	if c.Verdict.Outcome != oracle.Pass || !strings.Contains(c.Verdict.Refused, "cannot tell whether order 7 was filed") {
		t.Fatalf("%s (refused %q)", c, c.Verdict.Refused)
	}
}

// A failure is confirmed by a second run before it is reported; what the two runs say may
// differ where it quotes a temporary directory, new each run, and the failure still stands.
func TestFailureQuotingItsStateDirIsAFailure(t *testing.T) {
	rn, err := newRunner(t, child("fail-in-state-dir"), sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c := rn.Run(faults.Schedule{{Kind: faults.Kill, Beat: 0}}); c.Verdict.Outcome != oracle.Fail || !c.Breaks(oracle.Completes) {
		t.Fatalf("%s", c)
	}
}

// A duration longer than a year is refused rather than left to wrap around; an empty topic's
// messages are an empty list, present in the response.
func TestRequestEdges(t *testing.T) {
	rn, err := newRunner(t, child("long-sleep"), sim.Options{})
	if err == nil {
		t.Fatalf("a sleep of 10^13 ms was served: %v", rn)
	}
	if !strings.Contains(err.Error(), "ms 10000000000000 is not a duration chaoskit takes") {
		t.Fatalf("err = %v", err)
	}
	rn, err = newRunner(t, child("empty-messages"), sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c := rn.Run(nil); c.Result != `{"id":0,"ok":true,"messages":[]}` && c.Result != `{"ok":true,"messages":[]}` {
		t.Fatalf("messages of an empty topic: %v", c.Result)
	}
}

// A target that misbehaves is refused with one line saying how, the end of its output
// included; nothing hangs.
func TestBadTargets(t *testing.T) {
	for _, tc := range []struct {
		mode string
		want string
	}{
		{"exit3", `exited with status 3; its output ends: "boom: the configuration is missing"`},
		{"noconnect", "hung: no beat for 1s"},
		{"exit0", "the command exited without connecting to chaoskit: a harness connects to $CHAOSKIT_SOCKET with a client of the protocol (PROTOCOL.md: Python ck = chaoskit.connect()"},
		{"hang", "hung: no beat for 1s of wall-clock time; the process waited where chaoskit does not see it (a thread, a promise, a lock, a pipe or a socket of its own that nothing will wake; sleeps wait in virtual time)"},
		{"flood", "requests in a row without a beat"},
		{"malformed", "sent a malformed request"},
		{"undeclared", `call to undeclared tool "launch_missiles"`},
		{"badresult", "sent a malformed request"},
		{"version", "the command speaks protocol version 99; this chaoskit speaks version 1"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			var timeout time.Duration // the default, 10s: only a command that hangs should hit it
			switch tc.mode {
			case "hang", "noconnect":
				timeout = time.Second
			case "flood":
				timeout = time.Minute // so that the count of requests, not the clock, stops it on a busy machine
			}
			_, err := newRunner(t, child(tc.mode), sim.Options{Timeout: timeout})
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err = %v\nwant one line containing %q", err, tc.want)
			}
		})
	}
	_, err := newRunner(t, process.Target{Argv: []string{"/no/such/command"}}, sim.Options{Name: "missing"})
	if err == nil || !strings.Contains(err.Error(), "starting /no/such/command") {
		t.Fatalf("err = %v", err)
	}
	noDir := child("correct")
	noDir.Dir = "/no/such/dir"
	if err := noDir.Validate(); err == nil || err.Error() != "process.Target: working directory: stat /no/such/dir: no such file or directory" {
		t.Fatalf("err = %v", err)
	}
}

// A plain target refuses the faults it cannot honour, saying what would lift the limit.
func TestPlainTargetLimits(t *testing.T) {
	rn, err := newRunner(t, child("correct"), sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = campaign.Schedules(rn, campaign.Options{Faults: []faults.Kind{faults.Kill, faults.Power}})
	if err == nil || !strings.Contains(err.Error(), "power faults cannot apply to child/correct") || !strings.Contains(err.Error(), "--disk fuse") {
		t.Fatalf("err = %v", err)
	}
	c := rn.Run(faults.Schedule{{Kind: faults.Power, Beat: 3}})
	if c.Verdict.Outcome != oracle.Unknown || !strings.Contains(c.Verdict.Reason, "--disk fuse") {
		t.Fatalf("%s", c)
	}
	if _, err := newRunner(t, child("correct"), sim.Options{Workers: 2}); err == nil || !strings.Contains(err.Error(), "cannot run 2 workers") {
		t.Fatalf("err = %v", err)
	}
}

// The words of a process target's messages follow the language its command runs, and the
// clock it runs on: a sleep is a hang's cause only on the wall clock, with the reason why.
func TestAdviceFollowsTheCommandsLanguage(t *testing.T) {
	for _, tc := range []struct {
		argv          []string
		virtual, wall string
	}{
		{[]string{"python3", "app.py"}, "Event, a queue, a pipe or a socket of its own that nothing will wake; time.sleep and timeouts wait in virtual time)", "time.sleep and timeouts wait on the wall clock, %s: wait with ck.sleep(seconds);"},
		{[]string{"sh", "-c", "python3 app.py"}, "time.sleep and timeouts wait in virtual time", "wait with ck.sleep(seconds)"},
		{[]string{"./venv/bin/python", "-m", "app"}, "time.sleep and timeouts wait in virtual time", "wait with ck.sleep(seconds)"},
		{[]string{"node", "app.mjs"}, "a promise of its own that never settles, a lock, a pipe or a socket that nothing will wake; the client's requests, in Promise.all too, are seen; setTimeout and timers/promises wait in virtual time)", "setTimeout and timers/promises wait on the wall clock, %s: wait with await ck.sleep(ms);"},
		{[]string{"npx", "tsx", "app.ts"}, "setTimeout and timers/promises wait in virtual time", "wait with await ck.sleep(ms)"},
		{[]string{"./harness", "--fast"}, "a pipe or a socket of its own that nothing will wake; sleeps wait in virtual time)", "a sleep waits on the wall clock, %s: wait with the client's sleep, ck.sleep;"},
	} {
		wall := func(why string) string { return strings.Replace(tc.wall, "%s", why, 1) }
		if got := (process.Target{Argv: tc.argv}).HangHint(); !strings.Contains(got, tc.virtual) || strings.Contains(got, "ck.sleep") {
			t.Errorf("%q, virtual clock: %q lacks %q or names ck.sleep", tc.argv, got, tc.virtual)
		}
		if got, want := (process.Target{Argv: tc.argv, Clock: process.WallClock}).HangHint(), wall("as --clock wall asks"); !strings.Contains(got, want) {
			t.Errorf("%q, --clock wall: %q lacks %q", tc.argv, got, want)
		}
		undo := process.UntrappedClocks()
		got, want := (process.Target{Argv: tc.argv}).HangHint(), wall("since this machine cannot trap it")
		undo()
		if !strings.Contains(got, want) {
			t.Errorf("%q, untrapped: %q lacks %q", tc.argv, got, want)
		}
	}
}

// A failure quotes the end of the command's output as the lines it printed, its last 30, each
// indented, with the last one on the error's own line.
func TestFailureQuotesTheLastLines(t *testing.T) {
	_, err := newRunner(t, process.Target{Argv: []string{"sh", "-c", "seq 1 100; exit 1"}}, sim.Options{Name: "seq"})
	var want strings.Builder
	want.WriteString(`exited with status 1; its output ends: "100"`)
	for i := 71; i <= 100; i++ {
		fmt.Fprintf(&want, "\n    %d", i)
	}
	if err == nil || !strings.HasSuffix(err.Error(), want.String()) {
		t.Fatalf("err = %v\nwant it to end with:\n%s", err, want.String())
	}
}
