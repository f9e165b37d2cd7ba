package harness_test

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/reference"
)

// TestMain, when re-executed by the tests below with CHAOSKIT_CHECK_HELPER set, runs tests of
// Check that are meant to fail, and only those.
func TestMain(m *testing.M) {
	if os.Getenv("CHAOSKIT_CHECK_HELPER") != "" {
		testing.Main(func(pat, str string) (bool, error) { return regexp.MatchString(pat, str) }, []testing.InternalTest{
			{Name: "TestCheckHelperExhaustive", F: func(t *testing.T) {
				harness.Check(t, reference.New(reference.ActThenSave, reference.Onboarding()), harness.Options{})
			}},
			{Name: "TestCheckHelperRandom", F: func(t *testing.T) {
				harness.Check(t, reference.New(reference.UnstableKey, reference.Onboarding()), harness.Options{Mode: harness.Random, Seed: 3})
			}},
		}, nil, nil)
	}
	os.Exit(m.Run())
}

// runHelper runs one helper test in a child process and returns its output and whether it
// passed.
func runHelper(t *testing.T, name string, args ...string) (string, bool) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^" + name + "$", "-test.v", "-rapid.nofailfile"}, args...)...)
	cmd.Env = append(os.Environ(), "CHAOSKIT_CHECK_HELPER=1")
	out, err := cmd.CombinedOutput()
	if _, exit := err.(*exec.ExitError); err != nil && !exit {
		t.Fatal(err)
	}
	return string(out), err == nil
}

var replayRe = regexp.MustCompile(`replay: go test -run '(\^[^']+\$)' -chaoskit\.schedule='([^']+)'`)

// Check fails the test for a broken harness, printing the violation, the beats around the
// fault and a go test command; running that command replays exactly that case, which fails the
// same way.
func TestCheckPrintsACommandThatReplaysTheFailure(t *testing.T) {
	out, ok := runHelper(t, "TestCheckHelperExhaustive")
	if ok {
		t.Fatalf("Check passed a harness that duplicates effects:\n%s", out)
	}
	for _, want := range []string{"violated no-duplicate-effects", "beats around the fault", ">> ", "did not pass"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	m := replayRe.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no replay command in:\n%s", out)
	}
	if m[1] != "^TestCheckHelperExhaustive$" {
		t.Errorf("replay runs %s", m[1])
	}
	again, ok := runHelper(t, "TestCheckHelperExhaustive", "-chaoskit.schedule="+m[2])
	if ok || !strings.Contains(again, "under "+m[2]+" (seed 0): fail") || !strings.Contains(again, "violated no-duplicate-effects") {
		t.Fatalf("replaying %s:\n%s", m[2], again)
	}
	if strings.Count(again, "violated no-duplicate-effects") != 1 {
		t.Errorf("the replay ran more than the one case:\n%s", again)
	}
}

// In random mode rapid draws the schedules and shrinks the failure; the case it ends with
// replays through -chaoskit.schedule too.
func TestCheckRandomShrinksAndReplays(t *testing.T) {
	out, ok := runHelper(t, "TestCheckHelperRandom")
	if ok {
		t.Fatalf("Check passed a harness with unstable keys:\n%s", out)
	}
	if !strings.Contains(out, "[rapid] failed") {
		t.Fatalf("rapid did not report a failure:\n%s", out)
	}
	all := replayRe.FindAllStringSubmatch(out, -1)
	if len(all) == 0 {
		t.Fatalf("no replay command in:\n%s", out)
	}
	shrunk := all[len(all)-1][2] // rapid prints the minimal failing case last
	if strings.Count(shrunk, ",") > 0 {
		t.Errorf("rapid left %s unshrunk: one fault suffices", shrunk)
	}
	again, ok := runHelper(t, "TestCheckHelperRandom", "-chaoskit.schedule="+shrunk)
	if ok || !strings.Contains(again, "under "+shrunk+" (seed 3): fail") {
		t.Fatalf("replaying %s:\n%s", shrunk, again)
	}
}

func TestCheckPassesTheReference(t *testing.T) {
	harness.Check(t, reference.New(reference.Correct, reference.Onboarding()), harness.Options{})
}
