package process_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/internal/needs"
)

// upgradeApp is examples/upgrade: a fulfilment job that ships three parcels over REST. Version 1
// checkpoints {"step": N}; version 2 renames the field to "cursor", migrating version 1's
// checkpoint unless told not to, and with --grams sends the weights in grams under the same keys.
const upgradeApp = "examples/upgrade/app.py"

// upgradeFlags are the flags that serve examples/upgrade its carrier as a REST double and map
// chaoskit's variables onto the names the job reads, as its README gives them.
var upgradeFlags = []string{
	"--http", "POST /v1/shipments=idempotent-by-header:Idempotency-Key",
	"--env", "SHIPPING_API_URL=${CHAOSKIT_HTTP_URL}",
	"--env", "STATE_DIR=${CHAOSKIT_STATE_DIR}",
}

// upgradeRun runs chaoskit run on examples/upgrade, version 1 deployed as the version 2 whose
// extra flags are v2 (with --upgrade-exec) under the given run flags, writing the report to out;
// it returns the output, the exit status and the report's cases with their metrics.
func upgradeRun(sh *shell, v2 []string, out string, flags ...string) (string, int, []upgradeCase) {
	sh.t.Helper()
	words := []string{"chaoskit", "run", "--name", "deploy", "--out", out, "--format", "text,json",
		"--exec", q(shellJoin(pythonArgv(sh.t, upgradeApp))),
		"--upgrade-exec", q(shellJoin(pythonArgv(sh.t, upgradeApp, append([]string{"--version", "2"}, v2...)...))),
		"--state", q(shellJoin(pythonArgv(sh.t, upgradeApp, "--dump-state")))}
	for _, f := range append(slices.Clone(upgradeFlags), flags...) {
		words = append(words, q(f))
	}
	text, code := sh.run(strings.Join(words, " "))
	b, err := os.ReadFile(filepath.Join(sh.work, out, "report.json"))
	var r struct{ Cases []upgradeCase }
	if err == nil {
		err = json.Unmarshal(b, &r)
	}
	if err != nil {
		sh.t.Fatalf("chaoskit run exited %d and %v:\n%s", code, err, text)
	}
	return text, code, r.Cases
}

// q quotes a word for the shell.
func q(w string) string { return campaign.ShellQuote(w) }

// upgradeCase is what the tests read of an upgrade case in report.json.
type upgradeCase struct {
	reportCase
	Stranded   bool `json:"stranded"`
	Duplicated bool `json:"duplicated"`
	Replanned  bool `json:"replanned"`
	// Found shadows reportCase.Violations, with each violation's detail.
	Found []struct {
		Property string `json:"property"`
		Detail   string `json:"detail"`
	} `json:"violations"`
}

// detail returns the detail of c's violation of property, and whether c violates it.
func (c upgradeCase) detail(property string) (string, bool) {
	for _, v := range c.Found {
		if v.Property == property {
			return v.Detail, true
		}
	}
	return "", false
}

// A deploy in the middle of the run (upgrade@3: the golden run makes 6 beats, a shipment's
// request and its application each, and the first parcel's checkpoint is saved by beat 2) of a
// version 2 that renamed the checkpoint's field:
// with a migration it passes; without one it cannot read the checkpoint, fails each time it
// starts, and the case fails, marked stranded, with a replay command that gives the
// --upgrade-exec and reproduces the failure. The summary counts it, and a gate on it fails.
func TestUpgradeExampleRenamedField(t *testing.T) {
	sh := newShell(t)
	_, code, cases := upgradeRun(sh, nil, "migrated", "--faults", "upgrade", "--only", "deploy:upgrade@3")
	if code != 0 || len(cases) != 1 || cases[0].Verdict != "pass" || cases[0].Stranded {
		t.Errorf("with a migration: exit %d, cases %+v; want exit 0 and one case passing", code, cases)
	}

	text, code, cases := upgradeRun(sh, []string{"--no-migration"}, "stranded", "--faults", "upgrade", "--only", "deploy:upgrade@3", "--gate", "stranded==0")
	if code != 1 || len(cases) != 1 || cases[0].Verdict != "fail" || !cases[0].Stranded || cases[0].Duplicated || cases[0].Replanned {
		t.Fatalf("without a migration: exit %d, cases %+v; want exit 1 and one case failing, stranded only\n%s", code, cases, text)
	}
	for _, want := range []string{"deploys: deploy: 1 of 1 upgrade case stranded, 0 duplicated, 0 replanned", "stranded is 1, want == 0"} {
		if !strings.Contains(text, want) {
			t.Errorf("the summary does not say %q:\n%s", want, text)
		}
	}
	repro := cases[0].Repro
	if !strings.Contains(repro, "--upgrade-exec ") || !strings.Contains(repro, "--no-migration") || !strings.Contains(text, repro) {
		t.Fatalf("the replay command %q does not give the next version, or is not printed:\n%s", repro, text)
	}
	out, code := sh.run(repro)
	if code != 1 || !strings.Contains(out, "KeyError: 'cursor'") {
		t.Errorf("%s: exit %d; want 1, the failure of version 2 reading version 1's checkpoint:\n%s", repro, code, out)
	}
	sh.clean()
}

