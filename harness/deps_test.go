package harness_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// A program that uses chaoskit as a library (harness, campaign, oracle, reports, faults) links
// neither testing nor rapid, nor the flag package through which test flags are registered:
// only package chaoskittest does.
func TestLibraryLinksNoTestingCode(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "./testdata/library").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/chaoskit/chaoskit/harness") {
		t.Fatalf("go list -deps does not list harness:\n%s", out)
	}
	for _, bad := range []string{"testing", "pgregory.net/rapid", "flag", "github.com/chaoskit/chaoskit/chaoskittest"} {
		if slices.Contains(deps, bad) {
			t.Errorf("a program importing chaoskit's library packages links %s", bad)
		}
	}
}

// Package harness is the API a target is written against: it links nothing of what judges or
// runs a target. (It cannot import package sim or sim/internal/world, which import it; the oracle
// and the campaigns import nothing of it, so only this test keeps them out.) The kernel reaches
// it through internal/envlink alone.
func TestHarnessLinksNoKernel(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	for _, bad := range []string{"github.com/chaoskit/chaoskit/oracle", "github.com/chaoskit/chaoskit/campaign", "github.com/chaoskit/chaoskit/reports"} {
		if slices.Contains(deps, bad) {
			t.Errorf("package harness links %s", bad)
		}
	}
	if !slices.Contains(deps, "github.com/chaoskit/chaoskit/internal/envlink") {
		t.Errorf("go list -deps does not list internal/envlink, through which the kernel makes an Env:\n%s", out)
	}
}
