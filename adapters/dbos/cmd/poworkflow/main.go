// Command poworkflow is a purchasing workflow in DBOS Transact (Go) on a SQLite system database,
// run by chaoskit as a process target: its state directory (CHAOSKIT_STATE_DIR) holds the system
// database, and its steps' effects go through chaoskit's world with the Go client.
//
//	step 0 plan        the model plans the order
//	step 1 lookup      vendor_lookup, a read-only tool
//	step 2 create_po   create_po, idempotent by key: the $84,000 purchase order
//	step 3 notify      notify_finance, idempotent by key
//
// Flags:
//
//	-keys=false         call the tools without an idempotency key (the broken variant)
//	-retries=N          retry a step whose call failed N times (default 3; 0: a failed call
//	                    fails the workflow for good, as DBOS records a step's error)
//	-journal=MODE       the system database's durability: delete (the default: OpenSystemDB,
//	                    synchronous EXTRA), delete-full (synchronous FULL), wal (what DBOS sets
//	                    for a sqlite: DatabaseURL: WAL, synchronous NORMAL), wal-full (WAL with
//	                    synchronous FULL, which fsyncs the WAL at each commit)
//	-template PATH      install this migrated system database if the state directory has none
//	-migrate PATH       create a migrated system database at PATH and exit (the template)
//	-dump-state         print the workflow's durable state as JSON and exit (chaoskit's --state)
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	chaosdbos "github.com/chaoskit/chaoskit/adapters/dbos"
	"github.com/chaoskit/chaoskit/adapters/process/client"
	"github.com/dbos-inc/dbos-transact-golang/dbos"
)

const (
	app        = "poworkflow"
	version    = "v1" // fixed: DBOS's default is a hash of the binary
	workflowID = "po-1"
	dbName     = "sys.db"
)

var (
	keys    = flag.Bool("keys", true, "key each effect by workflow id and step id")
	retries = flag.Int("retries", 3, "how many times a step whose call failed is retried in the process (DBOS records a step's error as its outcome for good)")
	journal = flag.String("journal", "delete", "the system database's journal: delete (chaoskit's OpenSystemDB: synchronous EXTRA), delete-full (synchronous FULL), wal (DBOS's own settings: synchronous NORMAL) or wal-full (WAL, synchronous FULL)")
)

func main() {
	template := flag.String("template", "", "a migrated system database to install when the state directory has none")
	migrate := flag.String("migrate", "", "create a migrated system database at this path and exit")
	dump := flag.Bool("dump-state", false, "print the workflow's durable state as JSON and exit")
	flag.Parse()
	var err error
	switch {
	case *migrate != "":
		err = chaosdbos.Migrate(context.Background(), app, version, *migrate)
	case *dump:
		err = dumpState(filepath.Join(os.Getenv("CHAOSKIT_STATE_DIR"), dbName), os.Stdout)
	default:
		var c *client.Client
		if c, err = client.Connect(); err == nil {
			err = run(c, *template) // a full disk too: the supervisor restarts the process
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "poworkflow:", err)
		os.Exit(1)
	}
}

// order is what the model plans.
type order struct {
	Vendor string `json:"vendor"`
	Amount int    `json:"amount"`
}

// purchase is the workflow. c is the process's chaoskit client; the workflow function is
// registered as a closure over it.
func purchase(c *client.Client) dbos.Workflow[string, string] {
	retry := []dbos.StepOption{dbos.WithStepMaxRetries(*retries),
		dbos.WithStepBaseInterval(10 * time.Millisecond), dbos.WithStepMaxInterval(100 * time.Millisecond)}
	return func(ctx dbos.Context, task string) (string, error) {
		plan, err := chaosdbos.Step(ctx, c, "plan", func(context.Context) (order, error) {
			text, err := c.Model("plan: "+task, `{"vendor":"Acme Corp","amount":84000}`, 2*time.Second, time.Minute)
			if err != nil {
				return order{}, err
			}
			var o order
			return o, json.Unmarshal([]byte(text), &o)
		}, retry...)
		if err != nil {
			return "", err
		}
		if _, err := chaosdbos.Step(ctx, c, "lookup", func(sctx context.Context) (string, error) {
			return call(sctx, c, "vendor_lookup", map[string]any{"vendor": plan.Vendor})
		}, retry...); err != nil {
			return "", err
		}
		po, err := chaosdbos.Step(ctx, c, "create_po", func(sctx context.Context) (string, error) {
			return call(sctx, c, "create_po", plan)
		}, retry...)
		if err != nil {
			return "", err
		}
		note, err := chaosdbos.Step(ctx, c, "notify", func(sctx context.Context) (string, error) {
			return call(sctx, c, "notify_finance", map[string]any{"po": po, "amount": plan.Amount})
		}, retry...)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%s filed with %s for $%d; finance notified (%s)", po, plan.Vendor, plan.Amount, note), nil
	}
}

// call calls a tool from inside a step, keyed by the step unless -keys=false.
func call(ctx context.Context, c *client.Client, tool string, args any) (string, error) {
	call := client.Call{Tool: tool, Args: args}
	if *keys {
		key, err := chaosdbos.StepKey(ctx)
		if err != nil {
			return "", err
		}
		call.Key = key
	}
	r, err := c.Call(call)
	return r.ID, err
}

