package process_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/adapters/process"
	"github.com/chaoskit/chaoskit/harness"
)

// nodeExampleDir is the Node example's directory, examples/node, as an absolute path.
func nodeExampleDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("examples", "node"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// nodeExample returns the Node example as a target: correct, or with args such as --broken.
func nodeExample(t *testing.T, node string, args ...string) process.Target {
	return process.Target{
		Argv:      append([]string{node, "app.mjs"}, args...),
		Dir:       nodeExampleDir(t),
		ToolList:  []harness.Tool{{Name: "create_po", Contract: harness.IdempotentByKey, Latency: time.Second}},
		StateArgv: []string{node, "app.mjs", "--dump-state"},
	}
}

// nodeExampleCLIFlags are the flags of chaoskit run that make the Node example a target, as
// its README gives them.
func nodeExampleCLIFlags(exec string) []string {
	return []string{"--exec", exec, "--tool", "create_po=idempotent-by-key,latency=1s", "--state", "node app.mjs --dump-state"}
}

// reportSummary is the part of a report.json (chaoskit.report/v2) the tests read: each
// target's totals, overall and by fault kind.
type reportSummary struct {
	Summary struct {
		Targets []struct {
			GoldenBeats   int `json:"golden_beats"`
			Cases, Passed int
			ByFault       map[string]struct{ Cases, Passed int } `json:"by_fault"`
		}
	}
}

// loadSummary reads the summary of a report.json, leniently: only the fields of
// reportSummary, whatever else the report holds.
func loadSummary(path string) (*reportSummary, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r reportSummary
	return &r, json.Unmarshal(b, &r)
}
