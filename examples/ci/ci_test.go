// Package ci_test checks the CI examples: that their commands and run-local.sh's agree
// (TestExamplesMatchScript), that run-local.sh runs them end to end, shards merging into the
// unsharded report and the gate deciding as it should (TestRunLocal), that actionlint passes
// the chaoskit action and the example workflow (TestActionlint), that shellcheck passes the
// scripts (TestShellcheck), and that the Kubernetes guide learns a Job's outcome as soon as it
// is decided (TestWaitJob).
//
// The examples are YAML, read here line by line as they are written (this module parses no
// YAML): a test that cannot find what it looks for says which file and what.
package ci_test

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/internal/needs"
	"github.com/chaoskit/chaoskit/internal/testbin"
	"github.com/chaoskit/chaoskit/reports"
)

const (
	root       = "../.."
	script     = "run-local.sh"
	workflow   = "github/chaoskit.yml"
	gitlab     = "gitlab/.gitlab-ci.yml"
	k8sConfig  = "k8s/campaign.yaml"
	k8sShards  = "k8s/shards.yaml"
	k8sMerge   = "k8s/merge-and-gate.yaml"
	actionDir  = root + "/.github/actions/chaoskit"
	actionFile = actionDir + "/action.yml"
	actionUses = "chaoskit/chaoskit/.github/actions/chaoskit@"

	// actionlintModule is actionlint at a version that builds with Go 1.26 and GOTOOLCHAIN=local.
	actionlintModule = "github.com/rhysd/actionlint/cmd/actionlint@v1.7.12"
)

// campaignVars are the variables that make the campaign, the same in every example.
var campaignVars = []string{"TARGET", "FAULTS", "MODE", "CASES", "SEED", "GATE"}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimRight(string(b), "\n"), "\n")
}

// indent returns the indentation of a line, and -1 for a blank line or a comment.
func indent(line string) int {
	trimmed := strings.TrimLeft(line, " ")
	if trimmed == "" || strings.HasPrefix(trimmed, "#") {
		return -1
	}
	return len(line) - len(trimmed)
}

// block returns the lines under the first line equal to header: those indented deeper than it,
// blank lines and comments included.
func block(t *testing.T, file string, lines []string, header string) []string {
	t.Helper()
	for i, l := range lines {
		if strings.TrimRight(l, " ") != header {
			continue
		}
		var out []string
		for _, m := range lines[i+1:] {
			if n := indent(m); n >= 0 && n <= indent(l) {
				break
			}
			out = append(out, m)
		}
		return out
	}
	t.Fatalf("%s: no line %q", file, header)
	return nil
}

// keyValues returns the "key: value" lines of a block at its outermost indentation, values
// without their trailing comment and quotes.
func keyValues(t *testing.T, file string, lines []string) map[string]string {
	t.Helper()
	least := -1
	for _, l := range lines {
		if n := indent(l); n >= 0 && (least < 0 || n < least) {
			least = n
		}
	}
	kv := map[string]string{}
	for _, l := range lines {
		if indent(l) != least {
			continue
		}
		k, v, ok := strings.Cut(strings.TrimSpace(l), ":")
		if !ok {
			t.Fatalf("%s: %q is not key: value", file, l)
		}
		v, _, _ = strings.Cut(v, " #")
		v = strings.TrimSpace(v)
		if u, err := strconv.Unquote(v); err == nil {
			v = u
		} else if len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' {
			v = v[1 : len(v)-1]
		}
		kv[k] = v
	}
	return kv
}

// commands returns the shell lines of a file that start with prefix, trimmed, a YAML list's
// "- " taken off.
func commands(lines []string, prefix string) []string {
	var out []string
	for _, l := range lines {
		l = strings.TrimPrefix(strings.TrimSpace(l), "- ")
		if strings.HasPrefix(l, prefix) && !strings.HasSuffix(l, "# not in the examples") {
			out = append(out, l)
		}
	}
	return out
}

// scriptCampaign returns the campaign run-local.sh sets.
func scriptCampaign(t *testing.T, lines []string) map[string]string {
	t.Helper()
	i := slices.Index(lines, "# The campaign, as every example sets it.")
	if i < 0 {
		t.Fatalf("%s: no line # The campaign, as every example sets it.", script)
	}
	vars := map[string]string{}
	for _, l := range lines[i+1:] {
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			break
		}
		vars[k] = v
	}
	return vars
}

