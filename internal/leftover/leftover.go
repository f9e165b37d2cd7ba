package leftover

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// envName is the variable that marks a Scope's processes.
const envName = "CHAOSKIT_TEST_SCOPE"

// settle is how long Check waits for what is left to go (a reaper takes a moment) before it
// fails the test. It bounds a wait for a condition, not a measurement: a loaded machine only
// makes the check take longer.
const settle = 30 * time.Second

// Scope is what one test starts: the processes that carry its mark, and chaoskit's directories
// and mounts under its temporary directory.
type Scope struct {
	tag string
	tmp string
}

// New returns a scope whose temporary directory is tmp (the TMPDIR the test gives chaoskit; ""
// for none).
func New(tmp string) *Scope {
	var b [8]byte
	rand.Read(b[:])
	return &Scope{tag: hex.EncodeToString(b[:]), tmp: tmp}
}

// Env returns the environment variable ("NAME=VALUE") that marks a process as the scope's: add
// it to the environment of every command the test starts.
func (s *Scope) Env() string { return envName + "=" + s.tag }

// Left lists what the scope left: its processes still alive (zombies included, until reaped),
// mounts under its temporary directory and chaoskit's directories there.
func (s *Scope) Left() []string {
	var out []string
	mark := []byte(s.Env())
	environs, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, path := range environs {
		b, err := os.ReadFile(path)
		if err != nil || !hasVar(b, mark) {
			continue
		}
		dir := filepath.Dir(path)
		cmd, _ := os.ReadFile(filepath.Join(dir, "cmdline"))
		out = append(out, "process "+filepath.Base(dir)+": "+strings.TrimSpace(string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '}))))
	}
	if s.tmp == "" {
		return out
	}
	if b, err := os.ReadFile("/proc/self/mounts"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(f[1], s.tmp+"/") {
				out = append(out, "mount "+f[1])
			}
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(s.tmp, "chaoskit-*"))
	for _, d := range dirs {
		out = append(out, "directory "+d)
	}
	return out
}

// hasVar reports whether environ, NUL-separated, holds the entry v.
func hasVar(environ, v []byte) bool {
	for _, e := range bytes.Split(environ, []byte{0}) {
		if bytes.Equal(e, v) {
			return true
		}
	}
	return false
}

// Check waits until the scope has left nothing, and fails t, listing what stays, if something
// is still there after a while.
func (s *Scope) Check(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(settle)
	for {
		left := s.Left()
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("left behind:\n%s", strings.Join(left, "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
