//go:build campaigns

package process_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/internal/needs"
)

// The examples' campaigns from their teams' test runners give the cases and verdicts of
// chaoskit run with the same options: the report directory pytest (examples/burr/test_app.py)
// and node --test (examples/node/app.test.mjs) write is the one chaoskit run writes, wall-clock
// fields and the command line that made it aside, for the correct harness and the broken one.

func TestBurrExampleUnderPytest(t *testing.T) {
	py := pythonExe(t)
	needs.Command(t, "pytest", installPytest)
	dir, _ := filepath.Abs(filepath.Join("examples", "burr"))
	r := newProject(t, dir, nil)
	// python3 as app.py's command line names it, without the start-up cost of a version
	// manager's shim (see pythonExe).
	r.env = append(r.env, "PATH="+filepath.Dir(py)+":"+envValue(r.env, "PATH"))
	out := t.TempDir()
	for _, tc := range []struct {
		broken          bool
		env, want, flag string
		code            int
	}{
		{false, "", "31 passed", "", 0},
		{true, "BROKEN=1 ", "15 failed, 16 passed", " --broken", 1},
	} {
		name := map[bool]string{false: "correct", true: "broken"}[tc.broken]
		r.want(tc.env+"pytest -q -p no:cacheprovider --chaoskit-out "+filepath.Join(out, name), tc.code, tc.want)
		r.want("chaoskit run --exec 'python3 app.py"+tc.flag+"' --tool create_po=idempotent-by-key,latency=1s "+
			"--state 'python3 app.py --dump-state' --faults kill,tool --format json --out "+filepath.Join(out, name+"-cli"), tc.code)
		sameReport(t, filepath.Join(out, name+"-cli"), filepath.Join(out, name, "test_app.test_survives_crashes"))
	}
	r.scope.Check(t)
}

func TestNodeExampleUnderNodeTest(t *testing.T) {
	needNode(t)
	r := newProject(t, nodeExampleDir(t), nil)
	out := t.TempDir()
	for _, tc := range []struct {
		env, want, flag string
		code            int
	}{
		{"", "# pass 18", "", 0},
		{"BROKEN=1 ", "# fail 9", " --broken", 1},
	} {
		name := map[bool]string{false: "correct", true: "broken"}[tc.flag != ""]
		r.want(tc.env+"CHAOSKIT_OUT="+filepath.Join(out, name)+" node --test", tc.code, tc.want)
		r.want("chaoskit run --exec 'node app.mjs"+tc.flag+"' --tool create_po=idempotent-by-key,latency=1s "+
			"--state 'node app.mjs --dump-state' --faults kill,tool --format json --out "+filepath.Join(out, name+"-cli"), tc.code)
		sameReport(t, filepath.Join(out, name+"-cli"), filepath.Join(out, name, "app.mjs_survives_crashes_and_tool_faults"))
	}
	r.scope.Check(t)
}

// envValue returns the value of the variable name in env, the last one set.
func envValue(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if k, x, ok := strings.Cut(kv, "="); ok && k == name {
			v = x
		}
	}
	return v
}

