package needs_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/internal/needs"
)

// A missing program skips outside CI and fails under CI=true, in one line either way. The test
// runs itself as a child, once per setting of CI, and reads the child's verdict.
func TestMissingCommand(t *testing.T) {
	if os.Getenv("NEEDS_CHILD") == "1" {
		needs.Command(t, "chaoskit-no-such-program", "apt-get install nothing")
		t.Error("Command returned for a missing program")
		return
	}
	for _, ci := range []string{"", "true"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMissingCommand$", "-test.v")
		cmd.Env = append(os.Environ(), "NEEDS_CHILD=1", "CI="+ci)
		out, err := cmd.CombinedOutput()
		text := string(out)
		if !strings.Contains(text, "chaoskit-no-such-program is not in PATH: apt-get install nothing") {
			t.Errorf("CI=%q: the output does not name the program and its install command:\n%s", ci, text)
		}
		switch ci {
		case "":
			if err != nil || !strings.Contains(text, "--- SKIP") {
				t.Errorf("CI unset: want a skip, got err=%v:\n%s", err, text)
			}
		case "true":
			if err == nil || !strings.Contains(text, "--- FAIL") {
				t.Errorf("CI=true: want a failure, got err=%v:\n%s", err, text)
			}
		}
	}
}

func TestCommandFound(t *testing.T) {
	if path := needs.Command(t, "go", "https://go.dev/dl"); path == "" {
		t.Error("Command returned an empty path for go")
	}
}
