package reference_test

import (
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/reference"
	"github.com/chaoskit/chaoskit/sim"
	"github.com/spf13/afero"
)

// correct builds the correct reference agent on the onboarding task.
func correct() harness.Target { return reference.New(reference.Correct, reference.Onboarding()) }

// bareRun runs the reference agent once, uninterrupted, on a plain afero.MemMapFs, outside
// chaoskit.
func bareRun(b *testing.B) {
	if _, err := sim.RunBare(correct, afero.NewMemMapFs(), sim.Options{}); err != nil {
		b.Fatal(err)
	}
}

// crashCases returns a runner and the schedules of one crash at every golden beat, for each
// crash kind: the cases an exhaustive storage campaign derives from the golden run.
func crashCases(b *testing.B, noDerive bool) (*sim.Runner, []faults.Schedule) {
	rn, err := sim.NewRunner(correct, sim.Options{NoDerive: noDerive})
	if err != nil {
		b.Fatal(err)
	}
	scheds, err := campaign.Schedules(rn, campaign.Options{Faults: []faults.Kind{faults.Kill, faults.Power, faults.Torn}})
	if err != nil {
		b.Fatal(err)
	}
	return rn, scheds
}

func BenchmarkBareRun(b *testing.B) {
	for b.Loop() {
		bareRun(b)
	}
}

// BenchmarkCrashCase measures one case: the crash state, the recovery run to completion, and
// the oracle. It cycles through every crash of the campaign, so it measures the average case;
// "derived" rebuilds the crash state from the golden recording, "rerun" runs the golden prefix
// again, for comparison.
func BenchmarkCrashCase(b *testing.B) {
	for _, mode := range []struct {
		name     string
		noDerive bool
	}{{"derived", false}, {"rerun", true}} {
		b.Run(mode.name, func(b *testing.B) {
			rn, scheds := crashCases(b, mode.noDerive)
			i := 0
			for b.Loop() {
				rn.Run(scheds[i%len(scheds)])
				i++
			}
		})
	}
}

// BenchmarkCaseVsBareRun alternates a crash case and a bare run in one loop and reports the
// ratio of their times, measured side by side: case/bare (below 1 means a case costs less than
// one bare run) and, for re-run prefixes, rerun/bare.
func BenchmarkCaseVsBareRun(b *testing.B) {
	derived, scheds := crashCases(b, false)
	rerun, _ := crashCases(b, true)
	var caseT, rerunT, bareT time.Duration
	i := 0
	for b.Loop() {
		s := scheds[i%len(scheds)]
		t0 := time.Now()
		derived.Run(s)
		t1 := time.Now()
		rerun.Run(s)
		t2 := time.Now()
		bareRun(b)
		t3 := time.Now()
		caseT, rerunT, bareT = caseT+t1.Sub(t0), rerunT+t2.Sub(t1), bareT+t3.Sub(t2)
		i++
	}
	b.ReportMetric(float64(caseT)/float64(bareT), "case/bare")
	b.ReportMetric(float64(rerunT)/float64(bareT), "rerun/bare")
}

// BenchmarkFaultLayer runs the reference agent bare on three filesystems, side by side: afero's
// MemMapFs, the fault layer's Disk, and the Disk through the injecting FS with nothing to inject.
// The differences are what the fault layer costs a run.
func BenchmarkFaultLayer(b *testing.B) {
	for _, fs := range []struct {
		name string
		new  func() afero.Fs
	}{
		{"MemMapFs", afero.NewMemMapFs},
		{"Disk", func() afero.Fs { return faults.NewDisk(faults.DiskOptions{}) }},
		{"FS(Disk)", func() afero.Fs { return faults.New(faults.NewDisk(faults.DiskOptions{}), nil) }},
	} {
		b.Run(fs.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := sim.RunBare(correct, fs.new(), sim.Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSynthetic measures the synthetic agent of 1,000 beats: a bare run, and a case killed
// two beats before the end (a short recovery), and one killed at beat 2, side by side.
func BenchmarkSynthetic(b *testing.B) {
	newAgent := reference.Synthetic(1000)
	rn, err := sim.NewRunner(newAgent, sim.Options{})
	if err != nil {
		b.Fatal(err)
	}
	g, _ := rn.Golden(nil)
	for _, bc := range []struct {
		name string
		run  func()
	}{
		{"bare", func() { sim.RunBare(newAgent, afero.NewMemMapFs(), sim.Options{}) }},
		{"late", func() { rn.Run(faults.Schedule{{Kind: faults.Kill, Beat: g.Len() - 2}}) }},
		{"early", func() { rn.Run(faults.Schedule{{Kind: faults.Kill, Beat: 2}}) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				bc.run()
			}
		})
	}
}
