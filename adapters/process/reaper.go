package process

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Everything a Target makes on the machine lives under one root directory per chaoskit process
// (os.TempDir()/chaoskit-*): each process's state directory and socket, and a record of each
// command's process group. A reaper watches over it: a copy of the running program, started
// in a process group of its own with the read end of a pipe whose write end only this process
// holds. When this process exits, however it exits (SIGKILL included), the pipe closes and the
// reaper kills every process group still recorded and removes the root. A root whose owner is
// gone and whose reaper died too is removed by the next chaoskit process to make one.

// envReaper, set in the reaper's environment, names the root it watches over.
const envReaper = "CHAOSKIT_REAPER"

var (
	rootOnce sync.Once
	rootDir  string
	rootErr  error
)

func init() {
	if dir := os.Getenv(envReaper); dir != "" {
		reap(dir)
		os.Exit(0)
	}
}

// root returns this process's root directory, making it and starting its reaper the first
// time.
func root() (string, error) {
	rootOnce.Do(func() {
		removeStale()
		dir, err := os.MkdirTemp("", "chaoskit-")
		if err == nil {
			err = os.Mkdir(filepath.Join(dir, "groups"), 0o700)
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, "owner"), []byte(strconv.Itoa(os.Getpid())), 0o600)
		}
		if err == nil {
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
	self, err := os.Executable()
	if err != nil {
		return err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), envReaper+"="+dir)
	cmd.ExtraFiles = []*os.File{r}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a ^C to chaoskit's group must not take it too
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return err
	}
	r.Close()
	reaperPipe = w // held open, never written: it closes when this process exits
	go cmd.Wait()
	return nil
}

// reaperPipe is the write end of the reaper's pipe, kept open for the life of the process.
var reaperPipe *os.File

// reap is the reaper's main: it waits until its parent has gone, then cleans up after it.
func reap(dir string) {
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	io.Copy(io.Discard, os.NewFile(3, "parent"))
	clean(dir)
}

// clean kills the process groups recorded under dir, unmounts what is mounted under it, and
// removes it.
func clean(dir string) {
	groups, _ := os.ReadDir(filepath.Join(dir, "groups"))
	for _, g := range groups {
		if pgid, err := strconv.Atoi(g.Name()); err == nil && pgid > 1 {
			syscall.Kill(-pgid, syscall.SIGKILL)
		}
	}
	for _, m := range mountsUnder(dir) {
		syscall.Unmount(m, syscall.MNT_DETACH)
	}
	os.RemoveAll(dir)
}

// register records a command's process group for the reaper; unregister forgets it.
func register(pgid int) {
	os.WriteFile(filepath.Join(rootDir, "groups", strconv.Itoa(pgid)), nil, 0o600)
}

func unregister(pgid int) { os.Remove(filepath.Join(rootDir, "groups", strconv.Itoa(pgid))) }

// removeStale removes the roots of chaoskit processes that are gone, and whose reaper did not
// clean up after them.
func removeStale() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "chaoskit-*"))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, "owner"))
		if err != nil {
			continue // not one of ours, or not finished being made
		}
		pid, err := strconv.Atoi(string(b))
		if err != nil || pid <= 0 || syscall.Kill(pid, 0) != syscall.ESRCH {
			continue
		}
		clean(dir)
	}
}

// mountsUnder lists the mount points under dir, deepest first, from /proc/self/mountinfo.
func mountsUnder(dir string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && strings.HasPrefix(fields[4], dir+"/") {
			out = append(out, unescapeMount(fields[4]))
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes of spaces and the like.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
