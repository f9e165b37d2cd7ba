package testbin

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Chaoskit returns the path of the chaoskit command, built from this module's sources. It fails
// t if the build fails.
func Chaoskit(t testing.TB) string { return Build(t, "./cmd/chaoskit") }

// Build returns the path of the command in pkg (a path relative to the module root, such as
// "./cmd/chaoskit"), built once for the module's current sources and shared by every test
// process. It fails t if the build fails.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	path, err := Path(pkg)
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// Path is Build for a TestMain, which has no testing.TB: it returns the error instead.
func Path(pkg string) (string, error) {
	b := builds.get(pkg)
	b.once.Do(func() { b.path, b.err = build(pkg) })
	return b.path, b.err
}

type result struct {
	once sync.Once
	path string
	err  error
}

type cache struct {
	mu sync.Mutex
	m  map[string]*result
}

var builds = &cache{m: map[string]*result{}}

func (c *cache) get(pkg string) *result {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m[pkg] == nil {
		c.m[pkg] = &result{}
	}
	return c.m[pkg]
}

// keep is how long a binary of sources that have since changed stays in the shared directory.
const keep = 24 * time.Hour

func build(pkg string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	sum, err := digest(root)
	if err != nil {
		return "", fmt.Errorf("testbin: hashing the sources under %s: %w", root, err)
	}
	shared, err := sharedDir()
	if err != nil {
		return "", err
	}
	// The binary has its command's name (chaoskit), in a directory of its own that a test may put
	// on PATH.
	clean := filepath.ToSlash(filepath.Clean(pkg))
	dir := filepath.Join(shared, sum[:16])
	path := filepath.Join(dir, strings.ReplaceAll(clean, "/", "_"), filepath.Base(clean))
	unlock, err := lock(filepath.Join(shared, "lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := os.Stat(path); err == nil {
		now := time.Now()
		os.Chtimes(dir, now, now) // in use: prune keeps it
		return path, nil
	}
	prune(shared, dir)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("testbin: %w", err)
	}
	tmp := path + ".tmp"
	cmd := exec.Command("go", "build", "-o", tmp, pkg)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("testbin: go build %s: %w\n%s", pkg, err, out)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("testbin: %w", err)
	}
	return path, nil
}

// sharedDir returns the directory every test process keeps the binaries in: in the user's cache
// directory, not TMPDIR, which some tests point at a directory of their own.
func sharedDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		base = "/tmp"
	}
	dir := filepath.Join(base, "chaoskit-testbin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("testbin: %w", err)
	}
	return dir, nil
}

// moduleRoot returns the directory of the go.mod of the chaoskit module, found from the
// working directory upwards (a test runs in its package's directory; an adapter module's tests
// run under the chaoskit module's tree too).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("testbin: %w", err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && strings.HasPrefix(string(b), "module github.com/chaoskit/chaoskit\n") {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("testbin: no go.mod of github.com/chaoskit/chaoskit above %s", dir)
		}
	}
}

// digest hashes the module's Go sources, go.mod and go.sum (paths and contents), leaving out
// directories that are not Go packages of the module: node_modules, dot-directories and nested
// modules. testdata is hashed: test programs (a test child) live there.
func digest(root string) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") && rel != "go.mod" && rel != "go.sum" {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		fmt.Fprintf(h, "%s\x00", rel)
		_, err = io.Copy(h, f)
		return err
	})
	return hex.EncodeToString(h.Sum(nil)), err
}

// lock takes an exclusive lock on path, waiting for it, and returns its release.
func lock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("testbin: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("testbin: locking %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

// prune removes the binaries of other sources that have not been used for a day.
func prune(shared, current string) {
	entries, _ := os.ReadDir(shared)
	for _, e := range entries {
		dir := filepath.Join(shared, e.Name())
		if !e.IsDir() || dir == current {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > keep {
			os.RemoveAll(dir)
		}
	}
}
