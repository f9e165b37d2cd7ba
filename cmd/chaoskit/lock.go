package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/afero"
	"golang.org/x/sys/unix"
)

// lockName is the lock file a run keeps in its report directory while it writes there.
const lockName = ".chaoskit.lock"

// lockDir takes the report directory dir for this run, so that a second campaign given the same
// --out (or --resume) fails at once rather than interleave its journal with this one's: an
// exclusive flock(2) on dir/.chaoskit.lock, which holds the run's pid. The kernel drops the lock
// of a process that dies however it dies, so a lock file a killed run left is taken over. It
// returns the function that releases it (removing the file), or a usage error naming dir and
// the pid of the run that holds it. On a filesystem of its own (tests) it locks nothing.
func (c *cli) lockDir(dir string) (release func(), err error) {
	if _, ok := c.fs.(*afero.OsFs); !ok {
		return func() {}, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the report directory: %w", err)
	}
	path := filepath.Join(dir, lockName)
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("locking the report directory: %w", err)
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			b, _ := os.ReadFile(path)
			f.Close()
			if !errors.Is(err, unix.EWOULDBLOCK) {
				return nil, fmt.Errorf("locking the report directory: %s: %w", path, err)
			}
			pid := "unknown"
			if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				pid = strconv.Itoa(n)
			}
			return nil, usagef("%s is the report directory of another chaoskit run, pid %s, under way (it holds %s): wait for it to end, or give another --out", dir, pid, path)
		}
		// The holder before may have removed the file as this run opened it: the lock is this
		// run's only if the file is still the one at path.
		held, err1 := f.Stat()
		now, err2 := os.Stat(path)
		if err1 != nil || err2 != nil || !os.SameFile(held, now) {
			f.Close()
			continue
		}
		if f.Truncate(0) == nil { // the pid only names the holder to another run: best effort
			f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		}
		return func() {
			os.Remove(path) // before the lock goes: a run that opened it then finds it gone, and retries
			f.Close()
		}, nil
	}
}
