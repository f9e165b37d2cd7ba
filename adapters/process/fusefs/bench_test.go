package fusefs_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/adapters/process/fusefs"
	"github.com/chaoskit/chaoskit/faults"
)

// benchScript creates a database and commits 100 inserts, one transaction each (rollback
// journal, synchronous=FULL), and prints how long the commits took, in milliseconds.
const benchScript = `
import sqlite3, sys, time
con = sqlite3.connect(sys.argv[1], isolation_level=None)
con.execute("CREATE TABLE t(i INTEGER PRIMARY KEY, v TEXT)")
t0 = time.perf_counter()
for i in range(100):
    con.execute("BEGIN")
    con.execute("INSERT INTO t VALUES(?, ?)", (i, "x" * 100))
    con.execute("COMMIT")
print((time.perf_counter() - t0) * 1000)
con.close()
`

// BenchmarkSQLite100Commits compares a python3 process committing 100 SQLite transactions in a
// plain directory (ext4 under the test's temporary directory, and tmpfs) with the same on the
// mount (a faults.FS over a faults.Disk), with the default Do, with every call run on one
// goroutine as chaoskit's simulation does, and so through a helper process as chaoskit serves a
// FUSE disk. ns/op is the whole process; commit-ms/op the 100 commits alone.
//
//	go test -run '^$' -bench SQLite100 -benchtime 20x ./adapters/process/fusefs/
func BenchmarkSQLite100Commits(b *testing.B) {
	py := python(b)
	for _, where := range []string{"ext4", "tmpfs", "fuse", "fuse-one-goroutine", "helper-one-goroutine"} {
		b.Run(where, func(b *testing.B) {
			var dir string
			switch where {
			case "ext4":
				dir = b.TempDir()
			case "tmpfs":
				d, err := os.MkdirTemp("/dev/shm", "fusefs-bench")
				if err != nil {
					b.Skip("no tmpfs at /dev/shm")
				}
				defer os.RemoveAll(d)
				dir = d
			case "fuse":
				_, dir = mount(b, faults.New(faults.NewDisk(faults.DiskOptions{}), nil), fusefs.Options{})
			case "fuse-one-goroutine":
				_, dir = mount(b, faults.New(faults.NewDisk(faults.DiskOptions{}), nil), fusefs.Options{Do: newSim().Do})
			case "helper-one-goroutine": // as chaoskit serves a FUSE disk: through a helper process
				dir = mountDir(b)
				srv, err := testHelper(b).Mount(dir, faults.New(faults.NewDisk(faults.DiskOptions{}), nil), fusefs.Options{Do: newSim().Do})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { unmount(b, srv) })
			}
			var commitMs float64
			b.ResetTimer()
			for i := range b.N {
				out, err := exec.Command(py, "-c", benchScript, filepath.Join(dir, fmt.Sprintf("db%d", i))).CombinedOutput()
				if err != nil {
					b.Fatalf("%v\n%s", err, out)
				}
				ms, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
				if err != nil {
					b.Fatal(err)
				}
				commitMs += ms
			}
			b.ReportMetric(commitMs/float64(b.N), "commit-ms/op")
		})
	}
}
