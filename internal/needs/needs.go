package needs

import (
	"os"
	"os/exec"
	"testing"
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
