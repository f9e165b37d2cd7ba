// Package dbos is the glue that puts a workflow of DBOS Transact for Go
// (github.com/dbos-inc/dbos-transact-golang, v1.8.0) under chaoskit, as a process target on a
// FUSE disk: the workflow runs as a real process, keeps its SQLite system database in
// CHAOSKIT_STATE_DIR (which chaoskit mounts over its fault disk, so that every write, fsync and
// rename of SQLite is a beat at which a kill, a power cut, a torn write or a full disk can
// strike), and makes its steps' effects through chaoskit's Go client (adapters/process/client).
// It is its own module so that DBOS's dependencies (modernc's SQLite, pgx) stay out of
// chaoskit's. Command poworkflow is a complete example, tested in this package.
//
// # Pointing chaoskit at your workflow
//
// In your program's main, when it runs under chaoskit:
//
//	c, _ := client.Connect()                                  // the world: tools, model, marks
//	db, _ := dbos.OpenSystemDB(filepath.Join(c.StateDir, "sys.db")) // DELETE journal, synchronous EXTRA, one connection
//	ctx, _ := dbostx.NewContext(context.Background(), dbos.Config("myapp", "v1", db))
//	dbostx.RegisterWorkflow(ctx, myWorkflow)
//	dbostx.Launch(ctx)                                        // recovers the PENDING workflows
//	h, _ := dbostx.RunWorkflow(ctx, myWorkflow, input, dbostx.WithWorkflowID("run-1")) // same id after a crash
//	res, _ := h.GetResult(dbostx.WithHandlePollingInterval(10 * time.Millisecond))
//	c.Done(res)
//
// and in each step, call the outside world through c with the step's key, and run the step
// through Step so that chaoskit sees when its output is recorded:
//
//	po, err := dbos.Step(ctx, c, "create_po", func(sctx context.Context) (string, error) {
//		key, _ := dbos.StepKey(sctx) // "run-1:2": the workflow id and the step id
//		r, err := c.Call(client.Call{Tool: "create_po", Key: key, Args: order})
//		return r.ID, err
//	})
//
// Then run it, with a flag of your program printing the durable state as JSON:
//
//	chaoskit run --exec './myapp' --tool create_po=idempotent --state './myapp -dump-state' \
//		--disk fuse --faults kill,power,torn,diskfull
//
// # What it takes
//
// Set the application version: DBOS's default is a hash of the binary, and Launch recovers
// only the workflows of the running version, so a rebuilt binary silently leaves its
// predecessor's PENDING workflows alone. Give DBOS your own *sql.DB (Config.SQLiteSystemDB):
// with a sqlite: DatabaseURL it opens a pool of eight connections and sets WAL with
// synchronous NORMAL (dbos/internal/sysdb/sqlite_pool.go), under which a commit is not fsynced,
// so that a power cut takes recorded steps back and recovery executes them again (reported in
// docs/findings/dbos-sqlite-wal-normal.md); and a pool opens the file as timing decides,
// which makes the file activity differ from run to run. Key each effect by StepKey: DBOS records
// a step's output only after the step returns, so the step in flight at a crash runs again,
// after its effect may have landed. Migrate the system database when you deploy
// (Migrate, InstallTemplate): its migrations are some 1,600 file operations that every run
// would otherwise repeat.
package dbos
