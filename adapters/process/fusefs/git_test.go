package fusefs_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/adapters/process/fusefs"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/internal/needs"
)

// gitRunner runs git with no user or system configuration and fixed identities and dates.
func gitRunner(t *testing.T) func(args ...string) (string, error) {
	bin := needs.Command(t, "git", "apt-get install git")
	home := t.TempDir()
	env := append(os.Environ(),
		"HOME="+home, "XDG_CONFIG_HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=chaoskit", "GIT_AUTHOR_EMAIL=chaoskit@example.com", "GIT_AUTHOR_DATE=2026-01-01T00:00:00Z",
		"GIT_COMMITTER_NAME=chaoskit", "GIT_COMMITTER_EMAIL=chaoskit@example.com", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z")
	return func(args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
}

// syncTree fsyncs every file and directory under root, as sync(1) would on a local disk (on
// the mount, sync(1) makes nothing durable).
func syncTree(t *testing.T, root string) {
	t.Helper()
	must(t, filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil {
			syncDir(t, p) // open and fsync: the same for a file
		}
		return err
	}))
}

// TestGit runs git init, commit and update-ref on the mount, then checks what a kill and a power
// loss leave of the repository.
func TestGit(t *testing.T) {
	t.Parallel()
	git := gitRunner(t)
	disk := faults.NewDisk(faults.DiskOptions{})
	tr := &tracer{}
	srv, dir := mount(t, faults.New(disk, tr), fusefs.Options{Trace: tr.Trace})
	repo := filepath.Join(dir, "repo")
	ok := func(args ...string) string {
		t.Helper()
		out, err := git(append([]string{"-C", repo}, args...)...)
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	if out, err := git("init", "-q", "-b", "main", repo); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	if got := ok("config", "core.symlinks"); got != "false" {
		t.Errorf("git init found symlinks work (core.symlinks=%s); the mount has none", got)
	}
	syncTree(t, dir) // the repository as git init left it is durable
	must(t, os.WriteFile(filepath.Join(repo, "a"), []byte("hello\n"), 0o644))

	opTable(t, "git add + git commit, core.fsync=all", tr.record(func() {
		ok("-c", "core.fsync=all", "add", "a")
		ok("-c", "core.fsync=all", "commit", "-q", "-m", "one")
	}))
	opTable(t, "git update-ref refs/heads/other HEAD, core.fsync=all", tr.record(func() {
		ok("-c", "core.fsync=all", "update-ref", "refs/heads/other", "HEAD")
	}))
	must(t, os.WriteFile(filepath.Join(repo, "b"), []byte("more\n"), 0o644))
	syncs := 0
	for _, e := range tr.record(func() {
		ok("add", "b")
		ok("commit", "-q", "-m", "two")
	}) {
		if e.beat != nil && e.beat.Kind == faults.OpSync {
			syncs++
		}
	}
	t.Logf("git add + commit with the default core.fsync made %d fsync beats", syncs)
	head := ok("rev-parse", "HEAD")
	if other := ok("rev-parse", "other"); other != ok("rev-parse", "HEAD~1") {
		t.Errorf("refs/heads/other = %s, want the first commit", other)
	}
	ok("fsck", "--strict")
	unmount(t, srv)

	disk.Crash(faults.Fault{Kind: faults.Kill}, rng())
	srv, dir = mount(t, faults.New(disk, nil), fusefs.Options{})
	repo = filepath.Join(dir, "repo")
	if got := ok("rev-parse", "HEAD"); got != head {
		t.Errorf("after a kill HEAD = %s, want %s", got, head)
	}
	if got := ok("log", "--format=%s"); got != "two\none" {
		t.Errorf("after a kill the log is %q", got)
	}
	ok("fsck", "--strict")
	unmount(t, srv)

	t.Log(disk.Crash(faults.Fault{Kind: faults.Power}, rng()))
	srv, dir = mount(t, faults.New(disk, nil), fusefs.Options{})
	defer unmount(t, srv)
	repo = filepath.Join(dir, "repo")
	// git fsyncs no directory, so on the strict disk none of its new entries (objects, refs,
	// the index) survive: the repository is back to what git init left, consistent but empty.
	if out, err := git("-C", repo, "rev-parse", "--verify", "-q", "HEAD"); err == nil {
		t.Errorf("after a power loss HEAD is %s; git made no directory durable, so the disk cannot have kept it", out)
	}
	ok("fsck", "--strict")
	ok("status", "--short")
}
