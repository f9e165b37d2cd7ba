// main.go: a three-step workflow on a SQLite system database opened from the sqlite:
// DatabaseURL given as argument, printing a line as each step's output is recorded, then dying
// without shutting down (nothing after the last step runs, as at a power cut).
//
//	./repro 'sqlite:db/sys.db'
//	./repro 'sqlite:db/sys.db?_pragma=synchronous(FULL)'
package main

import (
	"context"
	"fmt"
	"os"
	"syscall"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
	_ "github.com/dbos-inc/dbos-transact-golang/dbos/driver/sqlite"
)

func main() {
	ctx, err := dbos.NewContext(context.Background(), dbos.Config{
		AppName: "repro", ApplicationVersion: "v1", DatabaseURL: os.Args[1]})
	if err != nil {
		panic(err)
	}
	wf := func(ctx dbos.Context, in string) (string, error) {
		for i := range 3 {
			if _, err := dbos.RunAsStep(ctx, func(context.Context) (int, error) { return i, nil }, dbos.WithStepName(fmt.Sprint("step", i))); err != nil {
				return "", err
			}
			fmt.Fprintf(os.Stderr, "step %d recorded\n", i)
		}
		return in, nil
	}
	dbos.RegisterWorkflow(ctx, wf)
	if err := dbos.Launch(ctx); err != nil {
		panic(err)
	}
	h, err := dbos.RunWorkflow(ctx, wf, "x", dbos.WithWorkflowID("w1"))
	if err != nil {
		panic(err)
	}
	if _, err := h.GetResult(); err != nil {
		panic(err)
	}
	fmt.Fprintln(os.Stderr, "workflow done")
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
}
