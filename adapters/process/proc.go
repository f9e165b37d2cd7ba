package process

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/chaoskit/chaoskit/adapters/process/fusefs"
	"github.com/chaoskit/chaoskit/harness"
)

// proc is one process of a Target, three concerns apart: the command (child: its process
// group and cgroup, killed with all it started), the protocol (session: the socket and the
// requests) and the state directory (bridge: a FUSE mount of chaoskit's disk, or a copy of it).
// The serve loop brings them together on the goroutine that runs the process in the simulation.
type proc struct {
	t     *Target
	env   *harness.Env
	dir   string // this process's own directory, under the root
	child *child
	sess  *session
	disk  *bridge

	stopOnce sync.Once
	stopErr  error
}

// start prepares the process's directory, state directory and socket, and starts the command.
func start(t *Target, env *harness.Env) (*proc, error) {
	root, err := root()
	if err != nil {
		return nil, err
	}
	p := &proc{t: t, env: env}
	if p.dir, err = os.MkdirTemp(root, "p"); err != nil {
		return nil, fmt.Errorf("process: %w", err)
	}
	state, sock, token := filepath.Join(p.dir, "state"), filepath.Join(p.dir, "sock"), newToken()
	if p.disk, err = bridgeTo(t, env, state); err != nil {
		os.RemoveAll(p.dir)
		return nil, err
	}
	if p.sess, err = listen(t, env, sock, token, state, p.disk.atBeat); err != nil {
		p.disk.close()
		p.cleanup()
		return nil, err
	}
	vars := []string{EnvSocket + "=" + sock, EnvProtocol + "=" + strconv.Itoa(Version),
		EnvStateDir + "=" + state, EnvProcess + "=" + strconv.Itoa(env.Process()),
		EnvAttempt + "=" + strconv.Itoa(env.Process()), EnvWorker + "=" + strconv.Itoa(env.Worker())}
	cmd := command{argv: t.Argv, dir: t.Dir, env: append(append([]string(nil), t.Env...), vars...), name: filepath.Base(p.dir), marker: token,
		trapSyncs: t.Disk == FUSE}
	if p.child, err = startChild(cmd); err != nil { // the token is the marker: CHAOSKIT_TOKEN
		p.sess.close()
		p.disk.close()
		p.cleanup()
		return nil, err
	}
	if p.child.syncs != nil {
		go p.child.syncs.serve(p.disk.onSync)
	}
	return p, nil
}

// newToken returns a new random token.
func newToken() string {
	var tok [16]byte
	rand.Read(tok[:])
	return hex.EncodeToString(tok[:])
}

// serve runs the process: it answers the command's requests and its mount's operations, one
// at a time and in order, until the command has exited and its connection is closed.
func (p *proc) serve(ctx context.Context) (any, error) {
	lines, exited := p.sess.lines, p.child.exited
	for lines != nil || exited != nil {
		select {
		case line, ok := <-lines:
			if !ok {
				lines = nil
				continue
			}
			if err := p.sess.handle(ctx, line); err != nil {
				p.stop()
				return nil, err
			}
		case o := <-p.disk.fsops:
			p.disk.run(o)
		case err := <-p.sess.helloErr:
			p.stop()
			return nil, err
		case <-exited:
			exited = nil
			p.sess.endAccepting() // no connection will come
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	res, err := p.sess.outcome()
	if err != nil {
		return nil, err
	}
	if err := p.child.err(); err != nil {
		return nil, err
	}
	if !p.sess.connected() && p.disk.ops == 0 {
		return nil, errNoConnection
	}
	return res, nil
}

// errNoConnection fails a process that exits without having connected or touched its FUSE
// disk: chaoskit saw nothing it did (a program that is not a harness, or one that forgot its
// client). A command that only works on files is a target on a FUSE disk, whose every file
// operation is a beat; a restart that finds the work done connects to say so (done).
var errNoConnection = errors.New("the command exited without connecting to chaoskit: a harness connects to $" + EnvSocket +
	" with a client of the protocol (PROTOCOL.md: Python ck = chaoskit.connect(), JavaScript await connect(), Go client.Connect()), " +
	"makes its requests through it (call, model, sleep, mark after each durable step) and ends with done")

// stop ends the process, once: it kills the command with all it started and waits for it,
// closes the socket, unmounts the state directory (FUSE) or copies it back to the disk
// (plain), and removes the process's directory. It runs when Run returns and, through
// Env.AtEnd, when a fault crashes the process, before the crash reaches the disk.
func (p *proc) stop() {
	p.stopOnce.Do(func() {
		p.disk.stopping() // first: an operation the dying command left on the mount fails, and it can die
		p.child.kill()
		p.sess.close()
		p.stopErr = p.disk.close()
		p.cleanup()
	})
}

// cleanup removes the process's directory, unless something is still mounted in it (an unmount
// failed): the reaper, which aborts and detaches mounts first, removes it then.
func (p *proc) cleanup() {
	if err := removeUnmounted(p.dir); err != nil && p.stopErr == nil {
		p.stopErr = err
	}
}

// removeUnmounted removes the directory dir, unless a FUSE disk is still mounted under it.
func removeUnmounted(dir string) error {
	if left, err := fusefs.Mounts(dir); len(left) > 0 || err != nil {
		return fmt.Errorf("process: %s is left for the reaper: still mounted: %v %v", dir, left, err)
	}
	return os.RemoveAll(dir)
}