// The pytest plugin as a Python team uses it: a test per case named for its schedule, in both
// forms (the fixture's check(), the marker); -x stops at the first failure, which prints the
// property, the beats around the fault and two replay commands that fail the same way; -k picks
// a case by its schedule; --lf runs the failed ones again; --chaoskit-out writes the report
// chaoskit run writes; a target refused as not deterministic fails one test saying why, and
// its report holds the refusal; without chaoskit, one line says how to install it.
func TestPytestPlugin(t *testing.T) {
	py := pythonExe(t)
	needs.Command(t, "pytest", installPytest)
	t.Parallel()
	client, _ := filepath.Abs("python")
	harness := fmt.Sprintf("[%q, '-S', '-B', 'orders.py']", py)
	r := newProject(t, "", map[string]string{
		"orders.py": fmt.Sprintf(ordersPy, client),
		"noisy.py": fmt.Sprintf(`import os, sys
sys.path.insert(0, %q)
import chaoskit
ck = chaoskit.connect()
with open(os.path.join(ck.state_dir, "noise"), "wb") as f:
    f.write(os.urandom(8))  # another state every run
ck.mark("noise")
ck.done(None)
`, client),
		"conftest.py": fmt.Sprintf("import sys\nsys.path.insert(0, %q)\npytest_plugins = [\"pytest_chaoskit\"]\n", client),
		"test_orders.py": fmt.Sprintf(`import pytest

HARNESS = %s
TOOLS = {"create_po": "idempotent-by-key"}


def test_orders(chaoskit):
    chaoskit.check(HARNESS, tools=TOOLS, state=HARNESS + ["--dump-state"], faults=["kill"])


@pytest.mark.chaoskit(HARNESS + ["--broken"], tools=TOOLS, state=HARNESS + ["--dump-state"], faults="kill")
def test_broken_orders(chaoskit):
    assert chaoskit.case["verdict"] == "pass"  # the body runs once the case passed
`, harness),
		"test_undecided.py": fmt.Sprintf("def test_undecided(chaoskit):\n    chaoskit.check(%s, tools={'create_po': 'idempotent-by-key'}, faults=['kill', 'callback-dup'])\n", harness),
		"test_noisy.py":     fmt.Sprintf("def test_noisy(chaoskit):\n    chaoskit.check([%q, '-S', '-B', 'noisy.py'], tools={'create_po': 'idempotent-by-key'})\n", py),
	})

	out := r.want("pytest -q --co test_orders.py", 0, "12 tests collected")
	for _, test := range []string{"test_orders", "test_broken_orders"} {
		for beat := range 6 {
			if want := fmt.Sprintf("test_orders.py::%s[kill@%d]\n", test, beat); !strings.Contains(out, want) {
				t.Errorf("--co lacks %q:\n%s", want, out)
			}
		}
	}

	out = r.want("pytest -q -x -p no:cacheprovider test_orders.py", 1, "1 failed, 7 passed", "stopping after 1 failures",
		"FAILED test_orders.py::test_broken_orders[kill@1]",
		"orders.py --broken under kill@1 (seed 1): fail", "violated no-duplicate-effects: create_po {\"order\":0} applied 2×",
		"beats around the fault:", "p0  tool create_po applied   <- kill@1",
		"replay: pytest -p no:cacheprovider 'test_orders.py::test_broken_orders[kill@1]'")
	pytestReplay, chaoskitReplay := replays(t, out)
	r.want(pytestReplay, 1, "1 failed in", "violated no-duplicate-effects")
	r.want(chaoskitReplay, 1, "under kill@1 (seed 1): fail", "violated no-duplicate-effects")
	r.scope.Check(t) // -x stopped the campaign under way

	r.want("pytest -q -p no:cacheprovider -k 'kill@4' test_orders.py", 1, "1 failed, 1 passed, 10 deselected",
		"FAILED test_orders.py::test_broken_orders[kill@4]")

	out = r.want("pytest -q --chaoskit-out reports test_orders.py", 1, "2 failed, 10 passed",
		"wrote the report directory reports/test_orders.test_broken_orders")
	r.want("pytest -q --lf test_orders.py", 1, "2 failed, 10 deselected")
	cli := fmt.Sprintf("chaoskit run --exec %s --tool create_po=idempotent-by-key --state %s --faults kill --out cli --format json",
		shellQuote(py+" -S -B orders.py --broken"), shellQuote(py+" -S -B orders.py --dump-state"))
	r.want(cli, 1)
	sameReport(t, filepath.Join(r.dir, "cli"), filepath.Join(r.dir, "reports", "test_orders.test_broken_orders"))

	r.want("pytest -q -p no:cacheprovider --chaoskit-out reports test_noisy.py", 1, "1 failed",
		"FAILED test_noisy.py::test_noisy[golden]", "target is not deterministic: two golden runs left different states",
		"wrote the report directory reports/test_noisy.test_noisy")
	cases, err := readCases(filepath.Join(r.dir, "reports", "test_noisy.test_noisy"))
	if err != nil || len(cases) != 1 || cases[0].Verdict != "unknown" {
		t.Errorf("the refused campaign's report: %+v, %v", cases, err)
	}

	// A fault kind of which the campaign has no case (callback-dup: no asynchronous tool) fails
	// a test of its own, as chaoskit run exits 3 for it, while every case passes.
	r.want("pytest -q -p no:cacheprovider test_undecided.py", 1, "1 failed, 6 passed",
		"FAILED test_undecided.py::test_undecided[undecided]", "nothing will be decided for", "under callback-dup: it has no case of them")

	r.want("PATH=/usr/bin:/bin pytest -q -p no:cacheprovider test_orders.py", 1, "2 failed",
		"chaoskit: the chaoskit command is not on PATH; install it with go install github.com/chaoskit/chaoskit/cmd/chaoskit@latest (or give --chaoskit-bin PATH)")
	r.scope.Check(t)
}

