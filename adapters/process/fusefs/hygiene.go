package fusefs

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// install is the command that brings FUSE to a Debian or Ubuntu machine.
const install = "apt-get install fuse3"

// Available reports whether this process can mount a FUSE filesystem, and if not, says in one
// line what is missing and how to get it: the fuse kernel module, /dev/fuse, the permission to
// open it, or the permission to mount (root with CAP_SYS_ADMIN mounts directly; anyone else
// needs the fusermount3 helper, which opens /dev/fuse as the calling user).
func Available() error {
	if !kernelHasFuse() {
		return fmt.Errorf("fusefs: the kernel has no fuse filesystem: load the module (modprobe fuse; %s)", install)
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return fmt.Errorf("fusefs: /dev/fuse is missing: load the module and create the device (modprobe fuse; %s), or pass --device /dev/fuse to the container", install)
	}
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("fusefs: no permission to open /dev/fuse (%v): run as root, or give it its usual mode (chmod 0666 /dev/fuse; %s)", errors.Unwrap(err), install)
	}
	f.Close()
	if os.Geteuid() == 0 && hasCapSysAdmin() {
		return nil
	}
	if fusermount() == "" {
		return fmt.Errorf("fusefs: no permission to mount (not root with CAP_SYS_ADMIN) and no fusermount3 helper: %s", install)
	}
	return nil
}

func kernelHasFuse() bool {
	b, err := os.ReadFile("/proc/filesystems")
	if err != nil {
		return true // cannot tell: let the mount say
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[len(f)-1] == "fuse" {
			return true
		}
	}
	return false
}

// hasCapSysAdmin reports whether the process may call mount(2).
func hasCapSysAdmin() bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && caps&(1<<21) != 0 // CAP_SYS_ADMIN
		}
	}
	return false
}

func fusermount() string {
	for _, bin := range []string{"fusermount3", "fusermount"} {
		if p, err := exec.LookPath(bin); err == nil {
			return p
		}
	}
	return ""
}

// Mounts lists the FUSE mounts of this package (type FSType) whose mount point is under
// prefix, an absolute directory, as /proc/self/mountinfo shows them.
func Mounts(prefix string) ([]string, error) {
	ms, err := mounts(prefix)
	dirs := make([]string, len(ms))
	for i, m := range ms {
		dirs[i] = m.dir
	}
	return dirs, err
}

type mount struct {
	dir  string
	conn uint32 // the FUSE connection number: the minor number of the mount's device
}

// minor parses the minor number out of mountinfo's "major:minor" for an anonymous device.
func minor(majmin string) uint32 {
	maj, min, ok := strings.Cut(majmin, ":")
	if !ok || maj != "0" {
		return 0
	}
	n, _ := strconv.ParseUint(min, 10, 32)
	return uint32(n)
}

func mounts(prefix string) ([]mount, error) {
	prefix, err := cleanPrefix(prefix)
	if err != nil {
		return nil, err
	}
	return mountTable(prefix)
}

// mountTable lists this package's mounts at or under prefix, a clean absolute path with its
// symbolic links resolved, from the mount table alone: it makes no request on any mount.
func mountTable(prefix string) ([]mount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("fusefs: %w", err)
	}
	defer f.Close()
	var found []mount
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source super
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, fld := range fields {
			if fld == "-" {
				sep = i
				break
			}
		}
		if len(fields) < 5 || sep < 0 || sep+1 >= len(fields) {
			continue
		}
		if fields[sep+1] != FSType {
			continue
		}
		mp := unescapeMountinfo(fields[4])
		if mp == prefix || strings.HasPrefix(mp, prefix+"/") || prefix == "/" {
			found = append(found, mount{dir: mp, conn: minor(fields[2])})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("fusefs: reading /proc/self/mountinfo: %w", err)
	}
	return found, nil
}

// Cleanup unmounts every mount of this package under prefix, an absolute directory such as the
// temporary directory chaoskit makes its mount points in: mounts left behind by a process that
// was SIGKILLed before it could unmount (their mount points answer "transport endpoint is not
// connected"). It aborts each mount's FUSE connection (as Unmount does), which also frees a
// process stuck in the kernel on a request to a server that died, then detaches it. It
// returns the mount points it detached. Do not call it while a mount under prefix is in use:
// it tears down live mounts too.
func Cleanup(prefix string) ([]string, error) {
	ms, err := mounts(prefix)
	if err != nil {
		return nil, err
	}
	var done []string
	var errs []error
	// Deepest first, so that a mount inside another comes off before its parent.
	for i := len(ms) - 1; i >= 0; i-- {
		if err := forceUnmount(ms[i].dir, ms[i].conn); err != nil {
			errs = append(errs, err)
			continue
		}
		done = append(done, ms[i].dir)
	}
	return done, errors.Join(errs...)
}

func cleanPrefix(prefix string) (string, error) {
	if prefix == "" || !filepath.IsAbs(prefix) {
		return "", fmt.Errorf("fusefs: mount prefix %q is not an absolute path", prefix)
	}
	p := filepath.Clean(prefix)
	// The mount table shows resolved paths (/tmp may be a symbolic link).
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	return p, nil
}

// unescapeMountinfo undoes the octal escapes (\040 for a space) of /proc/self/mountinfo.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
