package process_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/adapters/process"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/internal/needs"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
)

// installNode says how to get the Node.js the JavaScript client and its tests need.
const installNode = "install Node.js >= 20 (apt-get install -y nodejs, or see https://nodejs.org/en/download)"

// needNode returns the path of node, version 20 or later, or skips the test (fails it under
// CI=true) with one line saying what to install.
func needNode(t *testing.T) string {
	t.Helper()
	node := needs.Command(t, "node", installNode)
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		needs.Missing(t, fmt.Sprintf("%s --version: %v: %s", node, err, installNode))
	}
	v := strings.TrimSpace(string(out))
	if major, _ := strconv.Atoi(strings.TrimPrefix(strings.SplitN(v, ".", 2)[0], "v")); major < 20 {
		needs.Missing(t, fmt.Sprintf("node is %s, too old: %s", v, installNode))
	}
	return node
}

// The JavaScript client's unit tests (js/chaoskit.test.mjs, against a fake server) pass.
func TestJSClientUnit(t *testing.T) {
	node := needNode(t)
	cmd := exec.Command(node, "--test", "chaoskit.test.mjs")
	cmd.Dir = "js"
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "# pass ") || strings.HasPrefix(line, "# fail ") {
			t.Log(strings.TrimPrefix(line, "# "))
		}
	}
}

// The JavaScript client's tour (js/testdata/tour.mjs) makes every request of the protocol
// under a real chaoskit and gets what the Go client's tour (TestEveryRequest) gets.
func TestJSTour(t *testing.T) {
	node := needNode(t)
	tour := jsTour(t)
	want := tourResult(t, child("tour"))
	if got := tourResult(t, process.Target{Argv: []string{node, tour}, ToolList: tools}); got != want {
		t.Fatalf("the JavaScript tour's result\n%s\nthe Go tour's\n%s", got, want)
	}
}

// A JavaScript harness that refuses to go on ends its run there, whatever its exit status:
// the case passes as refused, as with the Go client (TestRefusal).
func TestJSRefusal(t *testing.T) {
	node := needNode(t)
	tour := jsTour(t)
	// The first process tours; the one restarted after the kill refuses.
	target := process.Target{Argv: []string{"sh", "-c", `if [ "$CHAOSKIT_PROCESS" = 0 ]; then exec "$0" "$1"; else exec "$0" "$1" --refuse; fi`, node, tour}, ToolList: tools}
	rn, err := sim.NewRunner(harness.Fresh(target), sim.Options{Name: "js/refuser"})
	if err != nil {
		t.Fatal(err)
	}
	c := rn.Run(faults.Schedule{{Kind: faults.Kill, Beat: 3}})
	if c.Verdict.Outcome != oracle.Pass || !strings.Contains(c.Verdict.Refused, "cannot tell whether order 7 was filed") {
		t.Fatalf("%s (refused %q)", c, c.Verdict.Refused)
	}
}

// A JavaScript harness that hangs on a wait nothing wakes (here a server nobody connects to) is
// told so in its client's words, not in the Go Env's.
func TestJSAdviceInItsWords(t *testing.T) {
	node := needNode(t)
	client, err := filepath.Abs(filepath.Join("js", "chaoskit.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	script := `import { connect } from ` + strconv.Quote("file://"+client) + `;
import net from 'node:net';
const ck = await connect();
await ck.mark('started');
net.createServer().listen(0);`
	target := process.Target{Argv: []string{node, "--input-type=module", "-e", script}}
	_, err = sim.NewRunner(harness.Fresh(target), sim.Options{Name: "js/hang", Timeout: time.Second})
	want := "hung: no beat for 1s of wall-clock time; the process waited where chaoskit does not see it (a promise of its own that never settles, a lock, a pipe or a socket that nothing will wake;"
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "Env") {
		t.Fatalf("err = %v\nwant it to hold %q and name no Env", err, want)
	}
}

// tourResult runs a tour of the protocol (seed 3, no fault) and returns its result, printed.
func tourResult(t *testing.T, tour process.Target) string {
	t.Helper()
	rn, err := sim.NewRunner(harness.Fresh(tour), sim.Options{Name: tour.Name(), Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	c := rn.Run(nil)
	if c.Verdict.Outcome != oracle.Pass {
		t.Fatalf("%s", c)
	}
	return fmt.Sprint(c.Result)
}

// chaoskit.d.ts and nodetest.d.ts type-check, strictly, with js/testdata/usage.ts and
// nodetest_usage.ts, which use every declaration as a harness and a test file would, through the
// package's own name. (That the declarations name exactly what the modules export is a unit
// test.) It needs tsc in PATH; without it the test is skipped, or fails under CI=true (.ci/run
// installs TypeScript).
func TestJSTypes(t *testing.T) {
	tsc := needs.Command(t, "tsc", "npm install -g typescript, to type-check js/chaoskit.d.ts")
	cmd := exec.Command(tsc, "--noEmit", "--strict", "--module", "nodenext", "--moduleResolution", "nodenext",
		"--target", "es2022", "--lib", "es2022", filepath.Join("testdata", "usage.ts"), filepath.Join("testdata", "nodetest_usage.ts"))
	cmd.Dir = "js"
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tsc: %v\n%s", err, out)
	}
}

// jsTour returns the absolute path of the JavaScript tour, js/testdata/tour.mjs.
func jsTour(t *testing.T) string {
	t.Helper()
	tour, err := filepath.Abs(filepath.Join("js", "testdata", "tour.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	return tour
}
