package sim

import (
	"fmt"
	"slices"

	"github.com/chaoskit/chaoskit/faults"
)

// upgrades reports whether schedule s deploys the target's next version (an upgrade fault).
func upgrades(s faults.Schedule) bool {
	return slices.ContainsFunc(s, func(f faults.Fault) bool {
		info, _ := f.Kind.Info()
		return info.NextVersion
	})
}

// nextVersion returns the Runner of the target's next version (Options.NextVersion): its golden
// run, the next version run from the start, is what an upgrade case is judged against. It is
// built the first time it is needed, and its error kept.
func (rn *Runner) nextVersion() (*Runner, error) {
	rn.nextOnce.Do(func() {
		o := rn.o
		o.Name += " (next version)"
		o.NextVersion = nil
		rn.next, rn.nextErr = NewRunnerContext(rn.ctx, rn.o.NextVersion, o)
		if rn.nextErr != nil {
			rn.nextErr = fmt.Errorf("the next version's golden run: %w", rn.nextErr)
		}
	})
	return rn.next, rn.nextErr
}

// deploy makes every process started from now on in run r the next version's (an upgrade fault
// fired), and remembers the first of them.
func (r *run) deploy() {
	if r.o.NextVersion == nil || r.upgradedAt >= 0 {
		return
	}
	r.newTarget = r.o.NextVersion
	r.upgradedAt = len(r.procs)
}
