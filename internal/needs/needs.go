package needs

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Missing skips t with why, one line that names what is missing and how to install it; under
// CI=true it fails t with the same line.
func Missing(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(why + " (CI=true: a missing component fails instead of skipping)")
	}
	t.Skip(why)
}

// Command returns the path of the named program. When it is not in PATH, t is skipped (failed
// under CI=true) with a line that names it and install, the command that installs it.
func Command(t testing.TB, name, install string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		Missing(t, name+" is not in PATH: "+install)
	}
	return path
}

// Err skips t (fails it under CI=true) when err, the answer of an availability check such as
// fusefs.Available, is not nil; err's text must already name the install command.
func Err(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		Missing(t, err.Error())
	}
}

// npmInstalls are the npm projects installed so far in this test binary, by directory: what
// NPM answered for each.
var npmInstalls sync.Map // dir -> *npmInstall

type npmInstall struct {
	once sync.Once
	err  error
}

// NPM returns node's path once the npm project in dir (a directory with a package-lock.json) is
// installed: npm ci runs there, once per test binary, when dir/node_modules/.package-lock.json
// is missing. Native packages (better-sqlite3) compile against /usr/include/node when it is
// there, for npm reaches only the registry here, not prebuilt binaries or the headers' site.
// Without node or npm, or when npm ci fails, t is skipped (failed under CI=true) with one line
// naming what to run.
func NPM(t testing.TB, dir string) string {
	t.Helper()
	node := Command(t, "node", "apt-get install -y nodejs npm (Node >= 20)")
	v, _ := npmInstalls.LoadOrStore(dir, &npmInstall{})
	in := v.(*npmInstall)
	in.once.Do(func() {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err == nil {
			return
		}
		npm, err := exec.LookPath("npm")
		if err != nil {
			in.err = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--silent")
		cmd.Dir = dir
		if _, err := os.Stat("/usr/include/node"); err == nil {
			cmd.Env = append(os.Environ(), "npm_config_nodedir=/usr")
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			in.err = fmt.Errorf("%w: %s", err, strings.Join(lines[max(0, len(lines)-5):], " / "))
		}
	})
	if in.err != nil {
		abs, _ := filepath.Abs(dir)
		Missing(t, fmt.Sprintf("npm ci in %s failed: %v (cd %s && npm ci)", abs, in.err, abs))
	}
	return node
}