// sameSet reports, as one error per line, the lines one of a and b has and the other has not.
func sameSet(aName string, a []string, bName string, b []string) error {
	var errs []error
	for _, l := range a {
		if !slices.Contains(b, l) {
			errs = append(errs, fmt.Errorf("%s has, and %s has not: %s", aName, bName, l))
		}
	}
	for _, l := range b {
		if !slices.Contains(a, l) {
			errs = append(errs, fmt.Errorf("%s has, and %s has not: %s", bName, aName, l))
		}
	}
	return errors.Join(errs...)
}

func checkCampaign(t *testing.T, file string, got, want map[string]string, names []string) {
	t.Helper()
	for _, k := range names {
		if got[k] != want[k] {
			t.Errorf("%s: %s is %q, and %q in %s", file, k, got[k], want[k], script)
		}
	}
}

// checkCommands fails unless an example's chaoskit commands are the script's, and the line that
// numbers its shard is one the script runs.
func checkCommands(t *testing.T, file string, lines, chaoskit, shardLines []string) {
	t.Helper()
	if err := sameSet(file, commands(lines, "chaoskit "), script, chaoskit); err != nil {
		t.Error(err)
	}
	numbering := commands(lines, "SHARD=")
	if len(numbering) == 0 {
		t.Errorf("%s: no line SHARD=… numbers the shard", file)
	}
	for _, l := range numbering {
		if !slices.Contains(shardLines, l) {
			t.Errorf("%s numbers its shard with %q, which %s does not", file, l, script)
		}
	}
}

// githubSteps returns, per job, the inputs run-local.sh gives the action's step (github_step):
// INPUT_NAME → value, as written between the double quotes.
func githubSteps(t *testing.T, lines []string) map[string]map[string]string {
	t.Helper()
	steps := map[string]map[string]string{}
	input := regexp.MustCompile(`^\s*(INPUT_[A-Z_]+)="([^"]*)"`)
	for i, l := range lines {
		f := strings.Fields(l)
		if len(f) < 2 || f[0] != "github_step" {
			continue
		}
		job, _, _ := strings.Cut(strings.Trim(f[1], `"`), "-")
		inputs := map[string]string{}
		for _, m := range lines[i+1:] {
			s := input.FindStringSubmatch(m)
			if s == nil {
				break
			}
			inputs[s[1]] = s[2]
		}
		steps[job] = inputs
	}
	if len(steps) == 0 {
		t.Fatalf("%s: no github_step", script)
	}
	return steps
}

// workflowSteps returns, per job, the with: of the example workflow's step that uses the action,
// as INPUT_NAME → value with the expressions written as run-local.sh's variables. version and
// artifact-name are left out: they are for the steps run-local.sh does its own way (it installs
// no chaoskit, and copies the report directories where the pipeline uploads them).
func workflowSteps(t *testing.T, lines []string) map[string]map[string]string {
	t.Helper()
	exprs := strings.NewReplacer(
		"${{ matrix.shard }}", "$SHARD",
		"${{ strategy.job-total }}", "$SHARDS",
		"${{ steps.baseline.outputs.path }}", "$BASELINE",
	)
	envExpr := regexp.MustCompile(`\$\{\{ env\.([A-Z_]+) \}\}`)
	jobName := regexp.MustCompile(`^  ([a-z][a-z0-9_-]*):$`)
	steps := map[string]map[string]string{}
	job := ""
	for i, l := range lines {
		if m := jobName.FindStringSubmatch(l); m != nil {
			job = m[1]
		}
		at := strings.Index(l, "uses: "+actionUses)
		if at < 0 {
			continue
		}
		var with []string
		for j := i + 1; j < len(lines); j++ {
			if n := indent(lines[j]); n >= 0 && n < at || strings.HasPrefix(strings.TrimSpace(lines[j]), "- ") {
				break
			}
			if strings.TrimSpace(lines[j]) == "with:" && indent(lines[j]) == at {
				with = block(t, workflow, lines[j:], lines[j])
				break
			}
		}
		inputs := map[string]string{}
		for k, v := range keyValues(t, workflow, with) {
			if k == "version" || k == "artifact-name" {
				continue
			}
			v = envExpr.ReplaceAllString(exprs.Replace(v), "$$$1")
			inputs["INPUT_"+strings.ToUpper(strings.ReplaceAll(k, "-", "_"))] = v
		}
		if _, dup := steps[job]; dup {
			t.Fatalf("%s: job %s uses the action twice", workflow, job)
		}
		steps[job] = inputs
	}
	return steps
}

