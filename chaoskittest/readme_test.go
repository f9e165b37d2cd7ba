package chaoskittest_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/chaoskittest"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/spf13/afero"
)

// TestOrdersSurviveCrashes is the README's example, verbatim: a harness that files three
// purchase orders and journals each, checked under every kill and power loss.
func TestOrdersSurviveCrashes(t *testing.T) {
	chaoskittest.Check(t, harness.Fresh(harness.Func{
		ToolList: []harness.Tool{{Name: "create_po", Contract: harness.IdempotentByKey}},
		RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
			fsys := env.FS() // the harness's disk: chaoskit crashes it at every beat
			journal, _ := afero.ReadFile(fsys, "orders.log")
			f, err := fsys.OpenFile("orders.log", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			if err != nil {
				return nil, err
			}
			defer f.Close()
			if len(journal) == 0 { // a new file survives a power loss once its directory is fsynced
				if dir, err := fsys.Open("."); err != nil || dir.Sync() != nil {
					return nil, fmt.Errorf("fsync of the directory failed")
				}
			}
			for i := bytes.Count(journal, []byte("\n")); i < 3; i++ {
				key := fmt.Sprintf("po-%d", i) // stable per order: a retry is not a second order
				if _, err := env.Call(ctx, harness.Call{Tool: "create_po", Key: key, Args: i}); err != nil {
					return nil, err
				}
				if _, err := f.WriteString(key + "\n"); err != nil || f.Sync() != nil {
					return nil, fmt.Errorf("journaling %s failed", key)
				}
				env.Mark(key) // progress: order i is durable
			}
			return "filed", nil
		},
	}), campaign.Options{Faults: []faults.Kind{faults.Kill, faults.Power}})
}

// The README shows exactly the code above, so that its example is known to compile and pass.
func TestReadmeExampleIsThisTest(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("readme_test.go")
	if err != nil {
		t.Fatal(err)
	}
	start := bytes.Index(src, []byte("func TestOrdersSurviveCrashes"))
	end := bytes.Index(src[start:], []byte("\n}\n")) + start + 3
	if !strings.Contains(string(readme), string(src[start:end])) {
		t.Fatalf("README.md does not contain TestOrdersSurviveCrashes as written in chaoskittest/readme_test.go:\n%s", src[start:end])
	}
}