// A deploy between a shipment's application and its checkpoint (upgrade@1: the carrier applied
// the first parcel's shipment, and version 1 was stopped before its answer) of a version 2 that
// sends the weight in grams under the same key. Sending version 1's shipment in flight so too
// (--no-in-flight), the carrier refuses the key used again with other parameters (422, as
// Stripe does), version 2 fails each time it starts, and the case fails no-key-reuse, saying
// which key version 1 used with which parameters and version 2 with which, marked duplicated
// (not stranded: version 2 read the checkpoint). Sending it as version 1 did, it passes: the
// shipment in kilograms is the shipment version 2's golden run sends in grams, under its key.
func TestUpgradeExampleChangedArgs(t *testing.T) {
	sh := newShell(t)
	text, code, cases := upgradeRun(sh, []string{"--grams"}, "kept", "--faults", "upgrade", "--only", "deploy:upgrade@1")
	if code != 0 || len(cases) != 1 || cases[0].Verdict != "pass" {
		t.Errorf("finishing the shipment in flight as version 1 sent it: exit %d, cases %+v; want exit 0 and one case passing\n%s", code, cases, text)
	}

	text, code, cases = upgradeRun(sh, []string{"--grams", "--no-in-flight"}, "reused", "--faults", "upgrade", "--only", "deploy:upgrade@1")
	if code != 1 || len(cases) != 1 || cases[0].Verdict != "fail" || !cases[0].Duplicated || cases[0].Stranded || cases[0].Replanned {
		t.Fatalf("exit %d, cases %+v; want exit 1 and one case failing, duplicated only\n%s", code, cases, text)
	}
	if _, phantom := cases[0].detail("no-phantom-effects"); phantom {
		t.Errorf("version 1's shipment in kilograms is a phantom effect; want it the same effect as version 2's in grams, under one key")
	}
	reuse, ok := cases[0].detail("no-key-reuse")
	want := `POST /v1/shipments key "ORD-1042-books", first used with {"body":{"order":"ORD-1042","parcel":"books","weight_kg":1.2}} (beat 0, process 0), ` +
		`was used again with {"body":{"order":"ORD-1042","parcel":"books","weight_g":1200}} (beat 2, process 1): the tool refused it`
	if !ok || !strings.HasPrefix(reuse, want) {
		t.Errorf("no-key-reuse: %q (violated %v); want it to begin %q", reuse, ok, want)
	}
	if end, _ := cases[0].detail("completes"); !strings.Contains(end, "422") || !strings.Contains(end, "Keys for idempotent requests can only be used with the same parameters") {
		t.Errorf("completes: %q; want version 2's failure on the carrier's 422", end)
	}
	sh.clean()
}

// pytest takes the next version too (check()'s upgrade option): the pytest test of
// examples/upgrade fails at upgrade@3 without the migration, its chaoskit replay command giving
// --upgrade-exec. (node:test's upgrade option: TestUpgradeUnderNodeTest, a campaign test.)
func TestUpgradeUnderPytest(t *testing.T) {
	pythonExe(t)
	needs.Command(t, "pytest", installPytest)
	dir, _ := filepath.Abs("examples/upgrade")
	r := newProject(t, dir, nil)
	out := r.want("NO_MIGRATION=1 pytest -q -p no:cacheprovider -k 'upgrade@3'", 1, "1 failed", "KeyError: 'cursor'")
	if _, replay := replays(t, out); !strings.Contains(replay, "--upgrade-exec 'python3 app.py --version 2 --no-migration'") {
		t.Errorf("the chaoskit replay command does not deploy the next version: %s", replay)
	}
}
