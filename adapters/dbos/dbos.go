package dbos

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/chaoskit/chaoskit/adapters/process/client"
	dbostx "github.com/dbos-inc/dbos-transact-golang/dbos"
	_ "github.com/dbos-inc/dbos-transact-golang/dbos/driver/sqlite" // registers modernc's "sqlite" driver, which DBOS needs for SQLite
)

// OpenSystemDB opens the SQLite file at path as a DBOS system database fit for chaoskit's
// fault disk: journal_mode DELETE (a rollback journal: no memory-mapped WAL index, whose pages
// reach the disk when the kernel pleases), synchronous EXTRA (FULL, and an fsync of the
// directory once the journal is deleted, without which a power loss can bring the journal back
// and roll a committed transaction back), and ONE connection, so that the file activity of a
// run is the same every time (a pool opens the file on demand, as timing decides). Pass it as
// dbos.Config.SQLiteSystemDB: DBOS then sets no pragma of its own (with a DatabaseURL it would
// switch the file to WAL).
func OpenSystemDB(path string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_txlock=immediate"+
		"&_pragma=journal_mode(DELETE)&_pragma=synchronous(EXTRA)&_pragma=busy_timeout(5000)&_pragma=foreign_keys(ON)")
	if err != nil {
		return nil, fmt.Errorf("opening the system database %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// Config returns the DBOS configuration of an application on the system database db, with the
// application version set: DBOS's default version is a hash of the binary, so that a rebuilt
// binary silently leaves the workflows its predecessor left PENDING unrecovered.
func Config(app, version string, db *sql.DB) dbostx.Config {
	return dbostx.Config{
		AppName:            app,
		ApplicationVersion: version,
		ExecutorID:         "local",
		SQLiteSystemDB:     db,
	}
}

// StepKey returns the idempotency key of the DBOS step running in ctx (the context a step
// function receives): the workflow id and the step id, "po-1:2", which recovery gives the same
// step again. Outside a step it is an error.
func StepKey(ctx context.Context) (string, error) {
	dctx, ok := ctx.(dbostx.Context)
	if !ok {
		return "", errors.New("dbos.StepKey: not a DBOS context")
	}
	wf, err := dbostx.GetWorkflowID(dctx)
	if err != nil {
		return "", err
	}
	step, err := dbostx.GetStepID(dctx)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s:%d", wf, step), nil
}

// Step runs fn as the DBOS step named name and, when fn ran in this process (rather than its
// recorded output being returned, as it is for a step that completed before a crash), marks the
// step with chaoskit once DBOS has recorded its output: "po-1:2 create_po recorded". Those marks
// are what chaoskit measures the work a crash loses from.
//
// When fn succeeded but DBOS could not record its output (the disk full, the database gone),
// Step does not return that error: a workflow that returned it would be recorded as failed
// (status ERROR, which recovery never resumes) as soon as the database takes writes again.
// It exits the process instead, with status ExitUnrecorded, so that the workflow stays PENDING
// and the next process recovers it, running the step again.
func Step[R any](ctx dbostx.Context, c *client.Client, name string, fn dbostx.Step[R], opts ...dbostx.StepOption) (R, error) {
	label, ran := "", false
	r, err := dbostx.RunAsStep(ctx, func(sctx context.Context) (R, error) {
		if key, kerr := StepKey(sctx); kerr == nil {
			label = key
		}
		out, err := fn(sctx)
		ran = err == nil
		return out, err
	}, append(opts, dbostx.WithStepName(name))...)
	switch {
	case err != nil && ran:
		fmt.Fprintf(os.Stderr, "dbos.Step: step %s %s ran but its output was not recorded: %v; exiting so that recovery runs it again\n", label, name, err)
		os.Exit(ExitUnrecorded)
	case err == nil && label != "": // ran here, and its output is recorded: RunAsStep returns after that
		if merr := c.Mark(label + " " + name + " recorded"); merr != nil {
			return r, merr
		}
	}
	return r, err
}

// ExitUnrecorded is the exit status of a process whose step ran but could not be recorded.
const ExitUnrecorded = 75

// InstallTemplate copies the system database template (a database already migrated, see
// Migrate) to path unless path exists, durably: a temporary file written and fsynced, renamed,
// the directory fsynced. A team migrates its system database when it deploys, not in every
// worker; under chaoskit it spares each run the migrations' 1,600 file operations.
func InstallTemplate(template, path string) error {
	if _, err := os.Stat(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	b, err := os.ReadFile(template)
	if err != nil {
		return fmt.Errorf("reading the system database template: %w", err)
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("installing the system database: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("installing the system database: %w", err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Migrate creates the system database at path and runs DBOS's migrations on it, in the journal
// mode OpenSystemDB uses: the template InstallTemplate copies.
func Migrate(ctx context.Context, app, version, path string) error {
	db, err := OpenSystemDB(path)
	if err != nil {
		return err
	}
	defer db.Close()
	cfg := Config(app, version, db)
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	dctx, err := dbostx.NewContext(ctx, cfg)
	if err != nil {
		return fmt.Errorf("migrating %s: %w", path, err)
	}
	dbostx.Shutdown(dctx, 5*time.Second)
	return nil
}
