package eino

import (
	"context"
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
)

// DefaultSpaceWait is how long WaitForSpace waits for space at most, in virtual time.
const DefaultSpaceWait = time.Hour

// WaitForSpace waits on env's clock until dir on env's disk takes writes again, for at most
// limit (faults.WaitForSpace), and returns whether it does. A run that failed on a full disk
// (faults.NoSpace) calls it before it fails.
func WaitForSpace(ctx context.Context, env *harness.Env, dir string, limit time.Duration) bool {
	return faults.WaitForSpace(env.FS(), dir, func(d time.Duration) error { return env.Sleep(ctx, d) }, limit)
}
