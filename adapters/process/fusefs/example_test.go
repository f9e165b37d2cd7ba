package fusefs_test

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/chaoskit/chaoskit/adapters/process/fusefs"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/spf13/afero"
)

// A child process writes on the mount, the power is cut, and the disk keeps what was fsynced.
// It prints a: "kept\n", b exists: false. (Compiled, not run, since it needs FUSE.)
func ExampleMount() {
	disk := faults.NewDisk(faults.DiskOptions{})
	dir, _ := os.MkdirTemp("", "chaoskit-state")
	srv, err := fusefs.Mount(dir, faults.New(disk, nil), fusefs.Options{})
	if err != nil {
		fmt.Println(err) // fusefs.Available says what is missing
		return
	}
	// The child changes into the mount itself (see "Starting processes on the mount").
	// sync(1) with names fsyncs each: the file a, then the directory that holds it.
	exec.Command("sh", "-c", `cd "$1" && echo kept > a && sync a . && echo lost > b`, "sh", dir).Run()
	srv.Unmount()
	os.Remove(dir)

	disk.Crash(faults.Fault{Kind: faults.Power}, rand.New(rand.NewPCG(1, 2)))
	a, _ := afero.ReadFile(disk, "a")
	_, err = disk.Stat("b")
	fmt.Printf("a: %q, b exists: %v\n", a, err == nil)
}

// Options.Do runs every call the mount makes on the afero.Fs where the caller wants it: here on
// one goroutine, one request at a time, as chaoskit's process adapter runs them on the goroutine
// of the simulated process, between its other beats. (Compiled, not run, since it needs FUSE.)
func ExampleOptions_do() {
	ops := make(chan func())
	go func() { // the goroutine that owns the disk: a crash at a beat may end it (runtime.Goexit)
		for op := range ops {
			op()
		}
	}()
	onLoop := func(op func()) {
		done := make(chan struct{})
		ops <- func() { defer close(done); op() }
		<-done
	}
	disk := faults.NewDisk(faults.DiskOptions{})
	dir, _ := os.MkdirTemp("", "chaoskit-state")
	srv, err := fusefs.Mount(dir, faults.New(disk, nil), fusefs.Options{Do: onLoop})
	if err != nil {
		fmt.Println(err)
		return
	}
	exec.Command("sh", "-c", `cd "$1" && echo x > a && sync a .`, "sh", dir).Run()
	srv.Unmount()
	os.Remove(dir)
	close(ops)
}

func ExampleErrno() {
	full := &fs.PathError{Op: "write", Path: "wal.log", Err: faults.Injected(syscall.ENOSPC)}
	fmt.Println(fusefs.Errno(full) == syscall.ENOSPC, fusefs.Errno(fs.ErrNotExist) == syscall.ENOENT)
	// Output: true true
}

func ExampleFlagString() {
	fmt.Println(fusefs.FlagString(os.O_RDWR | os.O_CREATE | os.O_EXCL))
	// Output: O_RDWR|O_CREAT|O_EXCL
}

func ExampleCall_String() {
	fmt.Println(fusefs.Call{Op: "WriteAt", Path: "db-journal", Off: 512, Len: 4096})
	// Output: WriteAt db-journal +4096B @512
}

func ExampleCleanup() {
	// Before a run: tear down the mounts a killed run left under chaoskit's temporary directory.
	gone, err := fusefs.Cleanup(filepath.Join(os.TempDir(), "chaoskit-no-such-dir"))
	fmt.Println(len(gone), err)
	// Output: 0 <nil>
}
