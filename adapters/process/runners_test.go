package process_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/internal/leftover"
	"github.com/chaoskit/chaoskit/internal/needs"
	"github.com/chaoskit/chaoskit/internal/testbin"
	"github.com/chaoskit/chaoskit/reports"
)

// The tests of the pytest plugin (python/pytest_chaoskit.py) and of the node:test helper
// (js/nodetest.mjs) on a harness of two orders, six beats: each runs the test runner as a team
// would, on a project of its own, and checks collection, naming, selection, failure output,
// the replay commands and the report directory. The examples' whole campaigns are in
// runners_campaign_test.go.

// installPytest says how to get the pytest the plugin's tests run.
const installPytest = "apt-get install -y python3-pytest"

// project is a directory where a test runner runs as a user types its commands: chaoskit
// on PATH, TMPDIR of the test's own, every process it starts marked as the test's.
type project struct {
	t     *testing.T
	dir   string
	env   []string
	scope *leftover.Scope
}

// newProject returns the project in dir (a new temporary directory if ""), with files written
// there.
func newProject(t *testing.T, dir string, files map[string]string) *project {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	r := &project{t: t, dir: dir}
	tmp, err := os.MkdirTemp("/tmp", "ck-runner-") // short: chaoskit's sockets live there
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	r.scope = leftover.New(tmp)
	bin := filepath.Dir(testbin.Chaoskit(t))
	r.env = append(os.Environ(), "PATH="+bin+string(filepath.ListSeparator)+os.Getenv("PATH"), "TMPDIR="+tmp,
		"PYTHONDONTWRITEBYTECODE=1", r.scope.Env())
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(r.dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// run runs a shell command line in the project and returns its output and exit status.
func (r *project) run(line string) (string, int) {
	r.t.Helper()
	cmd := exec.Command("/bin/sh", "-c", line)
	cmd.Dir, cmd.Env = r.dir, r.env
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		r.t.Fatalf("%s: %v", line, err)
	}
	return string(out), cmd.ProcessState.ExitCode()
}

// want runs line and fails the test unless it exits with code and its output holds each of
// wants; it returns the output.
func (r *project) want(line string, code int, wants ...string) string {
	r.t.Helper()
	out, got := r.run(line)
	if got != code {
		r.t.Fatalf("%s: exit %d, want %d:\n%s", line, got, code, out)
	}
	for _, w := range wants {
		if !strings.Contains(out, w) {
			r.t.Errorf("%s: the output lacks %q:\n%s", line, w, out)
		}
	}
	return out
}

// replays returns the two replay commands of the first failure in out: the test runner's and
// chaoskit's.
func replays(t *testing.T, out string) (runner, chaoskit string) {
	t.Helper()
	m := regexp.MustCompile(`(?m)^\s*replay: (.+)\n\s*or: (chaoskit replay .+?)\]?$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no replay commands in:\n%s", out)
	}
	return m[1], m[2]
}

// sameReport fails the test unless the report directories' report.json are the same, their
// wall-clock fields (*_ms), trailer and provenance (the command line that made each) aside:
// reports.Comparable.
func sameReport(t *testing.T, want, got string) {
	t.Helper()
	var reps [2][]byte
	for i, dir := range []string{want, got} {
		b, err := os.ReadFile(filepath.Join(dir, "report.json"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte(`"provenance"`)) || !bytes.Contains(b, []byte(`"duration_ms"`)) {
			t.Fatalf("%s/report.json has no provenance or duration_ms to leave out: the comparison would prove nothing", dir)
		}
		if reps[i], err = reports.Comparable(b, "provenance"); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
	}
	if bytes.Equal(reps[0], reps[1]) {
		return
	}
	al, bl := strings.Split(string(reps[0]), "\n"), strings.Split(string(reps[1]), "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			t.Fatalf("%s and %s differ first at line %d of their reports:\n  %s\n  %s", want, got, i+1, al[i], bl[i])
		}
	}
	t.Fatalf("%s's report has %d lines, %s's %d", want, len(al), got, len(bl))
}

// ordersPy is a harness of two orders: each filed with create_po, then saved, then marked; a
// restart resumes after the last order saved. --broken files without a key, so a kill between
// the filing and the save files the order twice.
const ordersPy = `import json, os, sys
sys.path.insert(0, %q)
import chaoskit

state = os.environ.get("CHAOSKIT_STATE_DIR", ".")
if "--dump-state" in sys.argv:
    p = os.path.join(state, "orders.json")
    print(open(p).read() if os.path.exists(p) else "[]")
    sys.exit(0)
ck = chaoskit.connect()
path = os.path.join(ck.state_dir, "orders.json")
orders = json.load(open(path)) if os.path.exists(path) else []
for i in range(len(orders), 2):
    reply = ck.call("create_po", {"order": i}, key=None if "--broken" in sys.argv else "po-%%d" %% i)
    orders.append(reply.id)
    with open(path + ".tmp", "w") as f:
        json.dump(orders, f)
    os.replace(path + ".tmp", path)
    ck.mark("order %%d" %% i)
ck.done(orders)
`

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// ordersMjs is ordersPy in JavaScript.
const ordersMjs = `import fs from 'node:fs';
import path from 'node:path';
import { connect } from %q;

const broken = process.argv.includes('--broken');
if (process.argv.includes('--dump-state')) {
  const p = path.join(process.env.CHAOSKIT_STATE_DIR ?? '.', 'orders.json');
  process.stdout.write(fs.existsSync(p) ? fs.readFileSync(p, 'utf8') : '[]');
} else {
  const ck = await connect();
  const file = path.join(ck.stateDir, 'orders.json');
  const orders = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')) : [];
  for (let i = orders.length; i < 2; i++) {
    const reply = await ck.call({ tool: 'create_po', args: { order: i }, key: broken ? undefined : 'po-' + i });
    orders.push(reply.id);
    fs.writeFileSync(file + '.tmp', JSON.stringify(orders));
    fs.renameSync(file + '.tmp', file);
    await ck.mark('order ' + i);
  }
  await ck.done(orders);
}
`

// holdPy and holdMjs are the orders harness whose restarted processes (a case's, after its
// kill: a golden run has none) wait for the test: the first of them creates the file "first" in
// the project and goes on, so that case passes; any other creates "held" and waits until it is
// killed, on what nothing wakes (a sleep would not do: it waits in virtual time and ends at once). A campaign run one case at a time is then in its second case when "held" appears.
const (
	holdPy = `import os, threading
if os.environ.get("CHAOSKIT_PROCESS", "0") != "0":
    try:
        os.close(os.open("first", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        open("held", "w").close()
        threading.Event().wait()
`
	holdMjs = `if ((process.env.CHAOSKIT_PROCESS ?? '0') !== '0') {
  try {
    fs.closeSync(fs.openSync('first', 'wx'));
  } catch {
    fs.writeFileSync('held', '');
    (await import('node:net')).createServer().listen(0);
    await new Promise(() => {});
  }
}
`
)

// Who gets the SIGINT that interrupt sends.
const (
	toGroup    = "group"    // the command's process group, as Ctrl-C in a terminal sends it
	toIgnoring = "ignoring" // the same, to a command that ignores SIGINT, as a shell's background job does
	toChaoskit = "chaoskit" // the chaoskit run under way, alone
)

// interrupt runs a shell command line in the project, in a process group of its own; once the
// file "held" appears in the project it sends SIGINT to, and returns the output and exit code.
func (r *project) interrupt(line, to string) (string, int) {
	r.t.Helper()
	line = "exec " + line // SIGINT goes to the command, not to a shell waiting for it
	if to == toIgnoring {
		line = "trap '' INT; " + line
	}
	cmd := exec.Command("/bin/sh", "-c", line)
	cmd.Dir, cmd.Env = r.dir, r.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A Go program started with SIGINT ignored keeps it ignored, and so would its children; one
	// that handles it gives them the default disposition. So handle it while the command starts.
	caught := make(chan os.Signal, 1)
	signal.Notify(caught, syscall.SIGINT)
	err := cmd.Start()
	signal.Stop(caught)
	if err != nil {
		r.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	held := filepath.Join(r.dir, "held")
	for {
		if _, err := os.Stat(held); err == nil {
			break
		}
		select {
		case <-done:
			r.t.Fatalf("%s: ended before its second case started:\n%s", line, out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	pid := -cmd.Process.Pid
	if to == toChaoskit {
		pid = 0
		for _, p := range r.scope.Left() { // "process PID: COMMAND LINE"
			if strings.Contains(p, "chaoskit run ") && strings.Contains(p, " --stream") {
				fmt.Sscanf(p, "process %d:", &pid)
			}
		}
		if pid == 0 {
			r.t.Fatalf("no chaoskit run under way among:\n%s", strings.Join(r.scope.Left(), "\n"))
		}
	}
	syscall.Kill(pid, syscall.SIGINT)
	<-done
	return out.String(), cmd.ProcessState.ExitCode()
}

// Ctrl-C in the middle of a pytest session stops it as pytest stops, with its own interrupted
// summary: the cases run are reported, the others neither run nor failed, no advice to resume
// from the temporary directory the plugin removed, and nothing left behind. The same when pytest
// ignores SIGINT (a shell's background job) and only chaoskit stops on it.
func TestPytestInterrupted(t *testing.T) {
	py := pythonExe(t)
	needs.Command(t, "pytest", installPytest)
	t.Parallel()
	client, _ := filepath.Abs("python")
	harness := strings.Replace(fmt.Sprintf(ordersPy, client), "ck = chaoskit.connect()\n", "ck = chaoskit.connect()\n"+holdPy, 1)
	for _, to := range []string{toGroup, toIgnoring} {
		t.Run(to, func(t *testing.T) {
			t.Parallel()
			r := newProject(t, "", map[string]string{
				"orders.py":   harness,
				"conftest.py": fmt.Sprintf("import sys\nsys.path.insert(0, %q)\npytest_plugins = [\"pytest_chaoskit\"]\n", client),
				"test_orders.py": fmt.Sprintf(`HARNESS = [%q, "-S", "-B", "orders.py"]


def test_orders(chaoskit):
    chaoskit.check(HARNESS, tools={"create_po": "idempotent-by-key"}, state=HARNESS + ["--dump-state"],
                   faults=["kill"], parallel=1)
`, py),
			})
			out, code := r.interrupt("pytest -v -p no:cacheprovider test_orders.py", to)
			if code != 2 {
				t.Errorf("exit %d, want 2 (pytest's for an interrupted session)", code)
			}
			for _, want := range []string{"test_orders.py::test_orders[kill@0] PASSED", "KeyboardInterrupt", "1 passed in"} {
				if !strings.Contains(out, want) {
					t.Errorf("the output lacks %q", want)
				}
			}
			for _, bad := range []string{"FAILED", "--resume", "failed"} {
				if strings.Contains(out, bad) {
					t.Errorf("the output holds %q", bad)
				}
			}
			if t.Failed() {
				t.Logf("the output:\n%s", out)
			}
			r.scope.Check(t)
		})
	}
}

// Ctrl-C in the middle of node --test leaves nothing behind: the helper's temporary directory,
// which holds chaoskit run's journal, goes with the chaoskit run it stops. When SIGINT reaches
// chaoskit alone, the cases it did not run are skipped, not failed, and the run exits non-zero.
func TestNodeTestInterrupted(t *testing.T) {
	needNode(t)
	t.Parallel()
	client, _ := filepath.Abs(filepath.Join("js", "chaoskit.mjs"))
	helper, _ := filepath.Abs(filepath.Join("js", "nodetest.mjs"))
	harness := strings.Replace(fmt.Sprintf(ordersMjs, client), "  const ck = await connect();\n", "  const ck = await connect();\n"+holdMjs, 1)
	for _, to := range []string{toGroup, toChaoskit} {
		t.Run(to, func(t *testing.T) {
			t.Parallel()
			r := newProject(t, "", map[string]string{
				"orders.mjs": harness,
				"orders.test.mjs": fmt.Sprintf(`import { check } from %q;

check('orders', {
  exec: ['node', 'orders.mjs'],
  tools: { create_po: 'idempotent-by-key' },
  state: 'node orders.mjs --dump-state',
  faults: ['kill'],
  parallel: 1,
});
`, helper),
			})
			out, code := r.interrupt("node --test --test-reporter=spec", to)
			if code == 0 {
				t.Errorf("exit 0, want the code of an interrupted run")
			}
			if !strings.Contains(out, "✔ kill@0") {
				t.Errorf("the output lacks the first case, passed")
			}
			if strings.Contains(out, "✖ kill@") {
				t.Errorf("a case not run is reported failed")
			}
			if to == toChaoskit && !strings.Contains(out, "﹣ kill@1 (") {
				t.Errorf("the case under way is not reported skipped")
			}
			if t.Failed() {
				t.Logf("the output:\n%s", out)
			}
			r.scope.Check(t)
		})
	}
}
