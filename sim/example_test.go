package sim_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/sim"
	"github.com/spf13/afero"
)

// journal is a harness adapted to chaoskit in a few lines: it appends one line per step to a
// log, fsyncs it, and marks the step; on restart it resumes after the last line. With
// dirSync it also fsyncs the directory after creating the log, without which a power loss can
// take the whole log away.
type journal struct {
	steps   int
	dirSync bool
}

func (j journal) Run(ctx context.Context, env *harness.Env) (any, error) {
	fsys := env.FS()
	old, _ := afero.ReadFile(fsys, "journal")
	done := strings.Count(string(old), "\n")
	f, err := fsys.OpenFile("journal", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if j.dirSync && done == 0 {
		dir, _ := fsys.Open(".")
		defer dir.Close()
		if err := dir.Sync(); err != nil {
			return nil, err
		}
	}
	for i := done; i < j.steps; i++ {
		if _, err := fmt.Fprintf(f, "step %d\n", i); err != nil {
			return nil, err
		}
		if err := f.Sync(); err != nil {
			return nil, err
		}
		env.Mark(fmt.Sprintf("step %d", i))
	}
	return j.steps, nil
}

func (journal) State(fsys afero.Fs) (any, error) {
	b, err := afero.ReadFile(fsys, "journal")
	return string(b), err
}

// Run runs one case. Without the directory fsync, a power loss after the log was created takes
// the log away with its directory entry, and the restart redoes the finished steps.
func ExampleRunner_Run() {
	rn, err := sim.NewRunner(harness.Fresh(journal{steps: 3}), sim.Options{Name: "journal"})
	if err != nil {
		fmt.Println(err)
		return
	}
	c := rn.Run(faults.Schedule{{Kind: faults.Power, Beat: 6}})
	fmt.Print(c)
	// Output:
	// journal under power@6 (seed 0): fail
	//   violated bounded-work-lost: 4 beats of durable golden work were done again: "step 0" was made again at beat 10 (process 1), after it had been made
	//   beats around the fault:
	//          0  p0  fs.create journal   [process 0 starts]
	//          ...
	//          2  p0  fs.sync journal
	//          3  p0  mark step 0
	//          4  p0  fs.write journal +7B @7
	//          5  p0  fs.sync journal
	//   >>     6  p0  mark step 1   <- power@6   [process 0 crashed by power@6; power lost: 0 file(s) back to their last fsync, 1 directory(ies) back to their last directory fsync]
	//          7  p1  fs.create journal   [process 1 starts]
	//          8  p1  fs.write journal +7B @0
	//          9  p1  fs.sync journal
	//         10  p1  mark step 0   [made again: first made at beat 3 (process 0)]
	//          ...
	//         12  p1  fs.sync journal
	//         13  p1  mark step 1
	//         14  p1  fs.write journal +7B @14
	//         15  p1  fs.sync journal
	//         16  p1  mark step 2   [process 1 completed]
}
