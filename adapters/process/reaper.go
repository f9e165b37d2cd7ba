package process

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/chaoskit/chaoskit/adapters/process/fusefs"
)

// Everything a Target makes on the machine lives under one root directory per chaoskit process
// (os.TempDir()/chaoskit-*): each process's state directory and socket, and a record of how to
// find each command's processes (descendants.go). A reaper watches over it: a helper (see
// Init) started in a process group of its own with the read end of a pipe whose write end only
// this process holds. When this process exits, however it exits (SIGKILL included), the pipe
// closes and the reaper kills every command still recorded, the FUSE helper included, detaches
// what is still mounted and removes the root. A root whose owner is gone and whose reaper died
// too is removed by the next chaoskit process to make one.

var (
	rootOnce sync.Once
	rootDir  string
	rootErr  error
)

// maxTempBase is the longest temporary directory under which a process's socket,
// <base>/chaoskit-NNNNNNNNNN/pNNNNNNNNNN/sock, fits in the 107 bytes a Unix socket's path may
// have on Linux.
const maxTempBase = 107 - len("/chaoskit-1234567890/p1234567890/sock")

// tempBase is the directory chaoskit's own directory goes in: $TMPDIR, or /tmp when $TMPDIR is
// too long for a socket path under it.
func tempBase() string {
	if dir := os.TempDir(); len(dir) <= maxTempBase {
		return dir
	}
	return "/tmp"
}

// root returns this process's root directory, making it and starting its reaper the first
// time.
func root() (string, error) {
	if !initialized.Load() {
		return "", errNoInit
	}
	rootOnce.Do(func() {
		removeStale()
		dir, err := os.MkdirTemp(tempBase(), "chaoskit-")
		if err == nil {
			err = os.Mkdir(filepath.Join(dir, "groups"), 0o700)
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, "owner"), []byte(strconv.Itoa(os.Getpid())), 0o600)
		}
		if err == nil {
			cgroupDir = makeCgroupBase(dir)
			err = startReaper(dir)
		}
		if err != nil {
			rootErr = fmt.Errorf("process: making chaoskit's directory: %w", err)
			return
		}
		rootDir = dir
	})
	return rootDir, rootErr
}

// startReaper starts the reaper of dir and leaves it the read end of a pipe.
func startReaper(dir string) error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	_, err = startHelper("reaper", []string{dir}, r)
	r.Close()
	if err != nil {
		w.Close()
		return err
	}
	reaperPipe = w // held open, never written: it closes when this process exits
	return nil
}

// reaperPipe is the write end of the reaper's pipe, kept open for the life of the process.
var reaperPipe *os.File

// reap is the reaper's main: it waits until its parent has gone, then cleans up after it.
//
// The pipe alone would not be enough if chaoskit waited on one of its own FUSE mounts when it
// is SIGKILLed: that thread would wait for an answer no one is left to give, the process would
// stay a zombie holding the pipe, and only aborting the mount's connection would let it go.
// chaoskit makes no request on its own mounts (fusefs.Options.ServeOnly); as a backstop the
// reaper also watches the owner's pid, and cleans up (aborting the connections) as soon as the
// owner is gone or a zombie.
func reap(dir string) {
	cgroup := recordedCgroup(dir) // now: dir may be gone by the time the owner is
	eof := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.NewFile(3, "parent"))
		close(eof)
	}()
	owner := ownerOf(dir)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-eof:
			clean(dir, cgroup)
			return
		case <-tick.C:
			if owner > 0 && gone(owner) {
				clean(dir, cgroup)
				return
			}
		}
	}
}

// ownerOf returns the pid of the chaoskit process that owns dir, or 0 if dir does not say.
func ownerOf(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, "owner"))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(string(b))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

// gone reports whether process pid has exited or is a zombie: dead, though a thread stuck in
// the kernel may keep it from being reaped.
func gone(pid int) bool {
	if syscall.Kill(pid, 0) == syscall.ESRCH {
		return true
	}
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	// pid (comm) S ...: the state follows the last ')', as comm may hold one.
	if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) {
		return b[i+2] == 'Z' || b[i+2] == 'X'
	}
	return false
}

// clean kills the commands recorded under dir (their process groups, cgroups and marked
// processes) and whatever is left in the cgroup directory cgroup, unmounts what is mounted under
// dir (the state directories of processes on a FUSE disk), and removes it.
func clean(dir, cgroup string) {
	groups, _ := os.ReadDir(filepath.Join(dir, "groups"))
	for _, g := range groups {
		if rec, err := os.ReadFile(filepath.Join(dir, "groups", g.Name())); err == nil {
			killRecorded(string(rec))
		}
	}
	removeCgroups(cgroup)
	fusefs.Cleanup(dir) // mounts left by a process that could not unmount, aborted first
	os.RemoveAll(dir)
}

// register records for the reaper how to find the processes of the command called name (see
// descendants.record); unregister forgets them.
func register(name, rec string) {
	os.WriteFile(filepath.Join(rootDir, "groups", name), []byte(rec), 0o600)
}

func unregister(name string) { os.Remove(filepath.Join(rootDir, "groups", name)) }

// removeStale removes the roots of chaoskit processes that are gone, and whose reaper did not
// clean up after them.
func removeStale() {
	dirs, _ := filepath.Glob(filepath.Join(tempBase(), "chaoskit-*"))
	for _, dir := range dirs {
		if pid := ownerOf(dir); pid > 0 && gone(pid) { // 0: not one of ours, or not finished being made
			clean(dir, recordedCgroup(dir))
		}
	}
	removeStaleCgroups()
}
