package process_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/internal/needs"
)

// A deploy's grace period is given where the next version is, in pytest's check() and
// node:test's: it reaches chaoskit run as --grace, so the report records it, and a value that
// is no duration is refused naming the option and the value. (That a report's grace reaches
// every replay command is cmd/chaoskit's to test: exec_test.go.)
func TestRunnersPassTheGracePeriod(t *testing.T) {
	py := pythonExe(t)
	client, _ := filepath.Abs("python")
	jsClient, _ := filepath.Abs(filepath.Join("js", "chaoskit.mjs"))
	helper, _ := filepath.Abs(filepath.Join("js", "nodetest.mjs"))
	for _, tc := range []struct {
		runner, line string
		files        func(grace string) map[string]string
	}{
		{"pytest", "pytest -q -p no:cacheprovider test_orders.py", func(grace string) map[string]string {
			return map[string]string{
				"orders.py":   fmt.Sprintf(ordersPy, client),
				"conftest.py": fmt.Sprintf("import sys\nsys.path.insert(0, %q)\npytest_plugins = [\"pytest_chaoskit\"]\n", client),
				"test_orders.py": fmt.Sprintf(`HARNESS = [%q, "-S", "-B", "orders.py"]


def test_orders(chaoskit):
    chaoskit.check(HARNESS, upgrade=HARNESS, grace=%q, tools={"create_po": "idempotent-by-key"},
                   state=HARNESS + ["--dump-state"], faults=["upgrade"])
`, py, grace),
			}
		}},
		{"node", "node --test", func(grace string) map[string]string {
			return map[string]string{
				"orders.mjs": fmt.Sprintf(ordersMjs, jsClient),
				"orders.test.mjs": fmt.Sprintf(`import { check } from %q;

check('orders', {
  exec: ['node', 'orders.mjs'],
  upgrade: ['node', 'orders.mjs'],
  grace: %q,
  tools: { create_po: 'idempotent-by-key' },
  state: 'node orders.mjs --dump-state',
  faults: ['upgrade'],
});
`, helper, grace),
			}
		}},
	} {
		t.Run(tc.runner, func(t *testing.T) {
			if tc.runner == "pytest" {
				needs.Command(t, "pytest", installPytest)
			} else {
				needNode(t)
			}
			t.Parallel()
			r := newProject(t, "", tc.files("0"))
			r.want("CHAOSKIT_OUT=reports "+tc.line, 0)
			reps, _ := filepath.Glob(filepath.Join(r.dir, "reports", "*", "report.json"))
			if len(reps) != 1 {
				t.Fatalf("%d report.json under reports/, want 1", len(reps))
			}
			b, err := os.ReadFile(reps[0])
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), `"grace": "0s"`) {
				t.Errorf("%s does not record the grace period given, 0s", reps[0])
			}
			bad := newProject(t, "", tc.files("soon"))
			out := bad.want(tc.line, 1, "--grace")
			if !strings.Contains(out, "soon") {
				t.Errorf("the error does not name the value given:\n%s", out)
			}
			r.scope.Check(t)
			bad.scope.Check(t)
		})
	}
}