// The node:test helper as a JavaScript team uses it: a suite with a test per case named for its
// schedule; a failure prints the property, the beats around the fault and two replay commands
// that fail the same way; --test-name-pattern runs one case, and only that case runs (its report
// holds it alone); CHAOSKIT_OUT writes the report chaoskit run writes; without chaoskit, one
// line says how to install it.
func TestNodeTestHelper(t *testing.T) {
	needNode(t)
	t.Parallel()
	client, _ := filepath.Abs(filepath.Join("js", "chaoskit.mjs"))
	helper, _ := filepath.Abs(filepath.Join("js", "nodetest.mjs"))
	r := newProject(t, "", map[string]string{
		"orders.mjs": fmt.Sprintf(ordersMjs, client),
		"orders.test.mjs": fmt.Sprintf(`import { check } from %q;

check('orders', {
  exec: ['node', 'orders.mjs', ...(process.env.BROKEN ? ['--broken'] : [])],
  tools: { create_po: 'idempotent-by-key' },
  state: 'node orders.mjs --dump-state',
  faults: process.env.FAULTS ? process.env.FAULTS.split(',') : ['kill'],
});
`, helper),
	})
	r.want("node --test", 0, "# pass 6", "# fail 0")

	out := r.want("BROKEN=1 CHAOSKIT_OUT=reports node --test --test-reporter=spec", 1, "✔ kill@0", "✖ kill@1", "✖ kill@4", "ℹ pass 4",
		"node orders.mjs --broken under kill@1 (seed 1): fail", `violated no-duplicate-effects: create_po {"order":0} applied 2×`,
		"beats around the fault:", "p0  tool create_po applied   <- kill@1",
		"replay: node --test --test-name-pattern '^kill@1$' orders.test.mjs",
		"chaoskit: orders: wrote the report directory "+filepath.Join(r.dir, "reports", "orders"))
	nodeReplay, chaoskitReplay := replays(t, out)
	r.want("BROKEN=1 "+nodeReplay, 1, "# pass 0", "# fail 1", "# skipped 5", "violated no-duplicate-effects")
	r.want(chaoskitReplay, 1, "under kill@1 (seed 1): fail", "violated no-duplicate-effects")
	r.want("chaoskit run --exec 'node orders.mjs --broken' --tool create_po=idempotent-by-key --state 'node orders.mjs --dump-state' --faults kill --out cli --format json", 1)
	sameReport(t, filepath.Join(r.dir, "cli"), filepath.Join(r.dir, "reports", "orders"))

	r.want("BROKEN=1 CHAOSKIT_OUT=one node --test --test-name-pattern '^kill@4$'", 1, "# fail 1", "# skipped 5")
	if cases, err := readCases(filepath.Join(r.dir, "one", "orders")); err != nil || len(cases) != 1 || cases[0].Schedule != "kill@4" {
		t.Errorf("a pattern that names one case ran %+v (%v), want kill@4 alone", cases, err)
	}

	// A fault kind of which the campaign has no case (callback-dup: no asynchronous tool) fails
	// a test of its own, as chaoskit run exits 3 for it, while every case passes.
	r.want("FAULTS=kill,callback-dup node --test --test-reporter=spec", 1, "✖ undecided", "ℹ pass 6", "ℹ fail 1",
		"chaoskit: nothing will be decided for node orders.mjs under callback-dup: it has no case of them")

	r.want("PATH=/usr/bin:/bin node --test", 1, "# fail 1",
		"the chaoskit command is not on PATH; install it with go install github.com/chaoskit/chaoskit/cmd/chaoskit@latest (or set CHAOSKIT_BIN)")
	r.scope.Check(t)
}
