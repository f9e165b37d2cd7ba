package dbos_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/adapters/process"
	"github.com/chaoskit/chaoskit/adapters/process/fusefs"
	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/chaoskittest"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/internal/needs"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/sim"
)

// The workflow binary and its system database template, built once (the first build of
// modernc's SQLite takes about 45 s).
var (
	buildOnce     sync.Once
	buildErr      error
	bin, template string
	tmpDir        string
)

func TestMain(m *testing.M) {
	process.Init()
	code := m.Run()
	if tmpDir != "" {
		os.RemoveAll(tmpDir)
	}
	os.Exit(code)
}

// setup checks that this machine can mount a FUSE disk, then builds the workflow and migrates
// its template.
func setup(t *testing.T) {
	t.Helper()
	if err := fusefs.Available(); err != nil {
		needs.Missing(t, fmt.Sprintf("no FUSE disk: %v (apt-get install fuse3)", err))
	}
	buildOnce.Do(func() {
		if tmpDir, buildErr = os.MkdirTemp("", "chaoskit-dbos-test-"); buildErr != nil {
			return
		}
		bin, template = filepath.Join(tmpDir, "poworkflow"), filepath.Join(tmpDir, "template.db")
		if out, err := exec.Command("go", "build", "-o", bin, "./cmd/poworkflow").CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("building the workflow: %v\n%s", err, out)
			return
		}
		if out, err := exec.Command(bin, "-migrate", template).CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("migrating the template: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
}

// tools are the workflow's tools, as chaoskit must know them (the --tool flags of the command
// line).
var tools = []harness.Tool{
	{Name: "vendor_lookup", Contract: harness.ReadOnly},
	{Name: "create_po", Contract: harness.IdempotentByKey, Latency: time.Second},
	{Name: "notify_finance", Contract: harness.IdempotentByKey},
}

// workflow returns the workflow as a process target on a FUSE disk, with keys or without, its
// system database in the journal mode given (delete, delete-full or wal), and any other flags.
//
// It runs on the wall clock, as these findings were measured. On the virtual clock a restart
// after a crash inside SQLite's journal can spend DBOS's whole 2-minute startup deadline in
// virtual time ("system database startup timed out after 2m0s ... blocking database locks")
// before the wall-clock moment that would have freed it has come: a limit of the virtual clock
// for a Go program that polls a lock with timed sleeps, open in chaoskit.
func workflow(keys bool, journal string, flags ...string) process.Target {
	argv := append([]string{bin, "-template", template, "-journal=" + journal}, flags...)
	if !keys {
		argv = append(argv, "-keys=false")
	}
	return process.Target{Argv: argv, ToolList: tools, StateArgv: []string{bin, "-dump-state"}, Disk: process.FUSE, Clock: process.WallClock}
}

// storage are the fault kinds the workflow is measured under.
var storage = []faults.Kind{faults.Kill, faults.Power, faults.Torn, faults.DiskFull}

func runner(t *testing.T, keys bool, journal string) *sim.Runner {
	t.Helper()
	name := "dbos/keyed"
	if !keys {
		name = "dbos/unkeyed"
	}
	if journal != "delete" {
		name += "-" + journal
	}
	rn, err := sim.NewRunner(harness.Fresh(workflow(keys, journal)), sim.Options{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return rn
}

// The golden run: the template installed durably, the workflow inserted, then four steps, each
// an effect and a transaction recording its output (a rollback journal written and fsynced, the
// database written and fsynced, the journal deleted and the directory fsynced), marked once
// recorded; then the workflow's outcome.
func TestGoldenRun(t *testing.T) {
	setup(t)
	rn := runner(t, true, "delete")
	g, _ := rn.Golden(nil)
	var marks, calls []string
	for _, label := range g.Trace() {
		switch {
		case strings.HasPrefix(label, "mark "):
			marks = append(marks, strings.TrimPrefix(label, "mark "))
		case strings.HasPrefix(label, "tool ") && strings.HasSuffix(label, " sent"):
			calls = append(calls, strings.TrimSuffix(strings.TrimPrefix(label, "tool "), " sent"))
		}
	}
	if got := strings.Join(marks, "|"); got != "po-1:0 plan recorded|po-1:1 lookup recorded|po-1:2 create_po recorded|po-1:3 notify recorded" {
		t.Errorf("marks %s", got)
	}
	if got := strings.Join(calls, "|"); got != "vendor_lookup key=po-1:1|create_po key=po-1:2|notify_finance key=po-1:3" {
		t.Errorf("calls %s", got)
	}
	c := rn.Run(nil)
	if c.Result != "create_po-1 filed with Acme Corp for $84000; finance notified (notify_finance-1)" {
		t.Errorf("result %v", c.Result)
	}
	if s := fmt.Sprint(c.State); !strings.Contains(s, "status:SUCCESS") || strings.Count(s, "name:") != 4 {
		t.Errorf("state %s", s)
	}
	t.Logf("%d golden beats", g.Len())
}

// DBOS's promise, measured with keys: a step whose output was recorded is not executed again
// after a crash (no progress mark is made twice: bounded-work-lost), the step in flight is
// executed again (no lost effect), and with the step's workflow id and step id as the key, its
// effect is not applied twice. Every case of kill, power, torn and diskfull passes; here a sample
// of 120 taken evenly across the campaign (the full campaign is the command in the findings).
func TestKeyedWorkflowKeepsItsPromise(t *testing.T) {
	setup(t)
	chaoskittest.Check(t, harness.Fresh(workflow(true, "delete")), campaign.Options{Faults: storage, Cases: 120})
}

// Without keys the promise is still kept, and is not enough: a crash after a step's effect
// landed and before DBOS recorded the step's output makes recovery run the step again, at least
// once as promised, so the purchase order is filed twice. Every such crash is caught by
// no-duplicate-effects, and only those: crashes elsewhere pass, and no completed step is run
// again.
func TestUnkeyedWorkflowFilesTwice(t *testing.T) {
	setup(t)
	rn := runner(t, false, "delete")
	g, _ := rn.Golden(nil)
	// window[i] says whether beat i falls between an effect applied and its step's mark.
	window := make([]bool, g.Len())
	open := false
	for i := range g.Len() {
		label := g.Beat(i).Label()
		switch {
		case strings.HasPrefix(label, "tool create_po") && strings.HasSuffix(label, " applied"),
			strings.HasPrefix(label, "tool notify_finance") && strings.HasSuffix(label, " applied"):
			open = true
		case strings.HasPrefix(label, "mark "):
			open = false
		}
		window[i] = open
	}
	var scheds []faults.Schedule
	for i := range g.Len() {
		if window[i] || i%8 == 0 {
			scheds = append(scheds, faults.Schedule{{Kind: faults.Kill, Beat: i}})
		}
		if window[i] && i%4 == 0 {
			scheds = append(scheds, faults.Schedule{{Kind: faults.Power, Beat: i}})
		}
	}
	caught := 0
	for _, c := range campaign.Run(context.Background(), rn, scheds, nil, campaign.Options{}) {
		k := c.Schedule[0].Beat
		label := g.Beat(k).Label()
		switch {
		case c.Verdict.Outcome == oracle.Pass:
			if strings.HasSuffix(label, " applied") && !strings.Contains(label, "vendor_lookup") {
				t.Errorf("a crash after an effect landed, before its reply, did not file it twice: %s", c)
			}
		case !window[k]:
			t.Errorf("a crash outside an effect's window failed: %s", c)
		case !c.Breaks(oracle.NoDuplicateEffects) || c.Verdict.Metrics.Duplicates != 1 || c.Breaks(oracle.BoundedWorkLost):
			t.Errorf("want one duplicate and no completed step run again: %s", c)
		default:
			caught++
		}
	}
	if caught == 0 {
		t.Fatal("no duplicate caught")
	}
	t.Logf("%d cases, %d caught by no-duplicate-effects", len(scheds), caught)
}

// With the SQLite settings DBOS itself applies to a sqlite: DatabaseURL (WAL, synchronous NORMAL:
// a commit is not fsynced), a kill loses nothing, but a power loss takes recorded steps back:
// recovery executes completed steps again, which breaks the promise (bounded-work-lost: a step
// marked as recorded is marked again). The keys keep their effects from being applied twice.
func TestDBOSOwnSQLiteSettingsRedoCompletedSteps(t *testing.T) {
	setup(t)
	rn := runner(t, true, "wal")
	for _, c := range explore(t, rn, faults.Kill, 20) {
		if c.Verdict.Outcome != oracle.Pass {
			t.Errorf("%s", c)
		}
	}
	redone := 0
	for _, c := range explore(t, rn, faults.Power, 40) {
		if c.Breaks(oracle.BoundedWorkLost) {
			redone++
		}
		if c.Verdict.Metrics.Duplicates > 0 || (c.Failed() && !c.Breaks(oracle.BoundedWorkLost)) {
			t.Errorf("%s", c)
		}
	}
	if redone == 0 {
		t.Fatal("no power loss made recovery execute a recorded step again")
	}
	t.Logf("%d of 40 power losses redid recorded steps", redone)
}

// explore runs n cases of one fault kind, taken evenly across every beat where it applies.
func explore(t *testing.T, rn *sim.Runner, k faults.Kind, n int) []*sim.Case {
	t.Helper()
	cases, err := campaign.Explore(context.Background(), rn, campaign.Options{Faults: []faults.Kind{k}, Cases: n})
	if err != nil {
		t.Fatal(err)
	}
	return cases
}

// DBOS records a step's error as the step's outcome, for good, and a workflow that returns it
// as failed: a tool that fails once (a 503, a lost reply, a timeout) or a model that errs once
// fails the workflow for ever unless the step retries in the process. With retries (and keys,
// so that a retry after a lost reply is not a second order) every tool and model fault passes
// but a rate limit: DBOS's step retries wait BaseInterval × BackoffFactor^(retry−1) and read no
// retry-after (dbos/workflow.go:2461-2472, 2683-2712 in v1.8.0), so the workflow's three
// retries, 10, 20 and 40 ms apart, all meet the 429 whose retry-after is 20 s, and it fails
// (completes). Without retries every fault leaves the workflow failed (completes).
func TestStepErrorsAreForeverWithoutRetries(t *testing.T) {
	setup(t)
	kinds := []faults.Kind{faults.ToolTransient, faults.ToolAmbiguous, faults.ToolTimeout,
		faults.ModelRateLimit, faults.ModelError, faults.ModelContext, faults.ModelHang}
	for _, retries := range []string{"3", "0"} {
		rn, err := sim.NewRunner(harness.Fresh(workflow(true, "delete", "-retries="+retries)), sim.Options{Name: "dbos/keyed-retries-" + retries})
		if err != nil {
			t.Fatal(err)
		}
		cases, err := campaign.Explore(context.Background(), rn, campaign.Options{Faults: kinds})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			rateLimited := c.Schedule[0].Kind == faults.ModelRateLimit
			if retries == "3" && !rateLimited && c.Verdict.Outcome != oracle.Pass || (retries == "0" || rateLimited) && !c.Breaks(oracle.Completes) {
				t.Errorf("-retries=%s: %s", retries, c)
			}
		}
		if len(cases) != 13 {
			t.Errorf("-retries=%s: %d cases, want 13 (3 tool calls × 3 kinds, 1 model call × 4)", retries, len(cases))
		}
	}
}
