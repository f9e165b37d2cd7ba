package world_test

import (
	"errors"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/sim/internal/world"
	"github.com/google/go-cmp/cmp"
)

var tools = []harness.Tool{
	{Name: "po", Contract: harness.IdempotentByKey},
	{Name: "mail", Contract: harness.NotIdempotent, Async: time.Minute},
}

func call(at time.Duration, tool, key string, beat int) world.Op {
	return callWith(at, tool, key, key, beat)
}

func callWith(at time.Duration, tool, key string, args any, beat int) world.Op {
	c := harness.Call{Tool: tool, Key: key, Ref: key, Args: args}
	a := world.Args(c)
	return world.Op{Kind: world.Call, At: faults.Epoch.Add(at), Call: c, Args: a, Identity: world.Identity(tool, a), Beat: beat}
}

// A key used again with other arguments is refused, naming both, and applies nothing; used again
// with the same arguments it is a replay; the refusal is recorded for the oracle.
func TestKeyReusedWithOtherArgumentsIsRefused(t *testing.T) {
	w := world.New(tools)
	if _, _, err := w.Do(callWith(0, "po", "k", map[string]int{"usd": 1}, 2)); err != nil {
		t.Fatal(err)
	}
	r, _, err := w.Do(callWith(time.Second, "po", "k", map[string]int{"usd": 1}, 5))
	if err != nil || !r.Replayed {
		t.Fatalf("the same arguments under the same key: %+v, %v; want a replay", r, err)
	}
	_, _, err = w.Do(callWith(2*time.Second, "po", "k", map[string]int{"usd": 2}, 9))
	var reused *harness.KeyReusedError
	if !errors.As(err, &reused) || !errors.Is(err, harness.ErrKeyReused) {
		t.Fatalf("other arguments under the same key: %v, want a *harness.KeyReusedError matching ErrKeyReused", err)
	}
	if string(reused.FirstArgs) != `{"usd":1}` || string(reused.NewArgs) != `{"usd":2}` || reused.Key != "k" || reused.Tool != "po" {
		t.Errorf("the error holds %+v", reused)
	}
	if n := len(w.Effects()); n != 1 {
		t.Errorf("%d effects, want the first call's alone", n)
	}
	got := w.KeyReuses()
	if len(got) != 1 || got[0].FirstBeat != 2 || got[0].Beat != 9 || got[0].FirstArgs != `{"usd":1}` || got[0].NewArgs != `{"usd":2}` {
		t.Errorf("KeyReuses() = %+v, want the call at beat 9 against the first at beat 2", got)
	}
	if d := cmp.Diff(got, w.Replay(w.Changes()).KeyReuses()); d != "" {
		t.Errorf("a replayed world records the reuse too (-want +got):\n%s", d)
	}
}

// A world rebuilt from the first n changes of another's log is the world that other was in after
// them: what a case derived from a golden recording starts from.
func TestReplayRebuildsTheStateAfterNChanges(t *testing.T) {
	ops := []world.Op{
		call(0, "po", "a", 1),
		{Kind: world.Acquire, At: faults.Epoch, Name: "run", Holder: "worker-0", TTL: time.Minute},
		call(time.Second, "mail", "m", 3),
		call(2*time.Second, "po", "a", 5), // replayed by key: no second effect
		{Kind: world.Advance, At: faults.Epoch.Add(2 * time.Minute)},
		call(3*time.Minute, "po", "b", 7),
	}
	w := world.New(tools)
	type snapshot struct {
		Effects int
		Mail    []harness.Message
		RefA    harness.Reply
		FoundB  bool
		Changes int
		NextDue bool
	}
	snap := func(w *world.World) snapshot {
		a, _ := w.ByRef("po", "a")
		_, b := w.ByRef("po", "b")
		_, due := w.Next()
		return snapshot{len(w.Effects()), w.Messages("mail/m"), a, b, w.Changes(), due}
	}
	var after []snapshot
	for _, op := range ops {
		if _, _, err := w.Do(op); err != nil {
			t.Fatalf("%v: %v", op.Kind, err)
		}
		after = append(after, snap(w))
	}
	if got := after[len(after)-1]; got.Effects != 3 || len(got.Mail) != 1 || !got.FoundB {
		t.Fatalf("after every change: %+v, want 3 effects (a second po under key a is none), one mail delivered, po b found", got)
	}
	for n := 1; n <= len(ops); n++ {
		if d := cmp.Diff(after[n-1], snap(w.Replay(n))); d != "" {
			t.Errorf("Replay(%d) differs from the world after %d changes (-want +got):\n%s", n, n, d)
		}
	}
}

// A lease is held until it expires, and only its current token renews it.
func TestLeaseHeldUntilItExpires(t *testing.T) {
	w := world.New(tools)
	acquire := func(at time.Duration, holder string) (harness.Lease, error) {
		_, l, err := w.Do(world.Op{Kind: world.Acquire, At: faults.Epoch.Add(at), Name: "run", Holder: holder, TTL: time.Minute})
		return l, err
	}
	first, err := acquire(0, "worker-0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := acquire(30*time.Second, "worker-1"); !errors.Is(err, harness.ErrLeaseHeld) {
		t.Fatalf("a live lease taken by another worker: %v, want ErrLeaseHeld", err)
	}
	second, err := acquire(2*time.Minute, "worker-1")
	if err != nil || second.Token <= first.Token {
		t.Fatalf("an expired lease: %+v, %v; want it taken with a larger token than %d", second, err, first.Token)
	}
	_, _, err = w.Do(world.Op{Kind: world.Renew, At: faults.Epoch.Add(2 * time.Minute), Name: "run", Token: first.Token, TTL: time.Minute})
	if !errors.Is(err, harness.ErrLeaseLost) {
		t.Fatalf("renewing with the old token: %v, want ErrLeaseLost", err)
	}
}