func run(c *client.Client, template string) error {
	path := filepath.Join(c.StateDir, dbName)
	if template != "" {
		if err := chaosdbos.InstallTemplate(template, path); err != nil {
			return err
		}
	}
	db, err := openDB(path)
	if err != nil {
		return err
	}
	cfg := chaosdbos.Config(app, version, db)
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, err := dbos.NewContext(context.Background(), cfg)
	if err != nil {
		return err
	}
	wf := purchase(c)
	dbos.RegisterWorkflow(ctx, wf, dbos.WithWorkflowName("purchase"))
	if err := dbos.Launch(ctx); err != nil { // re-enqueues this executor's PENDING workflows
		return err
	}
	// After a crash the same id returns a handle to the workflow being recovered.
	h, err := dbos.RunWorkflow(ctx, wf, "40 pallets from Acme Corp", dbos.WithWorkflowID(workflowID))
	if err != nil {
		return err
	}
	res, err := h.GetResult(dbos.WithHandlePollingInterval(10 * time.Millisecond))
	if err != nil {
		return fmt.Errorf("workflow %s: %w", workflowID, err)
	}
	if err := c.Done(res); err != nil {
		return err
	}
	dbos.Shutdown(ctx, 5*time.Second)
	return nil
}

// openDB opens the system database as -journal says.
func openDB(path string) (*sql.DB, error) {
	switch *journal {
	case "delete":
		return chaosdbos.OpenSystemDB(path)
	case "delete-full":
		// A rollback journal with synchronous FULL: the commit is fsynced, but not the directory
		// after the journal is deleted, so a power loss can bring the journal back.
		db, err := sql.Open("sqlite", "file:"+path+"?_txlock=immediate"+
			"&_pragma=journal_mode(DELETE)&_pragma=synchronous(FULL)&_pragma=busy_timeout(5000)&_pragma=foreign_keys(ON)")
		if err != nil {
			return nil, err
		}
		db.SetMaxOpenConns(1)
		return db, nil
	case "wal", "wal-full":
		// What DBOS sets when given a DatabaseURL (sqlite_pool.go): WAL, synchronous NORMAL, under
		// which a commit is not fsynced; or WAL with synchronous FULL, which fsyncs the WAL at
		// each commit (wal-full). One connection and an exclusive lock keep the WAL index
		// in memory rather than in a memory-mapped -shm file, so that the file activity is the
		// same every run; neither changes what reaches the disk when.
		// The pragmas run in this order on the one connection (the driver would sort those of
		// the DSN, putting journal_mode before locking_mode, and the index in shared memory).
		db, err := sql.Open("sqlite", "file:"+path+"?_txlock=immediate&_pragma=busy_timeout(5000)&_pragma=foreign_keys(ON)")
		if err != nil {
			return nil, err
		}
		db.SetMaxOpenConns(1)
		sync := map[string]string{"wal": "NORMAL", "wal-full": "FULL"}[*journal]
		for _, p := range []string{"PRAGMA locking_mode = EXCLUSIVE", "PRAGMA journal_mode = WAL", "PRAGMA synchronous = " + sync} {
			if _, err := db.Exec(p); err != nil {
				db.Close()
				return nil, fmt.Errorf("%s: %w", p, err)
			}
		}
		return db, nil
	}
	return nil, fmt.Errorf("-journal=%s: want delete, delete-full, wal or wal-full", *journal)
}

// state is the workflow's durable state: its status, output and error, and each recorded step.
// Timestamps, owners and recovery counts, which differ from run to run, are left out.
type state struct {
	Workflow *workflow `json:"workflow"`
	Steps    []step    `json:"steps"`
}

type workflow struct {
	Status string  `json:"status"`
	Output *string `json:"output"`
	Error  *string `json:"error"`
}

type step struct {
	ID     int     `json:"id"`
	Name   string  `json:"name"`
	Output *string `json:"output"`
	Error  *string `json:"error"`
}

// dumpState prints the durable state of the system database at path, read with SQL: a copy of
// the state directory, which no DBOS runs on.
func dumpState(path string, w io.Writer) error {
	st := state{Steps: []step{}}
	if _, err := os.Stat(path); err == nil {
		db, err := sql.Open("sqlite", "file:"+path) // read-write: a hot journal left by a crash is rolled back first
		if err != nil {
			return err
		}
		defer db.Close()
		var wf workflow
		err = db.QueryRow(`SELECT status, output, error FROM workflow_status WHERE workflow_uuid = ?`, workflowID).Scan(&wf.Status, &wf.Output, &wf.Error)
		switch {
		case err == sql.ErrNoRows:
		case err != nil:
			return err
		default:
			st.Workflow = &wf
		}
		rows, err := db.Query(`SELECT function_id, function_name, output, error FROM operation_outputs WHERE workflow_uuid = ? ORDER BY function_id`, workflowID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var s step
			if err := rows.Scan(&s.ID, &s.Name, &s.Output, &s.Error); err != nil {
				return err
			}
			st.Steps = append(st.Steps, s)
		}
		if err := rows.Err(); err != nil {
			return err
		}
	}
	return json.NewEncoder(w).Encode(st)
}
