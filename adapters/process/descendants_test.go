package process_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/adapters/process"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
)

// A child that leaves the command's process group dies with the command all the same: one in a
// session of its own (setsid), the orphaned grandchild of a double fork, a daemon (a double
// fork through a new session, its environment cleared). After every case of a kill campaign,
// the golden runs' included, none of them is left running.
func TestEscapedChildrenDieWithTheCommand(t *testing.T) {
	for _, how := range []string{"setsid", "double-fork", "daemon"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			escapes(t, how)
		})
	}
}

// Where chaoskit cannot make cgroups, it finds a command's processes by the token in their
// environment: children in a session of their own, or orphaned by a double fork, die with the
// command. (A daemon that clears its environment escapes this way: only a cgroup holds it.)
func TestEscapedChildrenDieWithTheCommandWithoutCgroups(t *testing.T) {
	defer process.TrackByMarker()()
	for _, how := range []string{"setsid", "double-fork"} {
		t.Run(how, func(t *testing.T) { escapes(t, how) })
	}
}

// escapes runs a kill campaign of the child that leaves a process running the given way at
// every start, and fails the test if one is running after a case.
func escapes(t *testing.T, how string) {
	marks := t.TempDir()
	tg := child("correct")
	tg.Argv = append(tg.Argv, "-escape", how)
	tg.Env = []string{"CHILD_MARK=" + marks}
	// Each kill case runs its own recovery, which starts the children this test looks for.
	rn, err := newRunner(t, tg, sim.Options{Name: "child/escape-" + how, NoShare: true})
	if err != nil {
		t.Fatal(err)
	}
	left(t, marks, "the golden runs")
	g, _ := rn.Golden(nil)
	for b := range g.Len() {
		s := faults.Schedule{{Kind: faults.Kill, Beat: b}}
		if c := rn.Run(s); c.Verdict.Outcome != oracle.Pass {
			t.Errorf("%s", c)
		}
		left(t, marks, s.String())
	}
	started, _ := os.ReadDir(marks)
	if want := 2 + g.Len(); len(started) < want { // a golden run starts one, a kill case at least its recovery
		t.Fatalf("%d lingering children started, want at least %d: the test would not see one left", len(started), want)
	}
}

// left fails the test if a process started with -mark marks is still running after what.
func left(t *testing.T, marks, what string) {
	t.Helper()
	links, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var running []string
	for _, l := range links {
		b, err := os.ReadFile(l)
		if err == nil && bytes.Contains(b, []byte("\x00"+marks+"\x00")) {
			if stat, err := os.ReadFile(filepath.Join(filepath.Dir(l), "stat")); err == nil && !zombie(stat) {
				running = append(running, filepath.Base(filepath.Dir(l)))
			}
		}
	}
	if len(running) > 0 {
		t.Fatalf("after %s, lingering children still run: pids %s", what, strings.Join(running, " "))
	}
}

// zombie reports whether /proc/PID/stat describes a zombie: dead, not yet reaped by its parent.
func zombie(stat []byte) bool {
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}
