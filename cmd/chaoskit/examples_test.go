package main

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/internal/needs"
)

// outFlag matches a report directory the docs and examples suggest by a plain relative name:
// --out report, not --out /tmp/x or --out "$REPORTS/merged".
var outFlag = regexp.MustCompile(`--out ([a-z][a-z0-9-]*)(?:\s|$)`)

// The report directories the README and the examples suggest, and the default one, are ignored
// by git in every example directory, so that a build there after a campaign is not stamped
// +dirty (go build stamps a binary with the checkout's state).
func TestExampleOutDirsAreIgnored(t *testing.T) {
	git := needs.Command(t, "git", "apt-get install git")
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if err := exec.Command(git, "-C", root, "rev-parse", "--git-dir").Run(); err != nil {
		needs.Missing(t, root+" is not a git checkout")
	}
	names := []string{"chaoskit-report"}
	files := []string{filepath.Join(root, "README.md")}
	filepath.WalkDir(filepath.Join(root, "adapters"), func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && d.Name() == "node_modules":
			return filepath.SkipDir
		case !d.IsDir() && slices.Contains([]string{".md", ".py", ".mjs"}, filepath.Ext(path)):
			files = append(files, path)
		}
		return nil
	})
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range outFlag.FindAllStringSubmatch(string(b), -1) {
			if !slices.Contains(names, m[1]) {
				names = append(names, m[1])
			}
		}
	}
	if !slices.Contains(names, "report") {
		t.Fatalf("found no --out report among %v: the scan of the examples is broken", names)
	}
	dirs, _ := filepath.Glob(filepath.Join(root, "adapters/process/examples/*"))
	dirs = append(dirs, filepath.Join(root, "adapters/langgraph"), filepath.Join(root, "adapters/langgraph/example"))
	for _, dir := range dirs {
		for _, name := range names {
			path := filepath.Join(dir, name, "report.json")
			if out, err := exec.Command(git, "-C", root, "check-ignore", "-q", path).CombinedOutput(); err != nil {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("git does not ignore %s: %v %s", rel, err, strings.TrimSpace(string(out)))
			}
		}
	}
}
