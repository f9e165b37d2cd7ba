package reports

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/oracle"
)

// nastyTarget is a target name holding every character a renderer must escape.
const nastyTarget = `weird|<b>&"target"`

var fixtureKinds = []string{"kill", "power", "torn", "diskfull", "fsyncfail", "corrupt"}

// demoReport builds a report shaped like the one `chaoskit demo` writes: nine targets, about
// 3000 cases, failures with traces, diffs and duplicates, a few unknown and detected cases, and
// strings that need escaping in every output format.
func demoReport(t testing.TB) *Report {
	t.Helper()
	r := &Report{Schema: Schema, Seed: 1, DurationMs: 567.5,
		Options: Options{Mode: "exhaustive", Faults: fixtureKinds}}
	targets := []string{"reference", "reference/in-memory", "reference/act-then-save", "reference/unstable-key",
		"reference/no-fsync", "reference/no-dirsync", "reference/no-checksum", "reference/meta-drift", nastyTarget}
	golden := map[string]int{}
	for ti, target := range targets {
		golden[target] = 40 + 6*ti
		for ki, kind := range fixtureKinds {
			for beat := range golden[target] {
				r.Cases = append(r.Cases, fixtureCase(ti, target, ki, kind, beat, golden[target]))
			}
		}
		// A few two-fault schedules, as a random campaign makes.
		for beat := 3; beat < golden[target]; beat += 9 {
			c := fixtureCase(ti, target, 0, "kill", beat, golden[target])
			c.Schedule = faults.MustParseSchedule(fmt.Sprintf("kill@%d,power@%d", beat, beat+4))
			c.ID = target + ":" + c.Schedule.String()
			r.Cases = append(r.Cases, c)
		}
	}
	r.Summarize(golden)
	return r
}

func fixtureCase(ti int, target string, ki int, kind string, beat, golden int) Case {
	schedule := fmt.Sprintf("%s@%d", kind, beat)
	if kind == "diskfull" {
		schedule += ":4096"
	}
	c := Case{Target: target, ID: target + ":" + schedule, Schedule: faults.MustParseSchedule(schedule), Verdict: oracle.Pass,
		Repro:      fmt.Sprintf("chaoskit replay --target %s --seed 1 --schedule '%s'", target, schedule),
		DurationMs: float64((beat*7+ti)%23) / 10,
		Metrics: oracle.Metrics{Restarts: 1, Beats: golden + beat%5, GoldenBeats: golden,
			WorkLostBeats: (beat * (ti + 1)) % (13 + 7*ti), ResumeBeats: beat % 4}}
	switch {
	case ti == 0:
		if kind == "corrupt" && beat%11 == 0 {
			c.Detected = "the last process panicked: checksum mismatch\ngoroutine 7 [running]:\n\tstate.go:108"
		}
	case ti == 8 && beat%17 == 5:
		c.Verdict = oracle.Unknown
		c.Reason = "the target hung: no beat for 10s of virtual time\nlast beat: fs.write wal.log"
	case (beat*7+ti*3+ki)%(ti+2) == 0:
		c.Verdict = oracle.Fail
		c.Violations = fixtureViolations(ti, beat)
		c.Duplicates = len(c.Violations) - 1
		if c.Duplicates > 0 {
			c.DuplicatesByTool = map[string]int{[]string{"create_vendor", "create_po", "notify"}[beat/3%3]: c.Duplicates}
		}
		c.StateMismatch = beat%2 == 0
		if c.StateMismatch {
			c.Diff = fixtureDiff(beat)
		}
	}
	if c.Verdict != oracle.Pass {
		c.Trace = fixtureTrace(schedule, beat)
	}
	if ti == 8 && beat == 8 {
		c.Repro = "chaoskit replay --target '" + target + "' --note `x` --schedule " + schedule
	}
	return c
}

func fixtureViolations(ti, beat int) []oracle.Violation {
	vs := []oracle.Violation{{Property: "same-state", Detail: "the state differs from the golden run's (-golden +faulty):\n  State{\n-   Step: 3,\n+   Step: 4,\n  }"}}
	if beat%3 == 0 {
		vs = append([]oracle.Violation{{Property: "no-duplicate-effects",
			Detail: fmt.Sprintf("create_po {\"amount\":%d} applied 2× (golden 1×) by the calls sent at beat %d (process 0), beat %d (process 1)", beat*100, beat, beat+2)}}, vs...)
	}
	if ti == 8 {
		vs[0].Detail = "a | pipe, <script>alert(1)</script> & ]]> and a \x01 control\nsecond line"
	}
	return vs
}

