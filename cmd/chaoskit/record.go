package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/chaoskit/chaoskit/adapters/process"
	"github.com/chaoskit/chaoskit/adapters/provider"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/sim"
)

// runRecord runs a command's golden run with its model API proxied to a real provider, and
// writes what it asked and got as a cassette, for campaigns to answer from.
func runRecord(c *cli, args []string) error {
	fs := flag.NewFlagSet("record", flag.ContinueOnError)
	upstream := fs.String("upstream", "", "the real provider's base URL, /v1 included (default: $OPENAI_BASE_URL of chaoskit's own environment, else https://api.openai.com/v1)")
	keyVar := fs.String("key-env", "OPENAI_API_KEY", "the variable of chaoskit's own environment that holds the real provider's key")
	ef := addExecFlags(fs)
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("record takes flags only, not %q", pos[0])
	}
	out := *ef.cassette
	if out == "" {
		return usagef("record: --cassette FILE names the cassette to write")
	}
	if len(ef.exec) != 1 {
		return usagef("record: give one --exec, the agent to record (%d given)", len(ef.exec))
	}
	*ef.cassette = "" // written, not read
	commands, err := ef.commands(setFlags(fs))
	if err != nil {
		return err
	}
	ct, err := execTarget(commands[0])
	if err != nil {
		return err
	}
	base := *upstream
	if base == "" {
		base = os.Getenv("OPENAI_BASE_URL")
	}
	if base == "" {
		base = "https://api.openai.com/v1"
	}
	key := os.Getenv(*keyVar)
	if key == "" {
		return usagef("record: $%s is empty: the real provider's key is read from it (--key-env names another variable)", *keyVar)
	}
	rec := provider.NewRecorder(provider.RecordOptions{Upstream: strings.TrimSuffix(base, "/"), Key: key})
	t := *ct.New().(*process.Target)
	t.Services.Model = rec
	_, runErr := sim.NewRunnerContext(c.ctx, harness.Fresh(t), sim.Options{Name: ct.Name})
	cas, recErr := rec.Cassette()
	if len(cas.Interactions) == 0 {
		return errors.Join(fmt.Errorf("record: %s asked the model nothing: no cassette written", ct.Name), runErr, recErr)
	}
	if err := cas.Save(out); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	fmt.Fprintf(c.stdout, "recorded %d interactions of %s into %s\n", len(cas.Interactions), ct.Name, out)
	if recErr != nil {
		fmt.Fprintf(c.stderr, "chaoskit: record: some answers could not be recorded: %v\n", recErr)
	}
	if runErr != nil {
		// The golden run is run twice, as a campaign's is; an agent that asks the model the
		// same and gets another answer the second time has it as an alternative.
		return fmt.Errorf("record: the cassette is written, but %s did not run as a campaign's golden run must: %w", ct.Name, runErr)
	}
	return nil
}
