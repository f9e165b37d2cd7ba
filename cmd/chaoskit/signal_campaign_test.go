//go:build campaigns

package main

import (
	"syscall"
	"testing"

	"github.com/chaoskit/chaoskit/adapters/process/fusefs"
	"github.com/chaoskit/chaoskit/internal/needs"
)

// SIGTERM and SIGINT, each in a golden run and in a case, on a plain disk and on FUSE mounts:
// chaoskit stops at once, leaving no process and no mount, exits 143 or 130, and --resume
// completes the campaign as an uninterrupted run would.
func TestSignalThenResumeEverywhere(t *testing.T) {
	needs.Err(t, fusefs.Available())
	testSignalThenResume(t, []syscall.Signal{syscall.SIGTERM, syscall.SIGINT}, []string{"golden run", "cases"}, []string{"plain", "fuse"})
}
