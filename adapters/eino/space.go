package eino

import (
	"context"
	"errors"
	"os"
	"path"
	"strings"
	"syscall"
	"time"

	"github.com/chaoskit/chaoskit/harness"
)

// DiskFull reports whether err says that the disk is full (ENOSPC), however Eino wrapped it.
func DiskFull(err error) bool {
	return err != nil && (errors.Is(err, syscall.ENOSPC) || strings.Contains(err.Error(), "no space left on device"))
}

// DefaultSpaceWait is how long WaitForSpace waits for space at most, in virtual time.
const DefaultSpaceWait = time.Hour

// WaitForSpace waits until dir on the process's disk takes writes again: it sleeps (env.Sleep,
// virtual time: 10 s, doubling up to 10 min) and between sleeps probes dir by writing, fsyncing
// and removing a 1 MiB file, for at most limit. It returns whether space came back. A process
// that failed on a full disk calls it before it fails: a supervisor restarts a failed process
// at once, onto the disk as full as it left it, and a process that fails the same way again is
// not restarted any more.
func WaitForSpace(ctx context.Context, env *harness.Env, dir string, limit time.Duration) bool {
	fsys := env.FS()
	probe := path.Join(dir, ".space-probe")
	buf := make([]byte, 1<<20)
	for d, waited := 10*time.Second, time.Duration(0); waited < limit; d = min(2*d, 10*time.Minute) {
		if env.Sleep(ctx, d) != nil {
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
