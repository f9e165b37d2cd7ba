package fusefs_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/chaoskit/chaoskit/adapters/process/fusefs"
	"github.com/chaoskit/chaoskit/internal/leftover"
	"golang.org/x/sys/unix"
)

// The workloads' op tables, written to the file named by $FUSEFS_OPS_TABLE after the tests.
var (
	tablesMu sync.Mutex
	tables   []string
)

func TestMain(m *testing.M) {
	if os.Getenv("FUSEFS_SERVE_HELPER") != "" { // the helper process of TestThroughAHelper's run
		serveHelper()
	}
	if os.Getenv("FUSEFS_HELPER_MOUNT") != "" { // a helper process: see TestHelperProcess
		os.Exit(m.Run())
	}
	base := filepath.Join(os.TempDir(), fmt.Sprintf("chaoskit-fusefs-test-%d", os.Getuid()))
	removeDeadRuns(base)
	testRoot = filepath.Join(base, strconv.Itoa(os.Getpid()))
	if err := os.MkdirAll(testRoot, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if left, _ := fusefs.Cleanup(testRoot); len(left) > 0 {
		fmt.Fprintln(os.Stderr, "fusefs tests left mounts behind:", left)
		code = 1
	}
	os.RemoveAll(testRoot)
	os.Remove(base) // when empty: another test process running now keeps its own
	if out := os.Getenv("FUSEFS_OPS_TABLE"); out != "" && len(tables) > 0 {
		sort.Strings(tables) // parallel tests finish in any order
		if err := os.WriteFile(out, []byte(strings.Join(tables, "\n")), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// testRoot holds this test process's mount points: $TMPDIR/chaoskit-fusefs-test-<uid>/<pid>.
var testRoot string

// removeDeadRuns tears down the mounts and directories that test processes which are gone (or
// are zombies, stuck on their own mount) left under base: a test binary killed by go test's
// timeout runs no cleanup. Directories of live processes, maybe running now, are left alone.
func removeDeadRuns(base string) {
	ents, _ := os.ReadDir(base)
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || alive(pid) {
			continue
		}
		dir := filepath.Join(base, e.Name())
		fusefs.Cleanup(dir)
		os.RemoveAll(dir)
	}
}

// A run of this package's tests leaves nothing in the temporary directory: neither its own
// directory of mount points nor the one above, shared by the runs of a user, once empty. It runs
// the test binary again, running no test, with a TMPDIR of its own.
func TestLeavesNothingBehind(t *testing.T) {
	if os.Getenv("FUSEFS_HELPER_MOUNT") != "" {
		t.Skip("a helper process")
	}
	tmp := t.TempDir()
	scope := leftover.New(tmp)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "FUSEFS_OPS_TABLE=", scope.Env())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	scope.Check(t)
}

func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: the state follows the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

var (
	objectFile = regexp.MustCompile(`objects/[0-9a-f]{2}/[0-9a-f]{38}$`)
	objectDir  = regexp.MustCompile(`objects/[0-9a-f]{2}(/|$)`)
	tmpObject  = regexp.MustCompile(`tmp_obj_[A-Za-z0-9]+$`)
)

// pattern folds the names that differ from run to run (object hashes, temporary names).
func pattern(p string) string {
	p = objectFile.ReplaceAllString(p, "objects/xx/<hash>")
	p = objectDir.ReplaceAllString(p, "objects/xx$1")
	return tmpObject.ReplaceAllString(p, "tmp_obj_<rand>")
}

// opTable summarizes what the server forwarded to fsys during a workload: one row per beat (a
// call the injector saw), by beat kind, call and path, and one line counting the other calls.
// It returns the Markdown section and keeps it for $FUSEFS_OPS_TABLE.
func opTable(t *testing.T, title string, events []traceEvent) string {
	type row struct{ beat, call, path string }
	beats := map[row]int{}
	var order []row
	others := map[string]int{}
	var pending []string
	calls, nbeats := 0, 0
	for _, e := range events {
		if e.beat != nil {
			pending = append(pending, e.beat.Kind.String())
			nbeats++
			continue
		}
		calls++
		c := e.call
		name := c.Op
		if c.Op == "OpenFile" {
			name += " " + fusefs.FlagString(c.Flag)
		}
		if c.Err != nil {
			name += " → " + errName(c.Err)
		}
		if len(pending) == 0 {
			others[name]++
			continue
		}
		path := pattern(c.Path)
		if c.Op == "Rename" {
			path += " → " + pattern(c.To)
		}
		r := row{strings.Join(pending, "+"), name, path}
		pending = nil
		if beats[r] == 0 {
			order = append(order, r)
		}
		beats[r]++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "### %s\n\n%d calls on fsys, %d of them beats. The others: ", title, calls, nbeats)
	var names []string
	for n := range others {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if others[names[i]] != others[names[j]] {
			return others[names[i]] > others[names[j]]
		}
		return names[i] < names[j]
	})
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", n, others[n])
	}
	b.WriteString(".\n\n| beat | call on fsys | path | count |\n|---|---|---|---:|\n")
	for _, r := range order {
		cell := strings.NewReplacer("|", `\|`).Replace
		fmt.Fprintf(&b, "| %s | %s | %s | %d |\n", r.beat, cell(r.call), cell(r.path), beats[r])
	}
	tablesMu.Lock()
	tables = append(tables, b.String())
	tablesMu.Unlock()
	t.Log("\n" + b.String())
	return b.String()
}

func errName(err error) string {
	if errors.Is(err, io.EOF) {
		return "EOF"
	}
	if name := unix.ErrnoName(fusefs.Errno(err)); name != "" {
		return name
	}
	return "error"
}
