package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/spf13/afero"
)

// unmarked is an agent that makes no progress marks: three turns, each a model call ("turn I",
// one beat) and a tool call under a key stable per step ("step-I", two beats: sent, applied),
// after which it saves the turns done (a temporary file created, written, renamed: three beats).
// So turn I spans beats 6I to 6I+5, and the run 18 beats. With resumes it starts from the turns
// saved; without, from zero, its keys replaying what was applied.
type unmarked struct{ resumes bool }

func (a unmarked) Tools() []harness.Tool {
	return []harness.Tool{{Name: "file", Contract: harness.IdempotentByKey}}
}

func (a unmarked) Run(ctx context.Context, env *harness.Env) (any, error) {
	fsys := env.FS()
	done := 0
	if b, err := afero.ReadFile(fsys, "done"); err == nil && a.resumes {
		done, _ = strconv.Atoi(string(b))
	}
	for i := done; i < 3; i++ {
		text, err := env.Model(ctx, harness.ModelCall{Purpose: fmt.Sprintf("turn %d", i), Reply: "file it"})
		if err != nil {
			return nil, err
		}
		if _, err := env.Call(ctx, harness.Call{Tool: "file", Key: fmt.Sprintf("step-%d", i), Args: map[string]any{"what": text, "step": i}}); err != nil {
			return nil, err
		}
		f, err := fsys.Create("done.tmp")
		if err != nil {
			return nil, err
		}
		if _, err := f.WriteString(strconv.Itoa(i + 1)); err != nil {
			return nil, err
		}
		if err := f.Close(); err != nil {
			return nil, err
		}
		if err := fsys.Rename("done.tmp", "done"); err != nil {
			return nil, err
		}
	}
	return "filed", nil
}

