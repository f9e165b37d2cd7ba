package process_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/adapters/process"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/internal/needs"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
)

// A key used again with other arguments is refused to the harness with the client's own error
// (the protocol's key_reused), whose message names both argument sets, and the case breaks
// no-key-reuse, naming them too. Each harness files its order under one key with an amount that
// depends on the process, so that the retry after a kill sends other arguments.
func TestKeyReusedInEveryClient(t *testing.T) {
	dir, _ := filepath.Abs(".")
	for _, tc := range []struct {
		name string
		argv func(t *testing.T) []string
	}{
		{"python", func(t *testing.T) []string {
			script := `import sys; sys.path.insert(0, sys.argv[1]); import chaoskit
ck = chaoskit.connect()
try:
    ck.call("create_po", {"usd": 100 * (ck.process + 1)}, key="po-1")
    out = "filed"
except chaoskit.KeyReused as e:
    out = "%s: %s" % (type(e).__name__, e.message)
ck.mark("filed")
ck.done(out)`
			return []string{pythonExe(t), "-S", "-B", "-c", script, filepath.Join(dir, "python")}
		}},
		{"javascript", func(t *testing.T) []string {
			node := needs.Command(t, "node", installNode)
			script := fmt.Sprintf(`const ck = await import(%q);
const c = await ck.connect();
let out = 'filed';
try {
  await c.call({tool: 'create_po', args: {usd: 100 * (c.process + 1)}, key: 'po-1'});
} catch (e) {
  if (!(e instanceof ck.KeyReusedError)) throw e;
  out = e.name + ': ' + e.message;
}
await c.mark('filed');
await c.done(out);
c.close();`, filepath.Join(dir, "js", "chaoskit.mjs"))
			return []string{node, "--input-type=module", "-e", script}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := process.Target{Argv: tc.argv(t), ToolList: tools}
			rn, err := sim.NewRunner(harness.Fresh(target), sim.Options{Name: tc.name})
			if err != nil {
				t.Fatal(err)
			}
			c := rn.Run(faults.Schedule{{Kind: faults.Kill, Beat: 2}}) // at the mark, after the call
			if !c.Breaks(oracle.NoKeyReuse) {
				t.Fatalf("want no-key-reuse broken:\n%s", c)
			}
			res, _ := c.Result.(string)
			for _, want := range []string{"KeyReused", "Keys for idempotent requests can only be used with the same parameters", `{"usd":100}`, `{"usd":200}`} {
				if !strings.Contains(res, want) {
					t.Errorf("the harness was told %q, want it to say %q", res, want)
				}
			}
			if d := c.Verdict.Violations[0].Detail; !strings.Contains(d, `first used with {"usd":100}`) || !strings.Contains(d, `used again with {"usd":200}`) {
				t.Errorf("the violation says %q, want both argument sets", d)
			}
		})
	}
}
