//go:build campaigns

package process_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// The whole campaigns of examples/upgrade: with a migration, version 2 takes over at every beat,
// after a kill at every beat too; without one, every deploy strands the run (version 1 records
// the run before its first shipment, so every deploy finds a checkpoint of version 1 to misread).
func TestUpgradeExampleCampaigns(t *testing.T) {
	sh := newShell(t)
	text, code, cases := upgradeRun(sh, nil, "migrated", "--faults", "kill,upgrade")
	if code != 0 || len(cases) == 0 {
		t.Errorf("with a migration: exit %d, %d cases; want exit 0\n%s", code, len(cases), text)
	}

	text, code, cases = upgradeRun(sh, []string{"--no-migration"}, "stranded", "--faults", "upgrade")
	for _, c := range cases {
		if c.Verdict != "fail" || !c.Stranded {
			t.Errorf("%s: %s, stranded %v: want a failure, stranded", c.Schedule, c.Verdict, c.Stranded)
		}
	}
	if code != 1 || len(cases) == 0 {
		t.Errorf("without a migration: exit %d, %d cases; want exit 1 and failures\n%s", code, len(cases), text)
	}
	sh.clean()
}

// The whole campaigns of examples/upgrade's version 2 --grams, which sends weights in grams
// under the keys version 1 sent kilograms under: finishing the shipment version 1 may have had
// in flight as version 1 sent it, it survives a kill and a deploy at every beat; sending it in
// grams (--no-in-flight), it fails exactly the deploys that land after the carrier applied a
// shipment and before version 1 checkpointed it (the golden run's beats 1, 3 and 5: each
// shipment's application), each no-key-reuse and marked duplicated.
func TestUpgradeExampleChangedArgsCampaigns(t *testing.T) {
	sh := newShell(t)
	text, code, cases := upgradeRun(sh, []string{"--grams"}, "kept", "--faults", "kill,upgrade")
	if code != 0 || len(cases) == 0 {
		t.Errorf("--grams: exit %d, %d cases; want exit 0\n%s", code, len(cases), text)
	}

	text, code, cases = upgradeRun(sh, []string{"--grams", "--no-in-flight"}, "reused", "--faults", "upgrade")
	var failed []string
	for _, c := range cases {
		_, reused := c.detail("no-key-reuse")
		switch {
		case c.Verdict == "pass":
		case reused && c.Duplicated && !c.Stranded && !c.Replanned:
			failed = append(failed, c.Schedule)
		default:
			t.Errorf("%s: %s, %+v: want a pass, or a failure of no-key-reuse marked duplicated only", c.Schedule, c.Verdict, c)
		}
	}
	if want := "upgrade@1 upgrade@3 upgrade@5"; code != 1 || strings.Join(failed, " ") != want {
		t.Errorf("--grams --no-in-flight: exit %d, failed %v; want exit 1 and %s\n%s", code, failed, want, text)
	}
	sh.clean()
}

// node:test takes the next version too (check()'s upgrade option): the same deploy of
// examples/upgrade, with the migration, passes there.
func TestUpgradeUnderNodeTest(t *testing.T) {
	pythonExe(t)
	needNode(t)
	helper, _ := filepath.Abs(filepath.Join("js", "nodetest.mjs"))
	app, _ := filepath.Abs("examples/upgrade/app.py")
	r := newProject(t, "", map[string]string{"deploy.test.mjs": fmt.Sprintf(`import { check } from %q;

check('deploy', {
  exec: ['python3', %[2]q],
  upgrade: ['python3', %[2]q, '--version', '2'],
  http: { 'POST /v1/shipments': 'idempotent-by-header:Idempotency-Key' },
  env: { SHIPPING_API_URL: '${CHAOSKIT_HTTP_URL}', STATE_DIR: '${CHAOSKIT_STATE_DIR}' },
  state: ['python3', %[2]q, '--dump-state'],
  faults: ['upgrade'],
});
`, helper, app)})
	r.want("node --test --test-reporter=spec --test-name-pattern '^upgrade@3$'", 0, "upgrade@3", "pass 1", "fail 0")
}