// TestExamplesMatchScript fails when the commands of the examples and those run-local.sh runs
// drift apart, or the campaign they set does, or the action's inputs and campaign.sh do.
func TestExamplesMatchScript(t *testing.T) {
	sh := readLines(t, script)
	want := scriptCampaign(t, sh)
	shards, err := strconv.Atoi(want["SHARDS"])
	if err != nil || shards < 2 {
		t.Fatalf("%s: SHARDS=%q, want a number of shards > 1", script, want["SHARDS"])
	}
	chaoskit := commands(sh, "chaoskit ")
	shardLines := commands(sh, "SHARD=")
	if len(chaoskit) != 3 {
		t.Fatalf("%s: %d chaoskit commands, want the shard's, the merge's and the gate's:\n%s", script, len(chaoskit), strings.Join(chaoskit, "\n"))
	}

	t.Run("gitlab", func(t *testing.T) {
		yml := readLines(t, gitlab)
		vars := keyValues(t, gitlab, block(t, gitlab, yml, "variables:"))
		checkCampaign(t, gitlab, vars, want, campaignVars)
		if ok, _ := filepath.Match("chaoskit-*", vars["REPORTS"]); !ok {
			t.Errorf("%s: REPORTS is %q, which the artifacts' paths (chaoskit-*/) do not keep", gitlab, vars["REPORTS"])
		}
		if got := keyValues(t, gitlab, block(t, gitlab, yml, "chaoskit-shard:"))["parallel"]; got != want["SHARDS"] {
			t.Errorf("%s: parallel: %s, and SHARDS=%s in %s", gitlab, got, want["SHARDS"], script)
		}
		checkCommands(t, gitlab, yml, chaoskit, shardLines)
	})

	t.Run("k8s", func(t *testing.T) {
		config := readLines(t, k8sConfig)
		data := keyValues(t, k8sConfig, block(t, k8sConfig, config, "data:"))
		checkCampaign(t, k8sConfig, data, want, append(campaignVars, "SHARDS"))
		job := readLines(t, k8sShards)
		spec := keyValues(t, k8sShards, block(t, k8sShards, job, "spec:"))
		if spec["completionMode"] != "Indexed" || spec["completions"] != want["SHARDS"] {
			t.Errorf("%s: completionMode %s, completions %s; want Indexed, and SHARDS=%s as in %s", k8sShards, spec["completionMode"], spec["completions"], want["SHARDS"], script)
		}
		checkCommands(t, "examples/ci/k8s", append(job, readLines(t, k8sMerge)...), chaoskit, shardLines)
	})

	t.Run("github", func(t *testing.T) {
		yml := readLines(t, workflow)
		checkCampaign(t, workflow, keyValues(t, workflow, block(t, workflow, yml, "env:")), want, campaignVars)
		matrix := keyValues(t, workflow, block(t, workflow, yml, "      matrix:"))["shard"]
		var list []string
		for i := 1; i <= shards; i++ {
			list = append(list, strconv.Itoa(i))
		}
		if matrix != "["+strings.Join(list, ", ")+"]" {
			t.Errorf("%s: matrix shard: %s, want [1 … SHARDS=%d] as in %s", workflow, matrix, shards, script)
		}
		got, local := workflowSteps(t, yml), githubSteps(t, sh)
		if len(got) != len(local) {
			t.Errorf("%s uses the action in jobs %v, and %s runs it as jobs %v", workflow, slices.Sorted(maps.Keys(got)), script, slices.Sorted(maps.Keys(local)))
		}
		for job, inputs := range got {
			var a, b []string
			for k, v := range inputs {
				a = append(a, k+"="+v)
			}
			for k, v := range local[job] {
				b = append(b, k+"="+v)
			}
			if err := sameSet(workflow+" job "+job, a, script+" github_step "+job, b); err != nil {
				t.Error(err)
			}
		}
	})

	t.Run("action", func(t *testing.T) {
		yml := readLines(t, actionFile)
		var inputs []string
		for _, l := range block(t, actionFile, yml, "inputs:") {
			if indent(l) == 2 {
				inputs = append(inputs, strings.TrimSuffix(strings.TrimSpace(l), ":"))
			}
		}
		env := keyValues(t, actionFile, block(t, actionFile, block(t, actionFile, yml, "    - name: Run chaoskit"), "      env:"))
		var passed []string
		for k, v := range env {
			name := strings.TrimPrefix(k, "INPUT_")
			passed = append(passed, name)
			if want := "${{ inputs." + strings.ToLower(strings.ReplaceAll(name, "_", "-")) + " }}"; v != want {
				t.Errorf("%s: %s: %s, want %s", actionFile, k, v, want)
			}
		}
		for _, in := range inputs {
			name := strings.ToUpper(strings.ReplaceAll(in, "-", "_"))
			if !slices.Contains([]string{"VERSION", "GO_VERSION", "ARTIFACT_NAME"}, name) && !slices.Contains(passed, name) {
				t.Errorf("%s: input %s does not reach campaign.sh (no INPUT_%s in the step's env)", actionFile, in, name)
			}
		}
		src, err := os.ReadFile(actionDir + "/campaign.sh")
		if err != nil {
			t.Fatal(err)
		}
		var used []string
		for _, m := range regexp.MustCompile(`INPUT_([A-Z_]+)`).FindAllStringSubmatch(string(src), -1) {
			if !slices.Contains(used, m[1]) {
				used = append(used, m[1])
			}
		}
		if err := sameSet(actionFile+" (the step's env)", passed, "campaign.sh", used); err != nil {
			t.Error(err)
		}
		for job, inputs := range githubSteps(t, sh) {
			for k := range inputs {
				if name := strings.TrimPrefix(k, "INPUT_"); !slices.Contains(used, name) {
					t.Errorf("%s github_step %s: %s is no input of the action", script, job, k)
				}
			}
		}
	})
}

