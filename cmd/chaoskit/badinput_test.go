package main

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/oracle"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/spf13/afero"
)

// Every bad flag, target, fault name, schedule, gate, shard and file exits 2 with one line of
// stderr that names what is wrong.
func TestBadInput(t *testing.T) {
	f := campaignDir(t, actThenSave...)
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	garbage := write("garbage.json", "this is not json")
	noSchema := write("noschema.json", `{"seed": 1}`)
	v0 := write("v0.json", `{"schema": "chaoskit.report/v0", "seed": 1}`)
	v1 := write("v1.json", `{"schema": "chaoskit.report/v1", "seed": 1, "cases": []}`)
	unknownField := write("unknown.json", sealed("{\n  \"schema\": \""+reports.Schema+"\",\n  \"seed\": 1,\n  \"colour\": \"red\",\n  \"cases\": []\n}\n"))
	unsealed := write("unsealed.json", "{\n  \"schema\": \""+reports.Schema+"\",\n  \"seed\": 1,\n  \"cases\": []\n}\n")
	missing := filepath.Join(dir, "missing.json")
	run := []string{"run", "--out", filepath.Join(dir, "out"), "--target", "reference", "--faults", "kill"}
	report := filepath.Join(f.dir, "report.json")

	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		// Flags.
		{[]string{"demo", "--colour"}, "demo: unknown flag -colour (chaoskit demo --help lists them)"},
		{[]string{"demo", "--seed", "x"}, `invalid value "x" for flag -seed`},
		{[]string{"demo", "extra"}, `demo takes no arguments, got "extra"`},
		{[]string{"demo", "--faults", "kil"}, `unknown fault "kil"`},
		{[]string{"targets", "extra"}, `targets takes no arguments, got "extra"`},
		{[]string{"faults", "--all"}, "faults: unknown flag -all"},
		{append(run, "--colour"), "run: unknown flag -colour"},
		{append(run, "extra"), `run takes no arguments, got "extra"`},
		{[]string{"run", "--faults", "kill"}, "run needs --target"},
		{append(run, "--target", ""), `invalid value "" for flag -target: empty name`},
		{append(run, "--seed", "-1"), `invalid value "-1" for flag -seed`},
		{append(run, "--cases", "-1"), "--cases -1: want 1 or more"},
		{append(run, "--mode", "random", "--cases", "0"), "--cases 0: want 1 or more (leave --cases out for the default"},
		{append(run, "--cases", "0"), "--cases 0: want 1 or more"},
		{append(run, "--max-beats", "0"), "--max-beats 0: want 1 or more (leave --max-beats out for the default, 1000000)"},
		{append(run, "--max-virtual-time", "-1h"), "--max-virtual-time -1h0m0s: want a positive duration"},
		{append(run, "--max-virtual-time", "a week"), `invalid value "a week" for flag -max-virtual-time`},
		{[]string{"replay", "--target", "reference", "--schedule", "kill@3", "--max-beats", "-5"}, "--max-beats -5: want 1 or more"},
		{[]string{"run", "--exec", "true", "--env", "NOEQUALS", "--out", dir}, `--env "NOEQUALS": want KEY=VALUE`},
		{[]string{"run", "--exec", "python3 app.py | cat", "--out", dir}, `--exec "python3 app.py | cat": "|" is a shell operator, and the command runs without a shell; for one, give sh -c 'python3 app.py | cat'`},
		{[]string{"run", "--exec", "make && ./app", "--out", dir}, `"&&" is a shell operator`},
		{[]string{"run", "--exec", "true", "--state", "cat state.json 2>/dev/null", "--out", dir}, `--state "cat state.json 2>/dev/null": "2>/dev/null" is a shell operator`},
		{[]string{"run", "--exec", "./app >log", "--out", dir}, `">log" is a shell operator`},
		{[]string{"run", "--exec", "true", "--env", "=x", "--out", dir}, `--env "=x": want KEY=VALUE`},
		{[]string{"run", "--resume", dir}, "--resume " + dir + ": it holds no journal (cases.jsonl) to resume; to start the campaign there, give its --target or --exec"},
		{append(run, "--mode", "random", "--cases", "99999999999"), "--cases 99999999999: at most 1000000 per target"},
		{append(run, "--parallel", "-2"), "--parallel -2: want 1 or more"},
		{append(run, "--parallel", "0"), "--parallel 0: want 1 or more (leave --parallel out for one per CPU)"},
		{[]string{"bench", "--parallel", "0"}, "--parallel 0: want 1 or more"},
		{append(run, "--workers", "2", "--parallel", "2"), "--workers is the old name of --parallel: give one of them"},
		{append(run, "--mode", "sideways"), `--mode: unknown mode "sideways"`},
		{append(run, "--depth", "3"), "--depth 3: want 1 (one fault a case) or 2 (also a kill, then a power cut during the recovery)"},
		{append(run, "--depth", "2", "--mode", "random"), "--depth 2 is for --mode exhaustive"},
		{append(run, "--depth", "2"), "--depth 2 lists a kill, then a power cut during the recovery: --faults must hold kill and power"},
		{append(run, "--restart-backoff", "soon"), `--restart-backoff: back-off "soon": "soon" is not a duration (want 10s..5m, or 5s for a constant delay)`},
		{append(run, "--restart-backoff", "1m..10s"), `--restart-backoff: back-off "1m..10s": "10s" is not a duration at least 1m`},
		{append(run, "--restart-backoff", "5s,after=1m"), `--restart-backoff: back-off "5s,after=1m": after the comma want reset=DURATION (10m)`},
		{append(run, "--grace", "-5s"), `--grace "-5s": want a duration of 0 or more, such as 30s (0 kills at once)`},
		{append(run, "--grace", "soon"), `--grace "soon": want a duration of 0 or more`},
		{[]string{"replay", "--target", "reference", "--schedule", "kill@3", "--grace", "1 minute"}, `--grace "1 minute": want a duration`},
		{append(run, "--fs-model", "xfs"), `--fs-model: unknown filesystem model "xfs" (want posix or ext4-ordered)`},
		{[]string{"replay", "--target", "reference", "--schedule", "power@3", "--fs-model", "btrfs"}, `--fs-model: unknown filesystem model "btrfs"`},
		{append(run, "--format", "json,pdf"), `unknown format "pdf"`},
		// Targets and faults.
		{append(run, "--target", "reference/no-such-bug"), `unknown target "reference/no-such-bug" (known: reference, `},
		{append(run, "--faults", "kill,powr"), `--faults: fault list "kill,powr": unknown fault "powr"`},
		{append(run, "--faults", "kill,,power"), "empty fault name"},
		{[]string{"run", "--target", "reference", "--out", ""}, "--out is empty: name the report directory"},
		{[]string{"help", "frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"version", "extra"}, `version takes no arguments, got "extra"`},
		// Commands.
		{[]string{"run", "--exec", "", "--out", dir}, `--exec "": no command`},
		{[]string{"run", "--exec", "python3 'app.py", "--out", dir}, "unclosed single quote at column 9"},
		{[]string{"run", "--exec", "true", "--tool", "po", "--out", dir}, `--tool: tool "po": want NAME=CONTRACT`},
		{[]string{"run", "--exec", "true", "--tool", "po=maybe", "--out", dir}, `unknown contract "maybe"`},
		{[]string{"run", "--exec", "true", "--tool", "po=read-only", "--tool", "po=read-only", "--out", dir}, "--tool po: declared twice"},
		{[]string{"run", "--exec", "true", "--ignore", "checkpoints", "--out", dir}, `JSON path "checkpoints" must start with $`},
		{[]string{"run", "--exec", "true", "--disk", "floppy", "--out", dir}, `unknown disk mode "floppy"`},
		{[]string{"run", "--exec", "true", "--state", "'", "--out", dir}, "--state \"'\": unclosed single quote"},
		{[]string{"run", "--exec", "true", "--name", "a", "--name", "b", "--out", dir}, "2 --name for 1 --exec"},
		{[]string{"run", "--exec", "true", "--exec", "true", "--out", dir}, `two targets named "true": give each --exec its own --name`},
		{append(run, "--tool", "po=read-only"), "--tool describes an --exec target, and there is none"},
		{append(run, "--disk", "plain"), "--disk describes an --exec target, and there is none"}, // given, though the default
		{[]string{"run", "--exec", "/no/such/command", "--out", dir}, "starting /no/such/command"},
		// A deploy of a next version (upgrade).
		{[]string{"run", "--exec", "true", "--faults", "kill,upgrade", "--out", dir}, "--faults upgrade deploys a next version mid-run, and target true has none: give the command of its next version with --upgrade-exec 'COMMAND'"},
		{append(run, "--faults", "upgrade"), "--faults upgrade deploys a next version mid-run, and target reference has none"},
		{[]string{"run", "--exec", "true", "--upgrade-exec", "true", "--faults", "kill", "--out", dir}, "--upgrade-exec is deployed by an upgrade fault, and --faults kill has none: add upgrade"},
		{[]string{"run", "--exec", "true", "--upgrade-state", "true", "--out", dir}, "--upgrade-state is the state command of the --upgrade-exec version, and there is none"},
		{[]string{"run", "--exec", "true", "--exec", "false", "--upgrade-exec", "true", "--out", dir}, "1 --upgrade-exec for 2 --exec: give the next version of each --exec, in the same order"},
		{[]string{"run", "--exec", "true", "--upgrade-exec", "true", "--upgrade-exec", "false", "--out", dir}, "2 --upgrade-exec for 1 --exec: give the next version of each --exec, in the same order"},
		{[]string{"run", "--exec", "true", "--exec", "false", "--upgrade-exec", "true", "--upgrade-exec", "false", "--upgrade-state", "true", "--out", dir}, "1 --upgrade-state for 2 --upgrade-exec: give the state command of each, in the same order"},
		{[]string{"replay", "--exec", "true", "--upgrade-exec", "true", "--upgrade-exec", "false", "--schedule", "upgrade@2"}, "2 --upgrade-exec for 1 --exec"},
		{append(run, "--upgrade-exec", "true"), "--upgrade-exec describes an --exec target, and there is none"},
		{[]string{"run", "--exec", "true", "--upgrade-exec", "./v2 >log", "--out", dir}, `--upgrade-exec "./v2 >log": ">log" is a shell operator`},
		{[]string{"replay", "--exec", "true", "--schedule", "kill@1,upgrade@2"}, "--schedule kill@1,upgrade@2 deploys a next version (upgrade@2), and target true has none: give the command of its next version with --upgrade-exec 'COMMAND'"},
		{[]string{"run", "--exec", "python3 app.py", "--dir", "/no/such/dir", "--out", dir}, "working directory: stat /no/such/dir: no such file or directory"},
		{[]string{"run", "--exec", "true", "--out", dir}, "the command exited without connecting to chaoskit: a harness connects to $CHAOSKIT_SOCKET with a client of the protocol (PROTOCOL.md"},
		{[]string{"replay", "--exec", "true", "--target", "reference", "--schedule", "kill@1"}, "give --target or --exec, not both"},
		// Shards.
		{append(run, "--shard", "3/2"), `--shard: shard "3/2": want I/N with 1 ≤ I ≤ N`},
		{append(run, "--shard", "0/2"), `shard "0/2"`},
		{append(run, "--shard", "1"), `shard "1"`},
		{append(run, "--shard", "a/b"), `shard "a/b"`},
		// Gates.
		{append(run, "--gate", "duplicates=0"), `--gate "duplicates=0", column 11: a single = compares nothing`},
		{append(run, "--gate", "duplicates{target=reference/x}==0"), `column 19: target "reference/x" is not in this campaign`},
		{[]string{"gate", report}, "gate needs --baseline OLD.json, --gate EXPR, or both"},
		{[]string{"gate", "--gate", "dupes==0", report}, `--gate "dupes==0", column 1: unknown metric "dupes"`},
		{[]string{"gate", "--baseline", report}, "gate takes one report"},
		{[]string{"gate", "--tolerance", "duplicates=1", report}, "--tolerance applies to a comparison with --baseline"},
		{[]string{"gate", "--baseline", report, "--tolerance", "dupes=1", report}, `unknown metric "dupes"`},
		{[]string{"gate", "--baseline", report, "--tolerance", "duplicates=lots", report}, `duplicates's amount "lots"`},
		{[]string{"gate", "--baseline", report, "--tolerance", "duplicates=NaN", report}, `duplicates's amount "NaN"`},
		{[]string{"gate", "--baseline", report, "--tolerance", "duplicates", report}, `"duplicates" is not NAME=AMOUNT`},
		// Schedules.
		{[]string{"replay", "--target", "reference", "--schedule", "powr@3"}, `--schedule: schedule "powr@3", column 1: unknown fault kind "powr"`},
		{[]string{"replay", "--target", "reference", "--schedule", "kill@9,kill@3"}, "column 13: beat 3 is not after beat 9"},
		{[]string{"replay", "--target", "reference", "--schedule", "kill"}, "has no @beat"},
		{[]string{"replay", "--target", "nope", "--schedule", "kill@3"}, `unknown target "nope"`},
		{[]string{"replay", "--target", "reference"}, "replay needs --case ID REPORT, or --target NAME (or --exec COMMAND) --seed N --schedule SCHEDULE"},
		{[]string{"replay", "--case", "x"}, "replay --case ID takes one report"},
		{[]string{"replay", "--case", "x", "--seed", "2", report}, "drop --target, --exec, --seed, --schedule, --fs-model, --restart, --restart-backoff and --grace"},
		{[]string{"replay", "--target", "reference", "--schedule", "kill@3", report}, "replay without --case takes no arguments"},
		// Files.
		{[]string{"replay", "--case", "x", missing}, "missing.json: no such file or directory"},
		{[]string{"replay", "--case", "x", garbage}, "garbage.json: not a chaoskit report"},
		{[]string{"replay", "--case", "x", noSchema}, `noschema.json: not a chaoskit report: no "schema" field`},
		{[]string{"replay", "--case", "x", v0}, `v0.json: report schema is "chaoskit.report/v0"; this chaoskit reads "` + reports.Schema + `"`},
		{[]string{"replay", "--case", "x", unknownField}, `unknown field "colour"`},
		{[]string{"replay", "--case", "x", unsealed}, "unsealed.json: truncated or altered: it does not end with the trailer"},
		{[]string{"gate", "--baseline", v1, report}, `v1.json: report schema is "chaoskit.report/v1"; this chaoskit reads "` + reports.Schema + `" (a v1 report has no trailer to verify it by: run its campaign again)`},
		{[]string{"replay", "--case", "reference/act-then-save:kill@100000", report}, `no case "reference/act-then-save:kill@100000" in `},
		{[]string{"gate", "--baseline", v0, report}, `v0.json: report schema is "chaoskit.report/v0"`},
		{[]string{"gate", "--baseline", report, garbage}, "garbage.json: not a chaoskit report"},
		{[]string{"merge", f.dir}, "merge needs --out DIR"},
		{[]string{"merge", "--out", dir}, "merge needs the report directories"},
		{[]string{"merge", "--out", dir, missing}, "missing.json: no such file"},
		{[]string{"merge", "--out", dir, v0}, "v0.json: report schema"},
		// Resuming.
		{[]string{"run", "--resume", filepath.Join(dir, "nowhere")}, "--resume " + filepath.Join(dir, "nowhere") + ": no such report directory"},
		{[]string{"run", "--resume", f.dir, "--out", dir}, "--resume " + f.dir + " writes its report there: drop --out"},
		{[]string{"run", "--resume", f.dir, "--seed", "2"}, "--seed 2 differs from the campaign journaled in " + filepath.Join(f.dir, "cases.jsonl") + " (seed 1)"},
		{[]string{"run", "--resume", f.dir, "--faults", "kill"}, "--faults kill differs from the campaign journaled in"},
		{[]string{"run", "--resume", f.dir, "--target", "reference"}, "--target reference differs"},
		{[]string{"run", "--resume", f.dir, "--mode", "random"}, "--mode random differs"},
		{[]string{"run", "--resume", f.dir, "--shard", "1/2"}, "--shard 1/2 differs"},
		{[]string{"run", "--resume", f.dir, "--cases", "3"}, "--cases 3 differs"},
	} {
		code, out, errOut := chaoskit(t, tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) || strings.Count(errOut, "\n") > 1 {
			t.Errorf("chaoskit %q: exit %d, stderr %q; want exit 2 and one line containing %q\n%s", tc.args, code, errOut, tc.want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
		t.Error("a refused run wrote its report directory")
	}
}

// sealed returns a report's JSON object, on indented lines as chaoskit writes them, with the
// trailer reports.Trailer documents.
func sealed(body string) string {
	body = strings.TrimSuffix(body, "\n}\n") + ",\n"
	return fmt.Sprintf("%s  \"trailer\": {\"cases\": 0, \"sha256\": \"%x\"}\n}\n", body, sha256.Sum256([]byte(body)))
}

// Resuming with the same parameters, all of them or none, is fine.
func TestResumeWithSameParameters(t *testing.T) {
	f := campaignDir(t, actThenSave...)
	dir := t.TempDir()
	journal, err := os.ReadFile(filepath.Join(f.dir, "cases.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "cases.jsonl"), journal, 0o644)
	for _, args := range [][]string{
		{"run", "--resume", dir},
		append(append([]string{"run", "--resume", dir, "--out", dir, "--seed", "1"}, actThenSave...), "--faults", "kill,power,kill"),
	} {
		if code, _, errOut := chaoskit(t, args...); code != exitFail {
			t.Fatalf("%q: exit %d: %s", args, code, errOut)
		}
		sameReport(t, filepath.Join(f.dir, "report.json"), filepath.Join(dir, "report.json"))
	}
}

// A report a test runner wrote (go test -chaoskit.out) names targets that live in the tests:
// replay --case says so, and prints the case's own replay command instead of "unknown target".
func TestReplayOfATestRunnersCaseNamesItsCommand(t *testing.T) {
	s := faults.MustParseSchedule("power@11")
	repro := "go test ./fanout -run '^TestFanOut$' -chaoskit.schedule='power@11'"
	rep := &reports.Report{Schema: reports.Schema, Seed: 1, Options: reports.Options{Targets: []string{"TestFanOut"}, Faults: []string{"power"}},
		Cases: []reports.Case{{ID: "TestFanOut:power@11", Target: "TestFanOut", Schedule: s, Verdict: oracle.Fail, Repro: repro}}}
	dir := filepath.Join(t.TempDir(), "TestFanOut")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := reports.WriteDir(afero.NewOsFs(), dir, rep, []string{"json"}); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := chaoskit(t, "replay", "--case", "TestFanOut:power@11", dir)
	if want := "TestFanOut is a target of the test that wrote " + dir + ", not one chaoskit can run; replay the case with: " + repro; code != exitUsage || !strings.Contains(errOut, want) {
		t.Fatalf("exit %d, stderr %q; want exit 2 and %q", code, errOut, want)
	}
}
