package fusefs_test

import (
	"bufio"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chaoskit/chaoskit/adapters/process/fusefs"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/internal/needs"
)

// sqliteScript opens the database argv[1] in journal mode argv[2] ("exclusive-wal" is WAL with
// locking_mode=EXCLUSIVE) with synchronous=argv[3], commits argv[5] inserts, one transaction
// each, from key argv[4], and prints the journal mode, the row count and the integrity check.
const sqliteScript = `
import sqlite3, sys
db, mode, sync, start, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
con = sqlite3.connect(db, isolation_level=None, timeout=0)
if mode == "exclusive-wal":
    con.execute("PRAGMA locking_mode=EXCLUSIVE")
    mode = "wal"
got = con.execute("PRAGMA journal_mode=" + mode).fetchone()[0]
con.execute("PRAGMA synchronous=" + sync)
con.execute("CREATE TABLE IF NOT EXISTS t(i INTEGER PRIMARY KEY, v TEXT)")
for i in range(start, start + n):
    con.execute("BEGIN")
    con.execute("INSERT INTO t VALUES(?, ?)", (i, "x" * 100))
    con.execute("COMMIT")
print(got, con.execute("SELECT count(*) FROM t").fetchone()[0], con.execute("PRAGMA integrity_check").fetchone()[0])
con.close()
`

var (
	pythonOnce sync.Once
	pythonPath string
)

// python returns the path of a python3 with sqlite3, resolved once: a version manager's shim
// (pyenv) costs more than half a second per start.
func python(t testing.TB) string {
	t.Helper()
	p := needs.Command(t, "python3", "apt-get install python3")
	pythonOnce.Do(func() {
		out, err := exec.Command(p, "-c", "import sys, sqlite3; print(sys.executable)").Output()
		if err == nil {
			pythonPath = strings.TrimSpace(string(out))
		}
	})
	if pythonPath == "" {
		needs.Missing(t, "python3 has no sqlite3 module (apt-get install python3)")
	}
	return pythonPath
}

func runSQLite(t *testing.T, db, mode, sync string, start, n int) string {
	t.Helper()
	out, err := exec.Command(python(t), "-c", sqliteScript, db, mode, sync, itoa(start), itoa(n)).CombinedOutput()
	if err != nil {
		t.Fatalf("sqlite (%s, synchronous=%s): %v\n%s", mode, sync, err, out)
	}
	return strings.TrimSpace(string(out))
}

func itoa(i int) string { return strings.TrimSpace(strings.Repeat(" ", 0) + fmtInt(i)) }

func fmtInt(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

// TestSQLite runs SQLite in a child process on the mount in each journal mode, commits ten
// transactions, cuts the power, and checks what a new process finds on a new mount.
func TestSQLite(t *testing.T) {
	t.Parallel()
	python(t)
	for _, c := range []struct {
		mode, sync string
		mode2      string // what PRAGMA journal_mode answers
		afterPower string // what a new process finds after the power loss
		why        string
	}{
		{"delete", "FULL", "delete", "delete 9 ok",
			"synchronous=FULL does not fsync the directory after deleting the journal: the power loss brings the last transaction's journal back, and SQLite rolls that transaction back"},
		{"delete", "EXTRA", "delete", "delete 10 ok", "synchronous=EXTRA fsyncs the directory after deleting the journal"},
		{"wal", "FULL", "wal", "wal 10 ok", "the WAL is fsynced at each commit and its directory entry when it is created"},
		{"exclusive-wal", "FULL", "wal", "wal 10 ok", "as WAL, with the index in heap memory"},
	} {
		t.Run(c.mode+"-"+c.sync, func(t *testing.T) {
			t.Parallel()
			disk := faults.NewDisk(faults.DiskOptions{})
			tr := &tracer{}
			srv, dir := mount(t, faults.New(disk, tr), fusefs.Options{Trace: tr.Trace})
			if c.mode == "wal" && !srv.SharedMaps() {
				t.Skip("this kernel cannot map direct-I/O files shared (Linux 6.6 can): WAL needs locking_mode=EXCLUSIVE here")
			}
			db := filepath.Join(dir, "db")
			runSQLite(t, db, c.mode, c.sync, 0, 9)
			var out string
			events := tr.record(func() { out = runSQLite(t, db, c.mode, c.sync, 9, 1) })
			if want := c.mode2 + " 10 ok"; out != want {
				t.Fatalf("got %q, want %q", out, want)
			}
			if c.sync == "FULL" {
				opTable(t, "SQLite, journal_mode="+c.mode+": open, one INSERT transaction, close", events)
			}
			unmount(t, srv)

			t.Log(disk.Crash(faults.Fault{Kind: faults.Power}, rng()))
			srv, dir = mount(t, faults.New(disk, nil), fusefs.Options{})
			defer unmount(t, srv)
			if got := runSQLite(t, filepath.Join(dir, "db"), c.mode, c.sync, 0, 0); got != c.afterPower {
				t.Errorf("after a power loss: %q, want %q: %s", got, c.afterPower, c.why)
			}
		})
	}
}

// TestSQLiteLocks checks that SQLite's POSIX locks exclude each other across processes: while
// one process holds an exclusive transaction, another cannot write.
func TestSQLiteLocks(t *testing.T) {
	t.Parallel()
	py := python(t)
	_, dir := mount(t, faults.New(faults.NewDisk(faults.DiskOptions{}), nil), fusefs.Options{})
	db := filepath.Join(dir, "db")
	runSQLite(t, db, "delete", "FULL", 0, 1)

	holder := exec.Command(py, "-c", `
import sqlite3, sys
con = sqlite3.connect(sys.argv[1], isolation_level=None)
con.execute("BEGIN EXCLUSIVE")
con.execute("INSERT INTO t VALUES(100, 'held')")
print("locked", flush=True)
sys.stdin.readline()
con.execute("COMMIT")
`, db)
	stdin, err := holder.StdinPipe()
	must(t, err)
	stdout, err := holder.StdoutPipe()
	must(t, err)
	must(t, holder.Start())
	defer holder.Wait()
	defer stdin.Close()
	if line, _ := bufio.NewReader(stdout).ReadString('\n'); line != "locked\n" {
		t.Fatalf("the holder said %q", line)
	}

	out, err := exec.Command(py, "-c", sqliteScript, db, "delete", "FULL", "200", "1").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "database is locked") {
		t.Errorf("a second writer while the first holds the lock: %v\n%s", err, out)
	}
	io.WriteString(stdin, "\n")
	stdin.Close()
	must(t, holder.Wait())
	if got := runSQLite(t, db, "delete", "FULL", 200, 1); got != "delete 3 ok" {
		t.Errorf("after the holder committed: %q, want 3 rows", got)
	}
}