func fixtureTrace(schedule string, beat int) []TraceBeat {
	var tr []TraceBeat
	for b := max(0, beat-2); b <= beat; b++ {
		tr = append(tr, TraceBeat{Beat: b, Process: 0, Label: fmt.Sprintf("fs.write wal.log +%dB", 64*b)})
	}
	tr[len(tr)-1].Fault = strings.Split(schedule, ",")[0]
	tr[len(tr)-1].Note = "process 0 crashed by " + tr[len(tr)-1].Fault
	for b := beat + 1; b <= beat+4; b++ {
		tr = append(tr, TraceBeat{Beat: b, Process: 1, Label: "mark recovering <" + schedule + ">"})
	}
	tr = append(tr, TraceBeat{Beat: beat + 20, Process: 1, Label: "mark done", Note: "process 1 completed"})
	return tr
}

func fixtureDiff(beat int) string {
	var b strings.Builder
	b.WriteString("  State{\n")
	for i := range 20 + beat*3 {
		fmt.Fprintf(&b, "-   Entry%d: %q,\n+   Entry%d: %q,\n", i, "old", i, "new")
	}
	b.WriteString("  }\n")
	return b.String()
}

// randomReport builds the report of a small random campaign over one target: 1,500 cases of
// which 7 failed and were shrunk, one through go test's replay command, with properties not
// checked, a fault that never fired, a refusal and failed processes.
func randomReport(t testing.TB) *Report {
	t.Helper()
	r := &Report{Schema: Schema, Seed: 3, Options: Options{Mode: "random", Cases: 1500, Faults: []string{"kill", "power", "lease"}}}
	const target = "agent"
	for i := range 1500 {
		schedule := fmt.Sprintf("kill@%d,lease@%d+2h", i%90, 100+i)
		c := Case{Target: target, ID: target + ":" + schedule, Index: i, Schedule: faults.MustParseSchedule(schedule), Verdict: oracle.Pass,
			Repro:   fmt.Sprintf("chaoskit replay --target %s --seed 3 --schedule '%s'", target, schedule),
			Metrics: oracle.Metrics{Restarts: 1, Beats: 100, GoldenBeats: 90}}
		switch {
		case i%200 == 7 && i < 1400:
			c.Verdict = oracle.Fail
			c.Violations = []oracle.Violation{
				{Property: "same-result", Detail: "the result differs from the golden run's (-golden +faulty):\n" + fixtureDiff(1)},
				{Property: "same-state", Detail: "the state differs from the golden run's (-golden +faulty):\n" + fixtureDiff(2)},
			}
			c.Diff = fixtureDiff(1)
			c.Shrunk = faults.MustParseSchedule(fmt.Sprintf("power@%d", i%90))
			c.ShrunkRepro = fmt.Sprintf("chaoskit replay --target %s --seed 3 --schedule '%s'", target, c.Shrunk)
			c.Trace = fixtureTrace(schedule, i%90)
			if i == 207 {
				c.Repro = "go test ./orders -run '^TestOrders$' -chaoskit.schedule='" + schedule + "'"
				c.ShrunkRepro = "go test ./orders -run '^TestOrders$' -chaoskit.schedule='" + c.Shrunk.String() + "'"
			}
		case i%100 == 3:
			c.NotChecked = []string{"same-state: the run did not complete", "same-result: the run did not complete"}
		case i%100 == 4:
			c.NotChecked = []string{"bounded-work-lost: the target made no progress marks (mark each durable step: Env.Mark in Go, mark in the process clients)"}
		case i == 5:
			c.NotChecked = []string{"bounded-work-lost: a corruption destroyed durable progress, so redoing work is expected"}
			c.Unfired = []faults.Fault{{Kind: faults.Lease, Beat: 10, Dur: 2 * time.Hour}}
		case i == 6:
			c.Refused = "the lease was lost: a person must decide"
			c.FailedProcesses = 2
		}
		r.Cases = append(r.Cases, c)
	}
	r.Summarize(map[string]int{target: 90})
	return r
}
