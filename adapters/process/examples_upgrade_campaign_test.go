//go:build campaigns

package process_test

import "testing"

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
