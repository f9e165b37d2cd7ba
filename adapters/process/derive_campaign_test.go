//go:build campaigns

package process_test

import (
	"testing"

	"github.com/chaoskit/chaoskit/adapters/process"
	"github.com/chaoskit/chaoskit/adapters/process/fusefs"
	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/internal/needs"
)

// The examples' crash states derived from their golden recordings give the same report as
// re-runs of their prefixes: Burr, brat and Node, correct and broken, on a plain disk (every
// kill and tool fault) and on a FUSE disk (kills and power cuts, 40 of each kind spread over the
// golden run).
func TestExamplesDerivedEqualReRuns(t *testing.T) {
	plain := campaign.Options{Faults: []faults.Kind{faults.Kill, faults.ToolAmbiguous}}
	fuse := campaign.Options{Faults: []faults.Kind{faults.Kill, faults.Power}, Cases: 80}
	for _, tc := range []struct {
		name   string
		target func(t *testing.T) process.Target
		opts   campaign.Options
	}{
		{"burr", func(t *testing.T) process.Target { return burr.target(t, false) }, plain},
		{"burr --broken", func(t *testing.T) process.Target { return burr.target(t, true) }, plain},
		{"burr on fuse", func(t *testing.T) process.Target { return burr.onFUSEDisk(t, process.AllBeats) }, fuse},
		{"brat", func(t *testing.T) process.Target { needs.Command(t, "git", installGit); return brat.target(t, false) }, plain},
		{"brat --broken", func(t *testing.T) process.Target { needs.Command(t, "git", installGit); return brat.target(t, true) }, plain},
		{"brat on fuse", func(t *testing.T) process.Target {
			needs.Command(t, "git", installGit)
			return brat.onFUSEDisk(t, process.CallBeats)
		}, fuse},
		{"node", func(t *testing.T) process.Target { return nodeExample(t, needNode(t)) }, plain},
		{"node --broken", func(t *testing.T) process.Target { return nodeExample(t, needNode(t), "--broken") }, plain},
		{"node on fuse", func(t *testing.T) process.Target {
			needs.Err(t, fusefs.Available())
			tg := nodeExample(t, needNode(t))
			tg.Disk = process.FUSE
			return tg
		}, fuse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := tc.target(t)
			t.Parallel()
			n := sameEitherWay(t, tc.name, tg, tc.opts)
			t.Logf("%s: %d cases, the same report derived and re-run", tc.name, n)
		})
	}
}
