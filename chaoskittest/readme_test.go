package chaoskittest_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/chaoskittest"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/spf13/afero"
)

// TestOrdersSurviveCrashes is docs/go.md's example, verbatim, and the README's in part: a harness
// that files three purchase orders and journals each, checked under every kill and power loss.
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

// docs/go.md shows exactly the code above, so that its example is known to compile and pass.
func TestReadmeExampleIsThisTest(t *testing.T) {
	doc, err := os.ReadFile("../docs/go.md")
	if err != nil {
		t.Fatal(err)
	}
	example := thisTest(t)
	if !strings.Contains(string(doc), example) {
		t.Fatalf("docs/go.md does not contain TestOrdersSurviveCrashes as written in chaoskittest/readme_test.go:\n%s", example)
	}
}

// The README shows a shorter version of it: the same lines in the same order, some runs of
// lines left out and each replaced by one comment line starting "// ...".
func TestReadmeShowsAnExcerptOfThisTest(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllSubmatch(readme, -1)
	if len(blocks) != 1 {
		t.Fatalf("README.md has %d go code blocks, want 1: the excerpt of TestOrdersSurviveCrashes", len(blocks))
	}
	example := strings.Split(thisTest(t), "\n")
	next := 0 // the next line of the example the excerpt may show
	elided := false
	for n, line := range strings.Split(strings.TrimSuffix(string(blocks[0][1]), "\n"), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "// ...") {
			elided = true
			continue
		}
		i := next
		if elided { // a run of the example's lines was left out: find where the excerpt picks up
			for i < len(example) && example[i] != line {
				i++
			}
		}
		if i >= len(example) || example[i] != line {
			t.Fatalf("README.md's go block, line %d, %q: not the next line of TestOrdersSurviveCrashes in chaoskittest/readme_test.go (want %q, or a line \"// ...\" where lines are left out)",
				n+1, line, example[min(next, len(example)-1)])
		}
		next, elided = i+1, false
	}
	if next != len(example) {
		t.Fatalf("README.md's go block ends before TestOrdersSurviveCrashes does (at %q)", example[next])
	}
}

// thisTest returns the source of TestOrdersSurviveCrashes, from "func" to its closing brace.
func thisTest(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile("readme_test.go")
	if err != nil {
		t.Fatal(err)
	}
	start := bytes.Index(src, []byte("func TestOrdersSurviveCrashes"))
	end := bytes.Index(src[start:], []byte("\n}\n")) + start + 2
	return string(src[start:end])
}
