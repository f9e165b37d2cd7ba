package sim_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
)

// Tool faults behave as their names say.
func TestToolFaults(t *testing.T) {
	target := harness.Func{
		ToolList: []harness.Tool{
			{Name: "po", Contract: harness.IdempotentByKey, Latency: time.Second},
			{Name: "check", Contract: harness.IdempotentByKey, Async: 10 * time.Minute},
		},
		RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
			tctx, cancel := env.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			_, err := env.Call(tctx, harness.Call{Tool: "po", Key: "k", Args: "po-1"})
			r, _ := env.Call(ctx, harness.Call{Tool: "check", Key: "c", Args: "x"})
			msgs, _ := env.Await(ctx, r.Topic)
			env.Sleep(ctx, time.Minute) // let a late effect land
			return fmt.Sprintf("%v; %d message(s)", err, len(msgs)), nil
		},
	}
	rn := newRunner(t, target, sim.Options{})
	for _, tc := range []struct {
		fault   faults.Kind
		result  string
		applied int
	}{
		{faults.ToolTransient, "po: service unavailable (503): not applied, retry; 1 message(s)", 1},
		{faults.ToolAmbiguous, "po: connection reset before the reply: the call may have been applied; 1 message(s)", 2},
		{faults.ToolTimeout, "po: context deadline exceeded (it may still be applied); 1 message(s)", 2},
		{faults.CallbackDup, "<nil>; 2 message(s)", 2},
	} {
		beat := 0
		if tc.fault == faults.CallbackDup {
			beat = 2 // the second call's sent beat
		}
		c := rn.Run(faults.Schedule{{Kind: tc.fault, Beat: beat}})
		if c.Result != tc.result {
			t.Errorf("%s: result %q, want %q", tc.fault, c.Result, tc.result)
		}
		applied := 2 - c.Verdict.Metrics.LostEffects // po and check, in the golden run
		if applied != tc.applied {
			t.Errorf("%s: %d effects applied, want %d (%s)", tc.fault, applied, tc.applied, c)
		}
	}
}

// A call that times out lands after its caller's deadline even when it was the run's last: a
// target that retries it without a key and then finishes files it twice, and the oracle counts
// both, as the world would, though the run ended before the late one was due.
func TestLateEffectLandsAfterTheRunEnds(t *testing.T) {
	target := harness.Func{
		ToolList: []harness.Tool{{Name: "notify", Contract: harness.NotIdempotent}},
		RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
			tctx, cancel := env.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			if _, err := env.Call(tctx, harness.Call{Tool: "notify", Args: "finance"}); err != nil {
				_, err = env.Call(ctx, harness.Call{Tool: "notify", Args: "finance"}) // retried without a key
				return nil, err
			}
			return nil, nil
		},
	}
	c := newRunner(t, target, sim.Options{}).Run(faults.Schedule{{Kind: faults.ToolTimeout, Beat: 0}})
	if !c.Breaks(oracle.NoDuplicateEffects) || c.Verdict.Metrics.Duplicates != 1 {
		t.Fatalf("want the late call and its retry counted as a duplicate:\n%s", c)
	}
}

