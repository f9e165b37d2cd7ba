package sim_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/internal/envlink"
	"github.com/chaoskit/chaoskit/sim"
)

func ext(env *harness.Env) envlink.Ext { return envlink.Kernel(env).(envlink.Ext) }

// Hold waits in virtual time without a beat; Settle returns once everything due at the instant
// has run; Waited is a beat of its own that a kill can land on.
func TestExtWaits(t *testing.T) {
	target := harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
		x := ext(env)
		var log []string
		g := env.Group()
		for _, name := range []string{"a", "b"} {
			g.Go(func(ctx context.Context) error {
				env.Sleep(ctx, time.Second)
				log = append(log, name)
				return nil
			})
		}
		start := env.Now()
		if err := x.Hold(ctx, start.Add(time.Second)); err != nil {
			return nil, err
		}
		x.Settle() // a and b, due at the same instant, have both run
		log = append(log, fmt.Sprintf("held %s, settled with %d", env.Now().Sub(start), len(log)))
		hctx, cancel := context.WithCancel(ctx)
		cancel()
		log = append(log, fmt.Sprint(x.Hold(hctx, time.Time{})))
		x.Waited(20*time.Second, "clock_nanosleep")
		env.Mark("after")
		return strings.Join(log, "; "), nil
	}}
	rn := newRunner(t, target, sim.Options{})
	c := rn.Run(nil)
	if c.Result != "held 1s, settled with 2; context canceled" && c.Result != "a; b; held 1s, settled with 2; context canceled" {
		t.Fatalf("result %v", c.Result)
	}
	g, _ := rn.Golden(nil)
	if got := strings.Join(g.Trace(), "|"); got != "sleep 1s|sleep 1s|wait 20s (clock_nanosleep)|mark after" {
		t.Fatalf("trace %s", got)
	}
	if c := rn.Run(kill(2)); c.Verdict.Metrics.Restarts != 1 {
		t.Fatalf("a kill at the wait's beat: %s", c)
	}
}

// The counted golden runs reverse ties; the recorded one and every case do not.
func TestExtReversed(t *testing.T) {
	var seen []bool
	target := harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
		seen = append(seen, ext(env).Reversed())
		env.Mark("m")
		return nil, nil
	}}
	rn := newRunner(t, target, sim.Options{})
	rn.Run(faults.Schedule{{Kind: faults.Kill, Beat: 0}})
	if fmt.Sprint(seen) != "[true false false]" {
		t.Fatalf("reversed in the counted golden run, the recorded one, the case's restart: %v", seen)
	}
}