// buildChaoskit returns chaoskit built from this checkout, once for every test package.
func buildChaoskit(t *testing.T) string { return testbin.Chaoskit(t) }

// runLocal runs run-local.sh and returns its output, its exit code and its report directory.
func runLocal(t *testing.T, chaoskit, baseline string, args ...string) (string, int, string) {
	t.Helper()
	reports := t.TempDir()
	cmd := exec.Command("bash", append([]string{script}, args...)...)
	cmd.Env = append(os.Environ(), "CHAOSKIT="+chaoskit, "REPORTS="+reports, "BASELINE="+baseline)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code, reports
}

// comparable returns a report.json less what differs by design between the same campaign run
// sharded and not: the fields ending in _ms, the trailer (whose checksum covers them) and the
// provenance (reports.Comparable).
func comparable(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"provenance"`)) || !bytes.Contains(b, []byte(`"trailer"`)) {
		t.Errorf("%s has no provenance or trailer to leave out: the comparison would prove little", path)
	}
	out, err := reports.Comparable(b, "provenance")
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return out
}

// TestRunLocal runs the examples' pipelines with run-local.sh: on the reference agent the gate
// holds (first without a baseline, as on a default branch's first run, then against that run's
// report); on a variant with a bug it fails; against a baseline of another campaign it refuses.
// Every time, the merged report is the unsharded run's, the _ms fields, provenance and trailer
// aside.
func TestRunLocal(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("run-local.sh needs bash, which is not on PATH")
	}
	chaoskit := buildChaoskit(t)
	merged := map[string]string{
		"github": "github/gate/chaoskit-report",
		"gitlab": "merged",
		"k8s":    "merged",
	}
	run := func(t *testing.T, baseline, pipeline, target string, want int, wantOut string) string {
		t.Helper()
		out, code, reports := runLocal(t, chaoskit, baseline, pipeline, target)
		if code != want || !strings.Contains(out, wantOut) {
			t.Fatalf("run-local.sh %s %s (BASELINE=%q) exited %d, want %d with %q in its output:\n%s", pipeline, target, baseline, code, want, wantOut, out)
		}
		report := filepath.Join(reports, merged[pipeline], "report.json")
		if got, unsharded := comparable(t, report), comparable(t, filepath.Join(reports, "unsharded", "report.json")); !bytes.Equal(got, unsharded) {
			t.Errorf("the merged report %s is not the unsharded run's, bar _ms and provenance", report)
		}
		return report
	}

	reference := run(t, "", "gitlab", "reference", 0, "gate held")
	baseline := filepath.Join(t.TempDir(), "report.json")
	if b, err := os.ReadFile(reference); err != nil {
		t.Fatal(err)
	} else if err := os.WriteFile(baseline, b, 0o644); err != nil {
		t.Fatal(err)
	}

	t.Run("github reference against the baseline", func(t *testing.T) {
		t.Parallel()
		report := run(t, baseline, "github", "reference", 0, "no regression against")
		summary, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(report)), "step-summary.md"))
		if err != nil || !bytes.Contains(summary, []byte("# chaoskit report")) || !bytes.Contains(summary, []byte("## Gate (exit 0)")) {
			t.Errorf("the gate job's step summary lacks summary.md or the gate's verdict (%v):\n%s", err, summary)
		}
	})
	t.Run("github variant", func(t *testing.T) {
		t.Parallel()
		run(t, "", "github", "reference/act-then-save", 1, "gate failed: reference/act-then-save: duplicates")
	})
	t.Run("k8s variant", func(t *testing.T) {
		t.Parallel()
		run(t, "", "k8s", "reference/act-then-save", 1, "gate failed: reference/act-then-save: duplicates")
	})
	t.Run("gitlab variant against the reference's baseline", func(t *testing.T) {
		t.Parallel()
		run(t, baseline, "gitlab", "reference/act-then-save", 2, "is a report of another campaign")
	})
}

// TestActionlint runs actionlint, fetched through the Go module proxy, on the example workflow
// (its uses of the action pointed at this checkout's, so that actionlint checks the inputs it
// gives against action.yml) and on the action's steps, made into a workflow that actionlint
// reads (it lints no action.yml by itself). With shellcheck on PATH it checks the run: scripts.
func TestActionlint(t *testing.T) {
	bin := t.TempDir()
	install := exec.Command("go", "install", actionlintModule)
	install.Env = append(os.Environ(), "GOBIN="+bin, "GOTOOLCHAIN=local", "GOFLAGS=")
	if out, err := install.CombinedOutput(); err != nil {
		first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
		msg := fmt.Sprintf("go install %s failed (no module proxy?): %s", actionlintModule, first)
		needs.Missing(t, msg)
	}
	if _, err := exec.LookPath("shellcheck"); err != nil {
		t.Log("shellcheck is not on PATH: actionlint checks the run: scripts without it")
	}

	project := t.TempDir()
	write := func(path string, b []byte) {
		t.Helper()
		path = filepath.Join(project, path)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".git/HEAD", []byte("ref: refs/heads/main\n")) // actionlint finds the project by it
	for _, f := range []string{"action.yml", "campaign.sh"} {
		b, err := os.ReadFile(filepath.Join(actionDir, f))
		if err != nil {
			t.Fatal(err)
		}
		write(".github/actions/chaoskit/"+f, b)
	}
	example, err := os.ReadFile(workflow)
	if err != nil {
		t.Fatal(err)
	}
	local := regexp.MustCompile(regexp.QuoteMeta(actionUses)+`\S+`).ReplaceAll(example, []byte("./.github/actions/chaoskit"))
	if bytes.Equal(local, example) {
		t.Fatalf("%s does not use %s…", workflow, actionUses)
	}
	write(".github/workflows/chaoskit.yml", local)
	write(".github/workflows/action-steps.yml", actionWorkflow(t, readLines(t, actionFile)))

	lint := exec.Command(filepath.Join(bin, "actionlint"), "-no-color")
	lint.Dir = project
	if out, err := lint.CombinedOutput(); err != nil {
		t.Errorf("actionlint: %v\n%s\n(.github/workflows/action-steps.yml is action.yml's steps as a workflow:\n%s)", err, out, actionWorkflow(t, readLines(t, actionFile)))
	}
}

// actionWorkflow returns a composite action's steps as a reusable workflow's job, its inputs as
// the workflow's and its outputs as the job's, for actionlint to check.
func actionWorkflow(t *testing.T, action []string) []byte {
	t.Helper()
	var w strings.Builder
	w.WriteString("name: the chaoskit action's steps\non:\n  workflow_call:\n    inputs:\n")
	for _, l := range block(t, actionFile, action, "inputs:") {
		switch indent(l) {
		case 2:
			fmt.Fprintf(&w, "    %s\n        type: string\n", l)
		case 4:
			fmt.Fprintf(&w, "    %s\n", l)
		}
	}
	w.WriteString("jobs:\n  action:\n    runs-on: ubuntu-latest\n    outputs:\n")
	outputs := block(t, actionFile, action, "outputs:")
	for i, l := range outputs {
		if indent(l) == 2 {
			value := keyValues(t, actionFile, block(t, actionFile, outputs[i:], l))["value"]
			fmt.Fprintf(&w, "      %s %s\n", strings.TrimSpace(l), value)
		}
	}
	w.WriteString("    steps:\n")
	for _, l := range block(t, actionFile, block(t, actionFile, action, "runs:"), "  steps:") {
		if l != "" {
			l = "  " + l
		}
		w.WriteString(l + "\n")
	}
	return []byte(w.String())
}

// TestShellcheck runs shellcheck (needed under CI=true) on the scripts: run-local.sh, the
// Kubernetes guide's wait-job.sh and the action's campaign.sh (actionlint checks the run:
// scripts of the YAML files with it).
func TestShellcheck(t *testing.T) {
	shellcheck := needs.Command(t, "shellcheck", "apt-get install shellcheck")
	if out, err := exec.Command(shellcheck, script, k8sWait, actionDir+"/campaign.sh").CombinedOutput(); err != nil {
		t.Errorf("shellcheck: %v\n%s", err, out)
	}
}

// k8sWait is the script the Kubernetes guide waits for a Job with.
const k8sWait = "k8s/wait-job.sh"

// wait-job.sh returns as soon as the Job it waits for has completed (0) or failed (1), at the
// poll that first sees it, and 2 when the timeout passes first or kubectl cannot read the Job:
// run against a kubectl that answers each poll with the conditions a Job holds then.
func TestWaitJob(t *testing.T) {
	bash := needs.Command(t, "bash", "apt-get install bash")
	script, err := filepath.Abs(k8sWait)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		answers []string // the conditions held at each poll; past the last, none
		timeout string
		code    int
		polls   int
		out     string
	}{
		{"completes", []string{"", "", "SuccessCriteriaMet Complete "}, "15m", 0, 3, "job/j completed"},
		{"fails", []string{"", "FailureTarget ", "FailureTarget Failed "}, "2h", 1, 3, "job/j failed"},
		{"suspended, then fails", []string{"Suspended ", "Failed "}, "900", 1, 2, "job/j failed"},
		{"times out", nil, "0s", 2, 1, "job/j has not finished after 0s"},
		{"cannot read it", []string{"ERROR"}, "15m", 2, 1, "cannot read job/j"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			answers := strings.Join(tc.answers, "\n") + "\n"
			if err := os.WriteFile(filepath.Join(dir, "answers"), []byte(answers), 0o644); err != nil {
				t.Fatal(err)
			}
			kubectl := `#!/bin/sh
n=$(($(cat "$FAKE/polls" 2>/dev/null || echo 0) + 1))
echo "$n" >"$FAKE/polls"
[ "$1 $2 $3 $4" = "get job/j -o jsonpath={range .status.conditions[?(@.status==\"True\")]}{.type}{\" \"}{end}" ] || { echo "kubectl: unexpected $*" >&2; exit 9; }
answer=$(sed -n "${n}p" "$FAKE/answers")
[ "$answer" = ERROR ] && { echo "Error from server (NotFound)" >&2; exit 1; }
printf %s "$answer"
`
			if err := os.WriteFile(filepath.Join(dir, "kubectl"), []byte(kubectl), 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bash, script, "j", tc.timeout)
			cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"), "FAKE="+dir, "POLL=0")
			out, err := cmd.CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			polls, _ := os.ReadFile(filepath.Join(dir, "polls"))
			if code != tc.code || strings.TrimSpace(string(polls)) != strconv.Itoa(tc.polls) || !strings.Contains(string(out), tc.out) {
				t.Errorf("exit %d after %s polls, want %d after %d, with %q:\n%s", code, bytes.TrimSpace(polls), tc.code, tc.polls, tc.out, out)
			}
		})
	}
}
