package reports

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/oracle"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// deployReport is the report of a campaign of kill and upgrade faults over two targets: agent,
// given a next version, whose upgrade cases end stranded, duplicated, replanned, both of the
// first two, or well; and legacy, given none, which has no upgrade case.
func deployReport(t testing.TB) *Report {
	t.Helper()
	r := &Report{Schema: Schema, Seed: 9, Options: Options{Targets: []string{"agent", "legacy"}, Mode: "exhaustive", Faults: []string{"kill", "upgrade"}}}
	add := func(target, schedule string, m oracle.Metrics, vs ...oracle.Violation) {
		c := Case{Target: target, ID: target + ":" + schedule, Schedule: faults.MustParseSchedule(schedule), Verdict: oracle.Pass,
			Violations: vs, Metrics: m, Repro: "chaoskit replay --case '" + target + ":" + schedule + "'"}
		c.Restarts, c.GoldenBeats, c.Beats = 1, 8, 10
		if len(vs) > 0 {
			c.Verdict = oracle.Fail
		}
		r.Cases = append(r.Cases, c)
	}
	add("agent", "kill@1", oracle.Metrics{WorkLostBeats: 1})
	add("agent", "upgrade@1", oracle.Metrics{Stranded: true},
		oracle.Violation{Property: oracle.Completes, Detail: "the last process failed: KeyError: 'cart'"})
	add("agent", "upgrade@2", oracle.Metrics{Duplicated: true, Duplicates: 1},
		oracle.Violation{Property: oracle.NoDuplicateEffects, Detail: "charge key \"order-1\" applied 2× (golden 1×)"})
	add("agent", "upgrade@3", oracle.Metrics{Replanned: true},
		oracle.Violation{Property: oracle.SameResult, Detail: "the result differs from the golden run's"})
	add("agent", "upgrade@4,kill@6", oracle.Metrics{Stranded: true, Duplicated: true, Duplicates: 2, WorkLostBeats: 6},
		oracle.Violation{Property: oracle.NoDuplicateEffects, Detail: "charge key \"order-1\" applied 3× (golden 1×)"},
		oracle.Violation{Property: oracle.BoundedWorkLost, Detail: "process 2 started over"})
	add("agent", "upgrade@5", oracle.Metrics{})
	add("legacy", "kill@1", oracle.Metrics{WorkLostBeats: 2})
	if err := r.Summarize(map[string]int{"agent": 8, "legacy": 8}); err != nil {
		t.Fatal(err)
	}
	return r
}

// goldenFile compares got with the file testdata/name, or rewrites it under -update.
func goldenFile(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./reports -run %s -update writes it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("the output differs from %s (go test ./reports -run %s -update rewrites it, to review with git diff):\n%s", path, t.Name(), got)
	}
}

// A report with upgrade cases counts, in both tables, those marked stranded, duplicated and
// replanned, and says each failing upgrade case's marks in words: agent's 5 upgrade cases hold 2
// stranded (upgrade@1, upgrade@4,kill@6), 2 duplicated (upgrade@2, upgrade@4,kill@6) and 1
// replanned (upgrade@3); its kill row counts the one upgrade case with a kill too.
func TestMarkdownDeploys(t *testing.T) {
	md := renderMarkdown(t, deployReport(t))
	for _, want := range []string{
		"| target | cases | passed | failed | unknown | detected | duplicates | lost effects | phantom effects | state mismatches | mean work lost (beats) | stranded | duplicated | replanned | properties violated |\n",
		"| agent | 6 | 2 | 4 | 0 | 0 | 3 | 0 | 0 | 0 | 1.17 | 2 | 2 | 1 | bounded-work-lost ×1, completes ×1, no-duplicate-effects ×2, same-result ×1 |\n",
		"| legacy | 1 | 1 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 2.00 | 0 | 0 | 0 | — |\n",
		"| kill | 3 | 1 | 0 | 0 | 2 | 0 | 0 | 3.00 | 1 | 1 | 0 |\n",
		"| upgrade | 5 | 4 | 0 | 0 | 3 | 0 | 0 | 1.20 | 2 | 2 | 1 |\n",
		"- `upgrade@1` — completes: the last process failed: KeyError: 'cart'\\\n  deploy: stranded (the new version could not read the old version's checkpoint: it failed or started over)\\\n",
		"\\\n  deploy: stranded (the new version could not read the old version's checkpoint: it failed or started over), duplicated (the new version redid effects the old version had applied)\\\n",
		"- `upgrade@3` — same-result: the result differs from the golden run's\\\n  deploy: replanned (the run took another path than a run of either version)\\\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the summary lacks %q", want)
		}
	}
	goldenFile(t, "deploy.md", md)
}

// The HTML page has the same columns, and a line of marks in each upgrade case.
func TestHTMLDeploys(t *testing.T) {
	_, page := writeHTML(t, deployReport(t))
	for _, want := range []string{
		`<th class="num">mean work lost (beats)</th><th class="num">stranded</th><th class="num">duplicated</th><th class="num">replanned</th><th>properties violated</th>`,
		`<td class="num">1.17</td><td class="num">2</td><td class="num">2</td><td class="num">1</td>`,
		`<td>upgrade</td><td class="num">5</td><td class="num">4</td><td class="num">0</td><td class="num">0</td><td class="num">3</td><td class="num">0</td><td class="num">0</td><td class="num">1.20</td><td class="num">2</td><td class="num">2</td><td class="num">1</td>`,
		`<p class="deploy">deploy: replanned (the run took another path than a run of either version)</p>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if n := strings.Count(page, `<p class="deploy">`); n != 4 {
		t.Errorf("%d cases with a line of marks, want the 4 failing upgrade cases", n)
	}
	if err := checkTags(page); err != nil {
		t.Error(err)
	}
}

// A report without upgrade cases looks as it did before upgrades: no column of marks, even when
// the campaign asked for upgrade faults of targets that have no next version.
func TestNoDeployNoColumns(t *testing.T) {
	r := deployReport(t)
	var legacy []Case
	for _, c := range r.Cases {
		if c.Target == "legacy" {
			legacy = append(legacy, c)
		}
	}
	r.Cases, r.Options.Targets = legacy, []string{"legacy"}
	if err := r.Summarize(nil); err != nil {
		t.Fatal(err)
	}
	for _, rep := range []*Report{r, demoReport(t)} {
		md := renderMarkdown(t, rep)
		_, page := writeHTML(t, rep)
		for _, head := range []string{"stranded", "duplicated", "replanned"} {
			if strings.Contains(md, "| "+head+" |") || strings.Contains(page, "<th class=\"num\">"+head+"</th>") {
				t.Errorf("a report without upgrade cases has a column %q", head)
			}
		}
		if !strings.Contains(md, "\n| target | cases | passed | failed | unknown | detected | duplicates | lost effects | phantom effects | state mismatches | mean work lost (beats) | properties violated |\n") ||
			!strings.Contains(md, "\n| fault kind | cases | failed | unknown | detected | duplicates | lost effects | state mismatches | mean work lost (beats) |\n") {
			t.Errorf("the tables' columns changed:\n%s", md)
		}
	}
}
