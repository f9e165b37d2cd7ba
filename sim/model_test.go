package sim_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
	"github.com/spf13/afero"
)

// Model faults answer as their names say.
func TestModelFaults(t *testing.T) {
	target := harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
		_, err := env.Model(ctx, harness.ModelCall{Purpose: "plan", Reply: "ok", Latency: 2 * time.Second})
		return fmt.Sprint(err), nil
	}}
	rn := newRunner(t, target, sim.Options{})
	for f, want := range map[faults.Fault]string{
		{Kind: faults.ModelRateLimit}:          "model: rate limited (429), retry after 20s",
		{Kind: faults.ModelError}:              "model: server error (500)",
		{Kind: faults.ModelError, Mode: "503"}: "model: service unavailable (503)",
		{Kind: faults.ModelContext}:            "model: context length exceeded",
		{Kind: faults.ModelCut}:                "model: the answer was cut off mid-stream",
	} {
		if c := rn.Run(faults.Schedule{f}); c.Result != want {
			t.Errorf("%s: %v", f, c.Result)
		}
	}
}

// A cut answer is a call the model answered, in full, before the caller lost part of it: the
// call counts as made, so asking again is asking twice.
func TestModelCutCountsTheCall(t *testing.T) {
	target := harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
		for {
			text, err := env.Model(ctx, harness.ModelCall{Purpose: "plan", Reply: "ok"})
			if err == nil {
				return text, nil
			}
		}
	}}
	rn := newRunner(t, target, sim.Options{})
	c := rn.Run(faults.Schedule{{Kind: faults.ModelCut, Beat: 0}})
	if c.Verdict.Outcome != oracle.Pass || c.Verdict.Metrics.ModelCallsRemade != 1 {
		t.Fatalf("model-cut@0: %s, model calls remade %d, want a pass with 1 remade", c, c.Verdict.Metrics.ModelCallsRemade)
	}
}

// buyer asks the model how much to order, whose answer has an alternative, and files a purchase
// order for that amount. checkpoint keeps the answer durably before it acts on it, and a resumed
// process reads it back instead of asking again; keyByAnswer makes the idempotency key from the
// answer (as a key from the model's tool-call id would be) rather than from the step.
type buyer struct{ checkpoint, keyByAnswer bool }

func (b buyer) Tools() []harness.Tool {
	return []harness.Tool{{Name: "create_po", Contract: harness.IdempotentByKey}}
}

func (b buyer) Run(ctx context.Context, env *harness.Env) (any, error) {
	fsys := env.FS()
	usd, err := afero.ReadFile(fsys, "answer")
	if err != nil || !b.checkpoint {
		text, err := env.Model(ctx, harness.ModelCall{Purpose: "how much", Reply: "1200", Alternative: "1300"})
		if err != nil {
			return nil, err
		}
		usd = []byte(text)
		if b.checkpoint { // written whole or not at all: a temporary file, fsynced, renamed
			f, err := fsys.Create("answer.tmp")
			if err != nil {
				return nil, err
			}
			if _, err := f.Write(usd); err != nil || f.Sync() != nil || f.Close() != nil {
				return nil, errors.New("writing answer.tmp failed")
			}
			if err := fsys.Rename("answer.tmp", "answer"); err != nil {
				return nil, err
			}
			if err := syncDir(fsys); err != nil {
				return nil, err
			}
			env.Mark("answer kept")
		}
	}
	key := "po"
	if b.keyByAnswer {
		key = "po-" + string(usd)
	}
	if _, err := env.Call(ctx, harness.Call{Tool: "create_po", Key: key, Args: string(usd)}); err != nil {
		return nil, err
	}
	return string(usd), nil
}

// A model that answers otherwise when asked again after a crash fails an agent that acted on its
// first answer and then, resumed, asks again and acts on the second; an agent that keeps the
// answer before it acts passes every such case, including those where it asks again because the
// crash came before it kept the answer: it then follows the second answer, as the run in which
// the model gave it from the start does.
func TestModelDivergeCatchesActingOnBothAnswers(t *testing.T) {
	diverge := faults.Fault{Kind: faults.ModelDiverge}
	good := newRunner(t, buyer{checkpoint: true}, sim.Options{})
	alternatives := 0
	for _, s := range everyBeat(t, good, diverge) {
		c := good.Run(s)
		if c.Verdict.Outcome != oracle.Pass {
			t.Errorf("checkpointed answer: %s", c)
		}
		if c.Verdict.Reference != "" {
			alternatives++
		}
	}
	if alternatives == 0 {
		t.Errorf("no case of the checkpointing buyer asked again and took the alternative: the test no longer tests that")
	}
	for _, b := range []buyer{{keyByAnswer: true}, {}} {
		rn := newRunner(t, b, sim.Options{})
		failed := 0
		for _, s := range everyBeat(t, rn, diverge) {
			if rn.Run(s).Failed() {
				failed++
			}
		}
		if failed == 0 {
			t.Errorf("%+v: no model-diverge case failed an agent that asks again after acting", b)
		}
	}
}

// A rate limit holds for its retry-after: a call made again before it ends, from this process
// or the next, is refused with the time left; one made after it is answered.
func TestRateLimitWindowHolds(t *testing.T) {
	target := harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
		var seen []string
		call := func() {
			_, err := env.Model(ctx, harness.ModelCall{Purpose: "plan", Reply: "ok"})
			seen = append(seen, fmt.Sprint(err))
		}
		call()
		call() // at once: refused, 20s left
		env.Sleep(ctx, 5*time.Second)
		call() // 15s left
		env.Sleep(ctx, 15*time.Second)
		call() // the window is over
		return seen, nil
	}}
	rn := newRunner(t, target, sim.Options{})
	c := rn.Run(faults.Schedule{{Kind: faults.ModelRateLimit, Beat: 0}})
	want := "[model: rate limited (429), retry after 20s model: rate limited (429), retry after 20s model: rate limited (429), retry after 15s <nil>]"
	if got := fmt.Sprint(c.Result); got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	if c := rn.Run(nil); fmt.Sprint(c.Result) != "[<nil> <nil> <nil> <nil>]" {
		t.Fatalf("golden: %v", c.Result)
	}
}

// The window outlives the process: one restarted after a kill inside it is refused too.
func TestRateLimitWindowOutlivesTheProcess(t *testing.T) {
	target := harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
		_, err := env.Model(ctx, harness.ModelCall{Purpose: "plan", Reply: "ok"})
		var rl *harness.RateLimitError
		if errors.As(err, &rl) && env.Process() > 0 {
			return rl.RetryAfter.String(), nil
		}
		env.Mark("asked")
		return "answered", nil
	}}
	rn := newRunner(t, target, sim.Options{})
	// beat 0 the model (429), beat 1 the mark: killed there, restarted a second later.
	c := rn.Run(faults.Schedule{{Kind: faults.ModelRateLimit, Beat: 0}, {Kind: faults.Kill, Beat: 1}})
	if c.Result != "19s" {
		t.Fatalf("%s", c)
	}
}