// A campaign of agents without progress marks gets work lost in every rendering, measured from
// the calls made again after a crash, and the bounded-work-lost verdict: not "not measured" or
// "not checked". The figures, from the agent's beats (see unmarked) under a kill at each beat K,
// the call of beat K not made and one of beat K-1 made (a kill at a tool call's applied beat
// applies it and loses the reply):
//
//   - restart (from zero): the restart asks again every model call made before the crash (1 beat
//     each) and replays every tool call applied (2 beats each). Work lost for K = 0..17:
//     0, 1, 3, 3, 3, 3, 3, 4, 6, 6, 6, 6, 6, 7, 9, 9, 9, 9 beats (sum 93, mean 5.17, max 9); model
//     calls asked again 0, then 1 for K = 1..6, 2 for 7..12, 3 for 13..17 (33 in all). Once the
//     run has asked "turn 1" (K >= 7) the restart asks "turn 0" again, which is starting over:
//     bounded-work-lost fails in those 11 cases, and the 7 others pass.
//   - resume: the restart redoes the turn in flight only: after its save (K = 6I) nothing, after
//     its model call (6I+1) that call, after its tool call (6I+2..6I+5) both. Work lost
//     0, 1, 3, 3, 3, 3 per turn (sum 39, mean 2.17, max 3), model calls asked again 5 per turn (15
//     in all), every case passes.
//
// Over both: 36 kill cases, mean work lost 132/36 = 3.67, 48 model calls asked again.
func TestWorkLostWithoutMarksInReports(t *testing.T) {
	c := &campaign.Campaign{Options: campaign.Options{Faults: []faults.Kind{faults.Kill}}}
	for _, resumes := range []bool{false, true} {
		name := map[bool]string{false: "restart", true: "resume"}[resumes]
		c.Targets = append(c.Targets, campaign.Target{Name: name, New: func() harness.Target { return unmarked{resumes} }})
	}
	rep, err := c.Run(context.Background(), campaign.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// The report: per target, then per case.
	type want struct {
		passed, failed, remade, max int
		mean                        float64
	}
	for i, w := range []want{{passed: 7, failed: 11, remade: 33, max: 9, mean: 5.167}, {passed: 18, remade: 15, max: 3, mean: 2.167}} {
		s := rep.Summary.Targets[i]
		bounded := s.Violations["bounded-work-lost"]
		if s.Cases != 18 || s.Passed != w.passed || s.Failed != w.failed || bounded != w.failed || len(s.Violations) > 1 ||
			s.ModelCallsRemade != w.remade || s.WorkLostBeatsMax != w.max || s.WorkLostBeatsMean != w.mean ||
			s.WorkLostUnmeasured != 0 || len(s.NotChecked) != 0 {
			t.Errorf("%s: %+v, want %+v", s.Target, s.Stats, w)
		}
	}
	lost := map[string][]int{
		"restart": {0, 1, 3, 3, 3, 3, 3, 4, 6, 6, 6, 6, 6, 7, 9, 9, 9, 9},
		"resume":  {0, 1, 3, 3, 3, 3, 0, 1, 3, 3, 3, 3, 0, 1, 3, 3, 3, 3},
	}
	for _, cs := range rep.Cases {
		k := cs.Schedule[0].Beat
		remade := (k + 5) / 6 // restart: the model calls at beats 0, 6, 12 before K
		if cs.Target == "resume" {
			remade = min(k%6, 1) // the turn in flight's, once made
		}
		fails := cs.Target == "restart" && k >= 7
		if cs.WorkLostBeats != lost[cs.Target][k] || cs.ModelCallsRemade != remade || (len(cs.Violations) == 1) != fails {
			t.Errorf("%s: work lost %d, model calls asked again %d, violations %v; want %d, %d, failing %v",
				cs.ID, cs.WorkLostBeats, cs.ModelCallsRemade, cs.Violations, lost[cs.Target][k], remade, fails)
		}
		if fails && !strings.Contains(cs.Violations[0].Detail, fmt.Sprintf(`made again %d calls that earlier processes had made, the run's first model call among them (model call "turn 0"`, cs.ModelCallsRemade+(cs.WorkLostBeats-cs.ModelCallsRemade)/2)) {
			t.Errorf("%s: %s", cs.ID, cs.Violations[0].Detail)
		}
	}
	b, err := rep.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Summary struct {
			Targets []map[string]any `json:"targets"`
		} `json:"summary"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for i, w := range []string{`5.167 9 33 map[bounded-work-lost:11] <nil>`, `2.167 3 15 <nil> <nil>`} {
		s := doc.Summary.Targets[i]
		if got := fmt.Sprint(s["work_lost_beats_mean"], " ", s["work_lost_beats_max"], " ", s["model_calls_remade"], " ", s["violations"], " ", s["work_lost_unmeasured"]); got != w {
			t.Errorf("report.json, %s: %s, want %s", s["target"], got, w)
		}
	}

	// The renderings.
	var text, md, page bytes.Buffer
	if err := printSummary(&text, rep); err != nil {
		t.Fatal(err)
	}
	if err := rep.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	if err := rep.HTML(&page); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{text.String(), md.String(), page.String()} {
		if strings.Contains(out, "not checked") || strings.Contains(out, "not measured") || strings.Contains(out, "unmeasured") {
			t.Errorf("a rendering says work lost was not measured or checked:\n%s", out)
		}
	}
	for _, w := range []string{
		"restart                          18        7/18           0      0         0       5.17           33  FAILED: bounded-work-lost ×11\n",
		"resume                           18       18/18           0      0         0       2.17           15  passed\n",
	} {
		if !strings.Contains(text.String(), w) {
			t.Errorf("the text summary lacks %q:\n%s", w, text.String())
		}
	}
	for _, w := range []string{
		"| target | cases | passed | failed | unknown | detected | duplicates | lost effects | phantom effects | state mismatches | mean work lost (beats) | model calls asked again | properties violated |\n",
		"| restart | 18 | 7 | 11 | 0 | 0 | 0 | 0 | 0 | 0 | 5.17 | 33 | bounded-work-lost ×11 |\n",
		"| resume | 18 | 18 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 2.17 | 15 | — |\n",
		"| kill | 36 | 11 | 0 | 0 | 0 | 0 | 0 | 3.67 | 48 |\n",
	} {
		if !strings.Contains(md.String(), w) {
			t.Errorf("the Markdown summary lacks %q:\n%s", w, md.String())
		}
	}
	for _, w := range []string{
		`<td>restart</td><td class="num">18</td><td class="num">7</td><td class="num">11</td><td class="num">0</td><td class="num">0</td><td class="num">0</td><td class="num">0</td><td class="num">0</td><td class="num">0</td><td class="num">5.17</td><td class="num">33</td><td>bounded-work-lost ×11</td>`,
		`<td>kill</td><td class="num">36</td><td class="num">11</td><td class="num">0</td><td class="num">0</td><td class="num">0</td><td class="num">0</td><td class="num">0</td><td class="num">3.67</td><td class="num">48</td>`,
	} {
		if !strings.Contains(page.String(), w) {
			t.Errorf("the HTML page lacks %s", w)
		}
	}
	// Each failing case shows its own figures: kill@13 of restart asked the model again 3 times
	// (turns 0, 1, 2) and lost 7 beats.
	_, kill13, _ := strings.Cut(page.String(), "<code>kill@13</code>")
	if kill13, _, _ = strings.Cut(kill13, "</article>"); !strings.Contains(kill13, "work lost 7 · ") || !strings.Contains(kill13, " · model calls asked again 3 · ") {
		t.Errorf("the HTML case kill@13 of restart: %s", kill13)
	}
}
