package process_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/adapters/process"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/sim"
)

// The state command runs once per distinct disk: every case of the correct child's kill campaign
// ends with the golden run's files, so after the golden runs it never runs again; the act-then-
// save child's cases end with other files (an order filed twice), each shown to it once.
func TestStateCommandRunsOncePerDisk(t *testing.T) {
	for _, tc := range []struct {
		mode string
		want func(cases, dumps int) bool
	}{
		{"correct", func(cases, dumps int) bool { return dumps == 1 }},
		{"act-then-save", func(cases, dumps int) bool { return dumps > 1 && dumps < 1+cases }},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "dumps")
			tg := child(tc.mode)
			tg.Env = []string{"CHILD_DUMP_LOG=" + log}
			rn, err := newRunner(t, tg, sim.Options{})
			if err != nil {
				t.Fatal(err)
			}
			cases := len(explore(t, rn, faults.Kill))
			b, _ := os.ReadFile(log)
			if dumps := bytes.Count(b, []byte("\n")); !tc.want(cases, dumps) {
				t.Errorf("the state command ran %d times for two golden runs and %d cases", dumps, cases)
			}
		})
	}
}

// A state command's output, written to a file and decoded from there, is one JSON value,
// numbers as written, or an error quoting its start.
func TestStateOutputIsDecoded(t *testing.T) {
	disk := faults.NewDisk(faults.DiskOptions{})
	for _, tc := range []struct {
		print string
		want  string // the document's JSON, or the error's end
	}{
		{`{"n": 12345678901234567890, "s": "x"}`, `{"n":12345678901234567890,"s":"x"}`},
		{``, `null`},
		{"\n", `printed no JSON (EOF): "\n"`},
		{`not json`, `printed no JSON (invalid character 'o' in literal null (expecting 'u')): "not json"`},
		{`{} {}`, `printed no JSON (more than one JSON value): "{} {}"`},
	} {
		tg := process.Target{Argv: []string{"true"}, StateArgv: []string{"printf", "%s", tc.print}}
		doc, err := tg.State(disk)
		got := ""
		if err != nil {
			got = err.Error()
		} else {
			b, _ := json.Marshal(doc)
			got = string(b)
		}
		if !strings.HasSuffix(got, tc.want) {
			t.Errorf("state printing %q: %s, want …%s", tc.print, got, tc.want)
		}
	}
}
