package process

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/chaoskit/chaoskit/adapters/process/fusefs"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/spf13/afero"
	"golang.org/x/sys/unix"
)

// bridge is how one process's state directory reaches chaoskit's disk: a FUSE mount of it, each
// of whose operations runs on the serve loop (every mutating one a beat), or a real directory
// holding a copy of it, copied back before each beat and at the end (copy.go).
type bridge struct {
	t     *Target
	env   *harness.Env
	disk  afero.Fs // the disk itself, outside the fault layer: what a plain disk copies in and out
	state string   // the state directory the command sees
	fsys  afero.Fs // what the mount serves: the disk through the fault layer, or (calls) the disk
	srv   *fusefs.Server
	fsops chan fsop     // the mount's operations, for the serve loop to run
	fuse  fuseHeld      // those the command's threads made, held until quiescence
	dead  chan struct{} // closed once the process is stopping: the mount runs nothing more
	ops   int           // the mount's operations run
	held  tree          // on a plain disk, what the disk holds: the tree last copied in or out
}

// unwrap returns the filesystem under the fault layer's, for copying outside any beat.
func unwrap(fsys afero.Fs) afero.Fs {
	if f, ok := fsys.(*faults.FS); ok {
		return f.Unwrap()
	}
	return fsys
}

// bridgeTo makes the state directory state: the disk mounted (FUSE), or a copy of it (plain).
func bridgeTo(t *Target, env *harness.Env, state string) (*bridge, error) {
	b := &bridge{t: t, env: env, disk: unwrap(env.FS()), state: state, fsops: make(chan fsop), dead: make(chan struct{})}
	if err := os.Mkdir(state, 0o700); err != nil {
		return nil, fmt.Errorf("process: %w", err)
	}
	if t.Disk != FUSE {
		var err error
		if b.held, err = copyIn(b.disk, state); err != nil {
			return nil, fmt.Errorf("process: copying the disk into %s: %w", state, err)
		}
		return b, nil
	}
	b.fsys = env.FS() // every operation a beat
	if t.Beats == CallBeats {
		b.fsys = b.disk // no operation a beat: storage faults fire at requests
	}
	// The FUSE helper serves the mount, and forwards each request here, where it runs on the
	// serve loop: if chaoskit dies, the helper's connection ends and it fails what is left, so
	// that nothing ever waits on a dead process.
	var err error
	if b.srv, err = mountFUSE(state, b.fsys, fusefs.Options{DoRequest: b.onLoop, Now: env.Now}); err != nil {
		return nil, fmt.Errorf("process: mounting the disk on %s: %w", state, err)
	}
	return b, nil
}

// atBeat runs before each beat of the process: on a plain disk, it copies the state directory
// back, so that the disk holds at this beat what a kill here leaves.
func (b *bridge) atBeat() error {
	if b.srv != nil {
		return nil
	}
	var err error
	b.held, err = syncOut(b.state, b.disk, b.held)
	return err
}

// run runs one operation of the mount; the serve loop calls it.
func (b *bridge) run(o fsop) {
	b.ops++
	o.op()
	close(o.done)
}

// stopping makes the mount run nothing more: an operation the dying command left waiting
// fails, and the command can die.
func (b *bridge) stopping() {
	select {
	case <-b.dead:
	default:
		close(b.dead)
	}
}

// close unmounts the state directory (FUSE) or copies it back to the disk (plain), once the
// command is dead.
func (b *bridge) close() error {
	b.stopping()
	if b.srv != nil {
		if err := b.srv.Unmount(); err != nil {
			return fmt.Errorf("process: %w", err)
		}
		return nil
	}
	var err error
	b.held, err = syncOut(b.state, b.disk, b.held)
	return err
}

// fsop is one filesystem operation of the mount, for the serve loop to run.
type fsop struct {
	req  fusefs.Request
	op   func()
	done chan struct{}
}

// onLoop runs op, a filesystem operation of the mount (the request r), on the goroutine that runs the process
// (the serve loop), where every Env call is made, and returns when it has run. If the process
// is stopping, or op crashed it (ending the serve loop's goroutine), onLoop returns without
// waiting: the mount answers EIO.
func (b *bridge) onLoop(r fusefs.Request, op func()) {
	o := fsop{req: r, op: op, done: make(chan struct{})}
	select {
	case b.fsops <- o:
	case <-b.dead:
		return
	}
	select {
	case <-o.done:
	case <-b.dead:
	}
}

// onSync makes the disk durable for a sync(2) or syncfs(2) of the command (synctrap.go), on the
// serve loop: it fsyncs every file and directory, each fsync a beat as the command's own would
// be. A syncfs of a descriptor outside the state directory is none of chaoskit's business.
// It returns the errno a syncfs fails with (an injected fsync failure: EIO, as Linux reports a
// writeback error since 5.8); sync(2) reports none.
func (b *bridge) onSync(nr int, path string) syscall.Errno {
	if nr == unix.SYS_SYNCFS && path != b.state && !strings.HasPrefix(path, b.state+"/") {
		return 0
	}
	var err error
	b.onLoop(fusefs.Request{}, func() { err = b.syncAll() })
	if err != nil && nr == unix.SYS_SYNCFS {
		return syscall.EIO
	}
	return 0
}

// syncAll fsyncs every file the mount serves, then every directory, deepest first: as sync(2)
// writes back the files' data before it commits the directories' entries, so that a power cut
// in the middle of it never keeps a name whose data it lost.
func (b *bridge) syncAll() error {
	var files, dirs []string
	var errs []error
	afero.Walk(b.fsys, ".", func(p string, fi fs.FileInfo, err error) error {
		switch {
		case err != nil:
			errs = append(errs, err)
		case fi.IsDir():
			dirs = append(dirs, p)
		default:
			files = append(files, p)
		}
		return nil
	})
	slices.Reverse(dirs) // children before their parents, the root last
	for _, p := range append(files, dirs...) {
		f, err := b.fsys.Open(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := f.Sync(); err != nil {
			errs = append(errs, err)
		}
		f.Close()
	}
	return errors.Join(errs...)
}
