package process

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// A command's process group is not all of it: a child that calls setsid(2), or forks twice to
// become a daemon, leaves the group, and a SIGKILL of the group would leave it running after the
// case, the campaign and chaoskit. So every command chaoskit starts is tracked as a whole: in a
// cgroup of its own where this machine has a writable cgroup v2 hierarchy (the command is
// started in it by clone3, so no descendant can be forked outside it, and cgroup.kill kills
// every process in it at once), and otherwise by a marker in its environment, which every
// descendant inherits unless it clears its environment: chaoskit finds them in /proc and kills
// them until none is left.

// envMarker is the variable whose value marks every process of one command: the command's
// CHAOSKIT_TOKEN, which state commands get too.
const envMarker = EnvToken

// descendants is every process of one command, found by its cgroup or by its marker.
type descendants struct {
	cgroup string   // the command's cgroup v2 directory, or "" where there is none
	fd     *os.File // open on cgroup until the command has started in it
	marker string   // the value of envMarker in the environment of every process of the command
}

// newDescendants makes the cgroup a command of the given marker will start in, if this
// machine has cgroups to make; name names it in chaoskit's cgroup.
func newDescendants(name, marker string) (*descendants, error) {
	d := &descendants{marker: marker}
	base := cgroupBase()
	if base == "" {
		return d, nil
	}
	dir := filepath.Join(base, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("process: making the cgroup %s: %w", dir, err)
	}
	fd, err := os.Open(dir)
	if err != nil {
		os.Remove(dir)
		return nil, fmt.Errorf("process: opening the cgroup %s: %w", dir, err)
	}
	d.cgroup, d.fd = dir, fd
	return d, nil
}

// attach makes attr start the command in the cgroup, if there is one.
func (d *descendants) attach(attr *syscall.SysProcAttr) {
	if d.fd != nil {
		attr.UseCgroupFD, attr.CgroupFD = true, int(d.fd.Fd())
	}
}

// started closes what starting the command needed.
func (d *descendants) started() {
	if d.fd != nil {
		d.fd.Close()
		d.fd = nil
	}
}

// kill kills every process of the command and waits (a while) until none is left, then removes
// the cgroup. It reports whether none is left.
func (d *descendants) kill() bool {
	d.started()
	if d.cgroup != "" {
		return killCgroup(d.cgroup)
	}
	return killMarked(d.marker)
}

// record is how the reaper finds the command's processes: its process group (pgid, once it is
// known), its cgroup and its marker.
func (d *descendants) record(pgid int) string {
	return fmt.Sprintf("%d\n%s\n%s\n", pgid, d.cgroup, d.marker)
}

// killRecorded kills the processes a record names.
func killRecorded(rec string) {
	f := strings.Split(rec, "\n")
	if len(f) < 3 {
		return
	}
	if pgid, err := strconv.Atoi(f[0]); err == nil && pgid > 1 {
		syscall.Kill(-pgid, syscall.SIGKILL)
	}
	if f[1] != "" {
		killCgroup(f[1])
	}
	killMarked(f[2])
}

// killTimeout bounds the wait for a command's processes to be gone after a SIGKILL: a process
// in uninterruptible sleep can take a while, and the reaper sees to what is left after it.
const killTimeout = 10 * time.Second

// killCgroup kills every process in the cgroup dir, waits until it is empty, and removes it.
func killCgroup(dir string) bool {
	if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0); errors.Is(err, os.ErrNotExist) {
		return true // gone already
	}
	for deadline := time.Now().Add(killTimeout); ; {
		if !populated(dir) {
			break
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	os.Remove(dir)
	return true
}

// populated reports whether a process is left in the cgroup dir (or in one below it).
func populated(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "populated "); ok {
			return v != "0"
		}
	}
	return false
}

// killMarked kills every process whose environment holds the marker, again until none is
// left: a process that forks between a look and a kill is found at the next look.
func killMarked(marker string) bool {
	if marker == "" {
		return true
	}
	want := []byte(envMarker + "=" + marker)
	for deadline := time.Now().Add(killTimeout); ; time.Sleep(time.Millisecond) {
		pids := marked(want)
		if len(pids) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// marked returns the processes, other than this one, whose environment holds the entry want
// (a zombie's environment reads empty: it is dead already).
func marked(want []byte) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if bytes.Equal(kv, want) {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// noCgroups makes every command tracked by its marker alone (the tests of that way set it).
var noCgroups atomic.Bool

// cgroupDir is the cgroup v2 directory the commands' cgroups go in, or "" (see makeCgroupBase).
var cgroupDir string

// cgroupBase returns the cgroup v2 directory the commands' cgroups go in, or "" for none.
func cgroupBase() string {
	if noCgroups.Load() {
		return ""
	}
	return cgroupDir
}

// makeCgroupBase makes the cgroup v2 directory of this chaoskit process, whose root directory
// is root, in its own cgroup: named chaoskit-PID-ROOT, so that the reaper finds it and a later
// chaoskit can tell whether its owner is gone, and recorded in root. It returns "" if this
// machine has no cgroup v2 hierarchy chaoskit may write, or one without cgroup.kill (Linux
// 5.14): then commands are tracked by their markers.
func makeCgroupBase(root string) string {
	own := ownCgroup()
	if own == "" {
		return ""
	}
	dir := filepath.Join(own, fmt.Sprintf("chaoskit-%d-%s", os.Getpid(), strings.TrimPrefix(filepath.Base(root), "chaoskit-")))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return ""
	}
	if _, err := os.Stat(filepath.Join(dir, "cgroup.kill")); err != nil {
		os.Remove(dir)
		return ""
	}
	if err := os.WriteFile(filepath.Join(root, "cgroup"), []byte(dir), 0o600); err != nil {
		os.Remove(dir)
		return ""
	}
	return dir
}

// removeStaleCgroups removes the cgroup directories, in this process's own cgroup, of chaoskit
// processes that are gone (whose reaper died with them).
func removeStaleCgroups() {
	own := ownCgroup()
	if own == "" {
		return
	}
	dirs, _ := filepath.Glob(filepath.Join(own, "chaoskit-*-*"))
	for _, dir := range dirs {
		pid, _ := strconv.Atoi(strings.Split(filepath.Base(dir), "-")[1])
		if pid > 0 && pid != os.Getpid() && gone(pid) {
			removeCgroups(dir)
		}
	}
}

// ownCgroup returns the directory of this process's own cgroup in the cgroup v2 hierarchy, or
// "" if there is none.
func ownCgroup() string {
	mnt := cgroup2Mount()
	if mnt == "" {
		return ""
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return filepath.Join(mnt, p)
		}
	}
	return ""
}

// cgroup2Mount returns where the cgroup v2 hierarchy is mounted, or "".
func cgroup2Mount() string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source super
		fields := strings.Fields(sc.Text())
		for i, fld := range fields {
			if fld == "-" && i+1 < len(fields) && fields[i+1] == "cgroup2" && len(fields) > 4 {
				return fields[4]
			}
		}
	}
	return ""
}

// recordedCgroup returns the cgroup directory recorded in a chaoskit's root directory, or "".
func recordedCgroup(root string) string {
	b, _ := os.ReadFile(filepath.Join(root, "cgroup"))
	return string(b)
}

// removeCgroups kills what is left in the commands' cgroups under base, a chaoskit's cgroup
// directory, and removes them and it.
func removeCgroups(base string) {
	if base == "" {
		return
	}
	ents, _ := os.ReadDir(base)
	for _, e := range ents {
		if e.IsDir() {
			killCgroup(filepath.Join(base, e.Name()))
		}
	}
	os.Remove(base)
}
