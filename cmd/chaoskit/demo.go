package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/reference"
	"github.com/chaoskit/chaoskit/reports"
)

func runDemo(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	out := fs.String("out", "chaoskit-report", "directory to write the report to")
	seed := fs.Uint64("seed", 1, "the campaign's seed")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("demo takes no arguments, got %q", pos[0])
	}
	start := time.Now()
	kinds := faults.StorageKinds()
	rep := &reports.Report{Schema: reports.Schema, Seed: *seed, Options: reports.Options{Mode: "exhaustive", Faults: kindNames(kinds)}}
	golden := map[string]int{}
	var infos []reference.VariantInfo
	for _, v := range reference.Variants() {
		a := reference.New(v.Variant, reference.Onboarding())
		rn, err := harness.NewRunner(a, harness.Options{Name: a.Name(), Faults: kinds, Seed: *seed})
		if err != nil {
			return err
		}
		golden[a.Name()] = rn.GoldenBeats()
		for _, c := range rn.Explore(context.Background()) {
			rep.Cases = append(rep.Cases, c.Report())
		}
		infos = append(infos, v)
	}
	rep.Summarize(golden)
	rep.DurationMs = float64(time.Since(start).Microseconds()) / 1000
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	path := filepath.Join(*out, "report.json")
	if err := rep.WriteFile(path); err != nil {
		return err
	}
	ok := demoTable(stdout, rep, infos)
	fmt.Fprintf(stdout, "\n%d cases in %.1fs; report: %s\n", len(rep.Cases), time.Since(start).Seconds(), path)
	if !ok {
		return exitError{exitFail, "the reference agent failed a case or a variant went uncaught"}
	}
	fmt.Fprintln(stdout, "the reference agent passed every case and every variant was caught")
	return nil
}

func kindNames(ks []faults.Kind) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = string(k)
	}
	return out
}

// demoTable prints one row per agent and reports whether the reference passed everything and
// every variant was caught by a property that catches its bug.
func demoTable(w io.Writer, rep *reports.Report, infos []reference.VariantInfo) bool {
	fmt.Fprintf(w, "%-28s %6s %9s %11s %6s %9s %10s  %s\n", "agent", "cases", "survived", "duplicates", "lost", "mismatch", "work lost", "verdict")
	ok := true
	for i, t := range rep.Summary.Targets {
		info := infos[i]
		verdict := ""
		if info.Variant == reference.Correct {
			verdict = "passes every case"
			if t.Failed+t.Unknown > 0 {
				verdict, ok = fmt.Sprintf("FAILED %d cases", t.Failed+t.Unknown), false
			}
		} else {
			var by []string
			for _, p := range info.CaughtBy {
				if n := t.Violations[p]; n > 0 {
					by = append(by, fmt.Sprintf("%s ×%d", p, n))
				}
			}
			if len(by) == 0 {
				verdict, ok = "NOT CAUGHT", false
			} else {
				verdict = "caught: " + strings.Join(by, ", ")
			}
		}
		fmt.Fprintf(w, "%-28s %6d %9s %11d %6d %9d %10.2f  %s\n", t.Target, t.Cases,
			fmt.Sprintf("%d/%d", t.Passed, t.Cases), t.Duplicates, t.LostEffects, t.StateMismatches, t.WorkLostBeatsMean, verdict)
	}
	return ok
}
