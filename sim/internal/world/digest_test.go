package world_test

import (
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/sim/internal/world"
)

// Digest is the world's contents, not its log: a step of the clock at which nothing falls due
// leaves it as it was, and every change a process or the oracle could see changes it.
func TestDigestIsTheWorldsContents(t *testing.T) {
	base := func() *world.World {
		w := world.New(tools)
		w.Do(call(0, "po", "k1", 1))
		w.Do(call(time.Second, "mail", "", 2)) // its completion is due a minute later
		return w
	}
	w := base()
	before := w.Digest()
	w.Do(world.Op{Kind: world.Advance, At: faults.Epoch.Add(30 * time.Second)})
	if w.Digest() != before {
		t.Fatal("a step of the clock at which nothing fell due changed the digest")
	}
	if w.Replay(2).Digest() != before {
		t.Fatal("a replay of the world's changes digests otherwise than the world")
	}
	for name, op := range map[string]world.Op{
		"a message delivered": {Kind: world.Advance, At: faults.Epoch.Add(2 * time.Minute)},
		"an effect":           call(2*time.Second, "po", "k2", 3),
		"a model call":        {Kind: world.Model, At: faults.Epoch, Name: "plan"}, // its purpose is asked
		"a lease":             {Kind: world.Acquire, At: faults.Epoch, Name: "l", Holder: "a", TTL: time.Minute},
	} {
		w := base()
		w.Do(op)
		if w.Digest() == before {
			t.Errorf("%s left the digest as it was", name)
		}
	}
}
