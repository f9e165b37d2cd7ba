//go:build campaigns

package process_test

import (
	"fmt"
	"path/filepath"
	"testing"
)

// The whole campaigns of examples/upgrade: with a migration, version 2 takes over at every beat,
// after a kill at every beat too; without one, every deploy after the first checkpoint strands
// the run (and only those: a deploy before it finds nothing to misread).
func TestUpgradeExampleCampaigns(t *testing.T) {
	sh := newShell(t)
	text, code, cases := upgradeRun(sh, nil, "migrated", "--faults", "kill,upgrade")
	if code != 0 || len(cases) == 0 {
		t.Errorf("with a migration: exit %d, %d cases; want exit 0\n%s", code, len(cases), text)
	}

	text, code, cases = upgradeRun(sh, []string{"--no-migration"}, "stranded", "--faults", "upgrade")
	failed := 0
	for _, c := range cases {
		switch {
		case c.Verdict == "fail" && c.Stranded:
			failed++
		case c.Verdict == "pass" && failed == 0:
		default:
			t.Errorf("%s: %s, stranded %v: want a pass before the first checkpoint, then failures, each stranded", c.Schedule, c.Verdict, c.Stranded)
		}
	}
	if code != 1 || failed == 0 {
		t.Errorf("without a migration: exit %d, %d of %d cases stranded; want exit 1 and failures\n%s", code, failed, len(cases), text)
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
  tools: { ship: 'idempotent-by-key' },
  state: ['python3', %[2]q, '--dump-state'],
  faults: ['upgrade'],
});
`, helper, app)})
	r.want("node --test --test-reporter=spec --test-name-pattern '^upgrade@5$'", 0, "upgrade@5", "pass 1", "fail 0")
}
