package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Shards whose targets ran other code (the command's files changed between them: a pull
// request's shard beside main's) are refused by merge, in one line naming both shards, as a
// resume refuses a journal whose files changed; shards of the same files merge.
func TestMergeRefusesShardsOfOtherCode(t *testing.T) {
	_, child := built(t)
	dir := t.TempDir()
	app := filepath.Join(dir, "app")
	b, err := os.ReadFile(child)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(app, b, 0o755); err != nil {
		t.Fatal(err)
	}
	shard := func(name, shard string) string {
		out := filepath.Join(dir, name)
		args := []string{"run", "--exec", app + " -mode correct", "--name", "orders", "--tool", "create_po=idempotent,latency=1s",
			"--tool", "check=idempotent,async=10m", "--faults", "kill", "--cases", "4", "--shard", shard, "--format", "json", "--out", out}
		if code, _, errOut := chaoskit(t, args...); code != exitOK {
			t.Fatalf("%s: exit %d: %s", name, code, errOut)
		}
		return out
	}
	main1, main2 := shard("main-1", "1/2"), shard("main-2", "2/2")
	if err := os.WriteFile(app, append(b, "a change"...), 0o755); err != nil { // the same program, other files
		t.Fatal(err)
	}
	pr2 := shard("pr-2", "2/2")
	code, _, errOut := chaoskit(t, "merge", "--out", filepath.Join(dir, "m"), main1, pr2)
	want := "merge: shard 2/2 (" + pr2 + ") ran other code than shard 1/2 (" + main1 + "): target orders: its files' digest "
	if code != exitUsage || !strings.Contains(errOut, want) || !strings.Contains(errOut, "merge the shards of one commit") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("merge of main's and a PR's shards: exit %d, stderr %q; want exit 2 and one line %q…", code, errOut, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "m")); err == nil {
		t.Error("a refused merge wrote its directory")
	}
	if code, _, errOut := chaoskit(t, "merge", "--out", filepath.Join(dir, "ok"), main1, main2); code != exitOK {
		t.Errorf("merge of shards of the same files: exit %d: %s", code, errOut)
	}
}
