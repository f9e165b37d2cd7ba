package oracle_test

import (
	"testing"

	"github.com/chaoskit/chaoskit/oracle"
)

// shipped is an effect of the ship tool with arguments args, applied under key by process p.
func shipped(args, key string, p int) oracle.Effect {
	return oracle.Effect{Tool: "ship", Identity: "ship " + args, Key: key, Process: p}
}

// A next version that sends other arguments under the key of an effect the old version applied
// (grams where the old one sent kilograms) applies the same effect: an upgrade case matches
// effects by tool and key (Options.ByKey), every other case by tool and arguments.
func TestUpgradeMatchesEffectsByKey(t *testing.T) {
	golden := done([]oracle.Effect{shipped(`{"g":1000}`, "p1", 0), shipped(`{"g":2000}`, "p2", 0)})
	faulty := done([]oracle.Effect{shipped(`{"kg":1}`, "p1", 0), shipped(`{"g":2000}`, "p2", 1)})
	faulty.Processes = []oracle.Process{{First: true, Crashed: true}, {}}

	if v := oracle.Check(golden, faulty, oracle.Options{}); props(v) != "no-phantom-effects,no-lost-effects" {
		t.Errorf("by arguments: violations %q, want the kilograms phantom and the grams lost", props(v))
	}
	v := oracle.Check(golden, faulty, oracle.Options{ByKey: true})
	if props(v) != "" {
		t.Errorf("by key: violations %q, want none", props(v))
	}
	oracle.Upgraded(&v, golden, faulty, 1, oracle.Options{ByKey: true})
	if v.Metrics.Stranded || v.Metrics.Duplicated || v.Metrics.Replanned {
		t.Errorf("marks %+v, want none", v.Metrics)
	}

	// By key, the same key applied twice is still a duplicate.
	twice := done([]oracle.Effect{shipped(`{"kg":1}`, "p1", 0), shipped(`{"g":1000}`, "p1", 1), shipped(`{"g":2000}`, "p2", 1)})
	if v := oracle.Check(golden, twice, oracle.Options{ByKey: true}); props(v) != "no-duplicate-effects" {
		t.Errorf("a key applied twice: violations %q, want no-duplicate-effects", props(v))
	}
}

// A next version whose call under an applied effect's key, with other arguments, is refused
// read the checkpoint: the case is marked duplicated, not stranded, even though the refusal
// stops the run.
func TestUpgradeKeyRefusedAcrossTheDeployIsDuplicated(t *testing.T) {
	golden := done([]oracle.Effect{shipped(`{"g":1000}`, "p1", 0)})
	faulty := &oracle.Observation{Err: "422 key reused", Effects: []oracle.Effect{shipped(`{"kg":1}`, "p1", 0)},
		Processes: []oracle.Process{{First: true, Crashed: true}, {Failed: true}}, Beats: 10,
		KeyReuses: []oracle.KeyReuse{{Tool: "ship", Key: "p1", FirstArgs: `{"kg":1}`, NewArgs: `{"g":1000}`, FirstProcess: 0, Process: 1}}}
	opts := oracle.Options{ByKey: true}
	v := oracle.Check(golden, faulty, opts)
	if !v.Breaks(oracle.NoKeyReuse) {
		t.Fatalf("violations %q, want no-key-reuse among them", props(v))
	}
	oracle.Upgraded(&v, golden, faulty, 1, opts)
	if !v.Metrics.Duplicated || v.Metrics.Stranded {
		t.Errorf("marks %+v, want duplicated and not stranded", v.Metrics)
	}

	// The same failure with the key reused within the new version is its own bug: stranded.
	faulty.KeyReuses[0].FirstProcess = 1
	v = oracle.Check(golden, faulty, opts)
	oracle.Upgraded(&v, golden, faulty, 1, opts)
	if v.Metrics.Duplicated || !v.Metrics.Stranded {
		t.Errorf("key reused after the deploy: marks %+v, want stranded only", v.Metrics)
	}
}
