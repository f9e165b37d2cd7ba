package process_test

import (
	"os"
	"os/exec"
	"testing"
)

// needCommand returns the path of the named command, for tests that run a program of another
// language (node, python3). Without it the test is skipped with one line naming what is missing
// and how to install it, except under CI=true, where a missing command is a failure: CI must
// not pass by skipping.
func needCommand(t *testing.T, name, install string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		missing(t, name+" is not in PATH: "+install)
	}
	return path
}

// missing skips the test with why, or fails it under CI=true.
func missing(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(why + " (CI=true: not skipping)")
	}
	t.Skip(why)
}