// A tool that forgets idempotency keys still answers a look-up by the caller's own reference,
// so a harness resuming long after can tell whether its effect was applied; a harness that
// cannot tell may refuse to go on, loudly: that passes, counted as refused, and is not
// restarted.
func TestLookupAndRefusal(t *testing.T) {
	pay := harness.Tool{Name: "pay", Contract: harness.IdempotentByKey, KeyTTL: time.Hour}
	run := func(lookup bool) func(ctx context.Context, env *harness.Env) (any, error) {
		return func(ctx context.Context, env *harness.Env) (any, error) {
			if env.Process() == 0 {
				if _, err := env.Call(ctx, harness.Call{Tool: "pay", Key: "k1", Ref: "invoice-7", Args: 100}); err != nil {
					return nil, err
				}
				env.Sleep(ctx, 2*time.Hour) // the key is forgotten meanwhile; a crash here loses the reply's record
				return "paid", nil
			}
			if !lookup {
				return nil, fmt.Errorf("cannot tell whether invoice-7 was paid: %w", harness.ErrRefused)
			}
			r, found, err := env.Lookup(ctx, "pay", "invoice-7")
			if err != nil || !found || r.ID != "pay-1" {
				return nil, fmt.Errorf("lookup: %v, %v, %v", r, found, err)
			}
			_, missing, _ := env.Lookup(ctx, "pay", "invoice-8")
			if missing {
				return nil, errors.New("found an invoice never paid")
			}
			return "paid", nil
		}
	}
	crash := faults.Schedule{{Kind: faults.Kill, Beat: 2}} // at the sleep, after the payment
	c := newRunner(t, harness.Func{ToolList: []harness.Tool{pay}, RunFunc: run(true)}, sim.Options{}).Run(crash)
	if c.Verdict.Outcome != oracle.Pass || c.Verdict.Refused != "" {
		t.Fatalf("with a lookup: %s", c)
	}
	// The first process's three beats (the call sent and applied, the sleep), then two lookups
	// of two beats each.
	if c.Verdict.Metrics.Beats != 3+4 {
		t.Errorf("%d beats", c.Verdict.Metrics.Beats)
	}
	if l := (sim.Beat{Kind: sim.BeatToolSent, Name: "pay", Ref: "invoice-7"}).Label(); l != "tool pay lookup ref=invoice-7 sent" {
		t.Errorf("a lookup's beat is labelled %q", l)
	}
	c = newRunner(t, harness.Func{ToolList: []harness.Tool{pay}, RunFunc: run(false)}, sim.Options{}).Run(crash)
	if c.Verdict.Outcome != oracle.Pass || !strings.Contains(c.Verdict.Refused, "cannot tell whether invoice-7 was paid") || c.Verdict.Metrics.Restarts != 1 {
		t.Fatalf("refusing: %s (refused %q)", c, c.Verdict.Refused)
	}
}

// A key used again with other arguments is refused to the caller, as Stripe refuses it, with a
// *harness.KeyReusedError naming both argument sets, and the case breaks no-key-reuse, saying
// so; a golden run that reuses a key has the bug without any fault, and every case says that.
func TestKeyReusedWithOtherArguments(t *testing.T) {
	var refused []string // what the caller was told, by process
	reuse := func(inGolden bool) harness.Target {
		return harness.Func{
			ToolList: []harness.Tool{{Name: "po", Contract: harness.IdempotentByKey}},
			RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
				// The amount depends on the process: a retry after a crash sends other arguments
				// under the step's key.
				_, err := env.Call(ctx, harness.Call{Tool: "po", Key: "order-1", Args: fmt.Sprintf("usd-%d", 100*(env.Process()+1))})
				if inGolden && err == nil {
					_, err = env.Call(ctx, harness.Call{Tool: "po", Key: "order-1", Args: "usd-999"})
				}
				var reused *harness.KeyReusedError
				if errors.As(err, &reused) && errors.Is(err, harness.ErrKeyReused) {
					refused = append(refused, fmt.Sprintf("%s %s %s", reused.Key, reused.FirstArgs, reused.NewArgs))
				} else if err != nil {
					return nil, err
				}
				env.Mark("filed")
				return nil, nil
			},
		}
	}
	refused = nil
	c := newRunner(t, reuse(false), sim.Options{}).Run(kill(2)) // killed at the mark, after the call
	if !c.Breaks(oracle.NoKeyReuse) {
		t.Fatalf("want no-key-reuse broken:\n%s", c)
	}
	if want := `order-1 "usd-100" "usd-200"`; len(refused) == 0 || slices.ContainsFunc(refused, func(s string) bool { return s != want }) {
		t.Errorf("the caller was told %q, want a *harness.KeyReusedError %q (in each run of the failing case)", refused, want)
	}
	detail := c.Verdict.Violations[0].Detail
	for _, want := range []string{`po key "order-1"`, `first used with "usd-100" (beat 0, process 0)`, `used again with "usd-200" (beat 3, process 1)`} {
		if !strings.Contains(detail, want) {
			t.Errorf("the violation says %q, want it to say %q", detail, want)
		}
	}
	if strings.Contains(detail, "golden run") || c.Verdict.Metrics.Duplicates != 0 {
		t.Errorf("a reuse after a crash only: %s", c)
	}
	if !strings.Contains(c.String(), "refused: key first used at beat 0 with other arguments") {
		t.Errorf("the trace does not show the refused call:\n%s", c)
	}

	c = newRunner(t, reuse(true), sim.Options{}).Run(kill(4))
	if !c.Breaks(oracle.NoKeyReuse) || !strings.Contains(c.Verdict.Violations[0].Detail, "the golden run, with no fault, does so too") {
		t.Fatalf("a golden run that reuses a key: want every case to say so:\n%s", c)
	}
}
