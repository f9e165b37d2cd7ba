package faults

import (
	"errors"
	"os"
	"path"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/afero"
)

// NoSpace reports whether err says that the disk is full: ENOSPC, wrapped or only in its text
// (as libraries that format errors rather than wrap them pass it on).
func NoSpace(err error) bool {
	return err != nil && (errors.Is(err, syscall.ENOSPC) || strings.Contains(err.Error(), "no space left on device"))
}

// WaitForSpace is what a harness does on a full disk instead of failing at once: a supervisor
// restarts a failed process onto the disk as full as it left it, and a process that fails the
// same way again is not restarted any more. It sleeps (10 s, doubling up to 10 min) and between
// sleeps probes dir on fsys by writing, fsyncing and removing a 1 MiB file, for at most limit
// of sleeping. sleep must wait on the harness's clock (Env.Sleep in process, the client's Sleep
// from a process target), so that under chaoskit the wait takes virtual time. It returns whether
// space came back, and false as soon as sleep fails.
func WaitForSpace(fsys afero.Fs, dir string, sleep func(time.Duration) error, limit time.Duration) bool {
	probe := path.Join(dir, ".space-probe")
	buf := make([]byte, 1<<20)
	for d, waited := 10*time.Second, time.Duration(0); waited < limit; d = min(2*d, 10*time.Minute) {
		if sleep(d) != nil {
			return false
		}
		waited += d
		f, err := fsys.OpenFile(probe, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			continue
		}
		_, err = f.Write(buf)
		if err == nil {
			err = f.Sync()
		}
		f.Close()
		fsys.Remove(probe)
		if err == nil {
			return true
		}
	}
	return false
}
