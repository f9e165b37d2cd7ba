package testbin_test

import (
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/chaoskit/chaoskit/internal/testbin"
)

// Concurrent builders of the same package get one binary, and it runs.
func TestBuildOnceShared(t *testing.T) {
	paths := make([]string, 4)
	var wg sync.WaitGroup
	for i := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			paths[i] = testbin.Chaoskit(t)
		}()
	}
	wg.Wait()
	for _, p := range paths[1:] {
		if p != paths[0] {
			t.Fatalf("two binaries for one source tree: %s and %s", paths[0], p)
		}
	}
	info, err := os.Stat(paths[0])
	if err != nil || info.Mode()&0o111 == 0 {
		t.Fatalf("%s: %v, mode %v", paths[0], err, info)
	}
	out, err := exec.Command(paths[0], "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "chaoskit ") {
		t.Fatalf("chaoskit version: %v\n%s", err, out)
	}
}
