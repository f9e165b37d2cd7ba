//go:build campaigns

package process_test

import (
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
