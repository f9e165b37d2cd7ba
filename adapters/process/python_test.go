package process_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/adapters/process"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/internal/needs"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
)

var (
	pythonOnce sync.Once
	pythonPath string
	pythonErr  error
)

// The commands that install what the Python tests need.
const (
	installPython = "apt-get install -y python3"
	installGit    = "apt-get install -y git"
)

// pythonExe returns the interpreter that python3 runs, found once by asking it, so that each
// process starts it directly: a version manager's python3 (pyenv's shim) costs a second or
// more per start. Without python3 it skips the test, or fails it under CI=true (needs.Command).
func pythonExe(t testing.TB) string {
	t.Helper()
	needs.Command(t, "python3", installPython)
	pythonOnce.Do(func() {
		out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
		pythonPath, pythonErr = strings.TrimSpace(string(out)), err
		if err == nil && pythonPath == "" {
			pythonErr = errors.New("sys.executable is empty")
		}
	})
	if pythonErr != nil {
		t.Fatalf("finding the interpreter python3 runs: %v", pythonErr)
	}
	return pythonPath
}

// pythonArgv returns the command that runs a Python file of this package's tree with args.
// It runs without the site module (-S): the programs need only the standard library, which -S
// proves, and site's start-up is a good part of a short process's cost (pyenv's loads certifi).
// -B leaves no __pycache__ in the source tree.
func pythonArgv(t testing.TB, script string, args ...string) []string {
	t.Helper()
	p, err := filepath.Abs(filepath.FromSlash(script))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{pythonExe(t), "-S", "-B", p}, args...)
}

// The Python client's unit tests, against a fake chaoskit.
func TestPythonClientUnit(t *testing.T) {
	cmd := exec.Command(pythonExe(t), "-B", "-m", "unittest", "-q")
	cmd.Dir = "python"
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("python3 -m unittest in python/: %v\n%s", err, out)
	}
}

// The Python client makes every request of the protocol under a real chaoskit, and gets what
// the Go client's tour gets (TestEveryRequest), plus the lease's new expiry.
func TestPythonTour(t *testing.T) {
	target := process.Target{Argv: pythonArgv(t, "python/tour.py"), ToolList: tools}
	rn, err := sim.NewRunner(harness.Fresh(target), sim.Options{Name: "python/tour", Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	c := rn.Run(nil)
	got, err := json.Marshal(c.Result)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"attempt":0,"await_deadline":true,"lease_extended":10,"lookup":["create_po-1",null],"message":"check-1","messages":1,"model":"file the order","po":"create_po-1","process":0,"random":true,"replayed":true,"slept":90,"token":1,"worker":0}`
	if string(got) != want || c.Verdict.Outcome != oracle.Pass {
		t.Fatalf("result %s\nwant   %s\n%s", got, want, c)
	}
}

// A Python harness that refuses to go on, once restarted after a kill, ends its run there: the
// case passes as refused, with its reason.
func TestPythonRefuse(t *testing.T) {
	client, _ := filepath.Abs("python")
	script := `import sys; sys.path.insert(0, sys.argv[1]); import chaoskit
ck = chaoskit.connect()
if ck.process == 0:
    ck.mark("started")
    ck.done("done")
else:
    ck.refuse("cannot tell whether order 7 was filed")`
	target := process.Target{Argv: []string{pythonExe(t), "-S", "-B", "-c", script, client}}
	rn, err := sim.NewRunner(harness.Fresh(target), sim.Options{Name: "python/refuse"})
	if err != nil {
		t.Fatal(err)
	}
	c := rn.Run(faults.Schedule{{Kind: faults.Kill, Beat: 0}})
	if c.Verdict.Outcome != oracle.Pass || !strings.Contains(c.Verdict.Refused, "cannot tell whether order 7 was filed") {
		t.Fatalf("%s (refused %q)", c, c.Verdict.Refused)
	}
}

// A Python harness that hangs, or makes no beat, is told so in its client's words, not in the
// Go Env's.
func TestPythonAdviceInItsWords(t *testing.T) {
	client, _ := filepath.Abs("python")
	for _, tc := range []struct{ name, body, want string }{
		{"hang", `ck.mark("started")
import threading; threading.Event().wait()`, "hung: no beat for 1s of wall-clock time; the process waited where chaoskit does not see it (a thread's join, a lock, an Event,"},
		{"nobeat", `ck.done(None)`, "made no beat: chaoskit saw nothing it did, so no fault can reach it. A process reaches chaoskit through its client: ck.call for tools,"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := "import sys; sys.path.insert(0, sys.argv[1]); import chaoskit\nck = chaoskit.connect()\n" + tc.body
			target := process.Target{Argv: []string{pythonExe(t), "-S", "-B", "-c", script, client}}
			opts := sim.Options{Name: "python/" + tc.name}
			if tc.name == "hang" {
				// Short, for a wait that never ends; the other keeps the default, so that a
				// Python start slowed by a busy machine is not taken for a hang.
				opts.Timeout = time.Second
			}
			_, err := sim.NewRunner(harness.Fresh(target), opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "Env") {
				t.Fatalf("err = %v\nwant it to hold %q and name no Env", err, tc.want)
			}
		})
	}
}

// The package of the client and the plugin installs with pip where no package index can be
// reached and neither setuptools nor wheel is at hand (pyenv's Python here has no wheel): in a
// fresh virtual environment, --no-build-isolation --no-index, as python/README.md says. pytest
// finds the plugin by its entry point, and the source directory is left as it was.
func TestPythonPackageInstallsOffline(t *testing.T) {
	py := pythonExe(t)
	src, _ := filepath.Abs("python")
	before, _ := os.ReadDir(src)
	venv := filepath.Join(t.TempDir(), "venv")
	if out, err := exec.Command(py, "-m", "venv", "--system-site-packages", "--without-pip", venv).CombinedOutput(); err != nil {
		needs.Missing(t, fmt.Sprintf("python3 -m venv: %v: %s: apt-get install -y python3-venv", err, out))
	}
	vpy := filepath.Join(venv, "bin", "python")
	if out, err := exec.Command(vpy, "-m", "pip", "--version").CombinedOutput(); err != nil {
		needs.Missing(t, fmt.Sprintf("python3 -m pip: %v: %s: apt-get install -y python3-pip", err, out))
	}
	pip := exec.Command(vpy, "-m", "pip", "install", "--no-build-isolation", "--no-index", "--no-cache-dir", src)
	pip.Env = append(os.Environ(), "PIP_DISABLE_PIP_VERSION_CHECK=1")
	if out, err := pip.CombinedOutput(); err != nil {
		t.Fatalf("pip install: %v\n%s", err, out)
	}
	check := exec.Command(vpy, "-c", `import chaoskit, importlib.metadata as m, sys
eps = [e.value for e in m.entry_points().select(group="pytest11") if e.name == "pytest_chaoskit"]
print(chaoskit.__file__.startswith(sys.prefix), eps, m.version("chaoskit"))`)
	check.Dir = t.TempDir() // not the source directory, whose chaoskit.py would be found first
	out, err := check.CombinedOutput()
	if got := strings.TrimSpace(string(out)); err != nil || got != "True ['pytest_chaoskit'] 0.1.0" {
		t.Fatalf("the installed package: %v: %s", err, got)
	}
	after, _ := os.ReadDir(src)
	if len(after) != len(before) {
		t.Errorf("the install left files in %s: %v, was %v", src, after, before)
	}
}
