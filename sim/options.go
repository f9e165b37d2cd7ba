package sim

import (
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
)

// withDefaults returns o with every field left zero set to its default.
func withDefaults(o harness.Options) harness.Options {
	if o.Name == "" {
		o.Name = "target"
	}
	if o.Replicas <= 0 {
		o.Replicas = 1
	}
	if o.FleetReplicas <= 0 {
		o.FleetReplicas = 2
	}
	if o.MaxRestarts <= 0 {
		o.MaxRestarts = 10
	}
	if o.Timeout <= 0 {
		o.Timeout = harness.DefaultTimeout
	}
	if o.RestartBackoff == (harness.Backoff{}) {
		o.RestartBackoff = harness.DefaultBackoff
	}
	if o.RestartDelay <= 0 {
		o.RestartDelay = time.Second
	}
	if o.Sector <= 0 {
		o.Sector = 512
	}
	if o.MaxBeats <= 0 {
		o.MaxBeats = harness.DefaultMaxBeats
	}
	if o.MaxVirtualTime <= 0 {
		o.MaxVirtualTime = harness.DefaultMaxVirtualTime
	}
	m, err := faults.ParseFSModel(string(o.FSModel))
	if err != nil {
		panic("harness: Options.FSModel: " + err.Error())
	}
	o.FSModel = m
	return o
}
