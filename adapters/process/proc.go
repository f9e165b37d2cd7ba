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
	"syscall"
	"time"

	"github.com/chaoskit/chaoskit/adapters/process/fusefs"
	"github.com/chaoskit/chaoskit/adapters/services"
	"github.com/chaoskit/chaoskit/harness"
)

// proc is one process of a Target, three concerns apart: the command (child: its process
// group and cgroup, killed with all it started, and its watcher: its trap and its quiescence),
// the protocol (session: the socket and the requests, admitted by the admission) and the state
// directory (bridge: a FUSE mount of chaoskit's disk, or a copy of it). The serve loop brings
// them together on the goroutine that runs the process in the simulation.
type proc struct {
	t     *Target
	env   *harness.Env
	dir   string // this process's own directory, under the root
	child *child
	sess  *session
	disk  *bridge
	adm   *admission
	owed  *ledger
	front *services.Front // its services (Target.Services), or nil

	doorMu  sync.Mutex
	doorErr error // what failed it from its services (doorFailed)
	w       *watcher

	stopOnce sync.Once
	stopErr  error
	stats    TrapStats

	// asked says a deploy has asked the process to stop (envlink.Ext.AtStop), and termSent that
	// the serve loop has sent the command SIGTERM for it. Both are the simulation's: set and
	// read while it holds the baton.
	asked, termSent bool
}

// start prepares the process's directory, state directory and socket, and starts the command
// and its watcher.
func start(t *Target, env *harness.Env) (*proc, error) {
	root, err := root()
	if err != nil {
		return nil, err
	}
	p := &proc{t: t, env: env, owed: &ledger{}, adm: newAdmission(env)}
	if p.dir, err = os.MkdirTemp(root, "p"); err != nil {
		return nil, fmt.Errorf("process: %w", err)
	}
	state, sock, token := filepath.Join(p.dir, "state"), filepath.Join(p.dir, "sock"), newToken()
	if p.disk, err = bridgeTo(t, env, state); err != nil {
		os.RemoveAll(p.dir)
		return nil, err
	}
	if p.sess, err = listen(t, env, sock, token, state, p.disk.atBeat, p.adm, p.owed); err != nil {
		p.disk.close()
		p.cleanup()
		return nil, err
	}
	vars := []string{EnvSocket + "=" + sock, EnvProtocol + "=" + strconv.Itoa(Version),
		EnvStateDir + "=" + state, EnvProcess + "=" + strconv.Itoa(env.Process()),
		EnvAttempt + "=" + strconv.Itoa(env.Process()), EnvWorker + "=" + strconv.Itoa(env.Worker())}
	svc, err := p.servicesEnv(token)
	if err != nil {
		p.sess.close()
		p.disk.close()
		p.cleanup()
		return nil, err
	}
	vars = append(vars, svc...)
	own := expandEnv(t.Env, append(vars, EnvToken+"="+token))
	cmd := command{argv: t.Argv, dir: t.Dir, env: append(own, vars...), name: filepath.Base(p.dir), marker: token,
		trapSyncs: t.Disk == FUSE, virtual: t.virtualClock()}
	registerProc(token, p)                          // before it starts: its first request may come at once
	if p.child, err = startChild(cmd); err != nil { // the token is the marker: CHAOSKIT_TOKEN
		unregisterProc(p)
		p.sess.close()
		p.disk.close()
		p.cleanup()
		return nil, err
	}
	sc := scanner{cgroup: p.child.all.cgroup, root: p.child.cmd.Process.Pid}
	if t.Disk == FUSE {
		sc.fuse = &p.disk.fuse
	}
	var shared sharedState
	helper := 0
	if tr := p.child.tr; tr != nil {
		sc.root, shared, helper = tr.pid, tr.shared, tr.helper
	}
	var onSync func(int, string) syscall.Errno
	if t.Disk == FUSE {
		onSync = p.disk.onSync
	}
	inFlight := func() bool { return doorsInFlight(p.front != nil) }
	if p.w, err = newWatcher(sc, p.child.listener, p.child.virtual, helper, shared, p.owedNow, inFlight, onSync, env.Now()); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// owedNow is what chaoskit owes the command: on its socket and at the HTTP front doors.
func (p *proc) owedNow() (int, uint64) {
	n, g := p.owed.owed()
	m, h := doorsOwed()
	return n + m, g + h
}

// newToken returns a new random token.
func newToken() string {
	var tok [16]byte
	rand.Read(tok[:])
	return hex.EncodeToString(tok[:])
}

// serve runs the process until the command has exited, its connections have ended and every
// request it made has been answered. It holds the baton while the command runs, so that nothing
// else of the simulation moves meanwhile; once the watcher finds the command quiescent, it
// hands over the next reply (one at a time, a quiescence apart), or else admits the requests
// waiting and waits in the simulation, letting their threads run, until a reply is ready or the
// clock reaches the deadline of a held wait of the command's (which then times out: a beat).
// With nothing to wait for, it waits for the command, which waits for something outside
// chaoskit: the hang detector's wall clock decides.
func (p *proc) serve(ctx context.Context) (any, error) {
	s, a, w, ext := p.sess, p.adm, p.w, p.adm.ext
	exited, ended := p.child.exited, s.ended
	ext.AtStop(func() {
		p.asked = true
		if a.wake != nil {
			a.wake() // out of its hold: the loop sends the signal
		}
	})
	w.order(cmdWant)
	idle := false // quiescent with nothing to wait for: the next event asks again
	event := func() {
		if idle {
			idle = false
			w.order(cmdWant)
		}
	}
	for {
		if p.asked && !p.termSent {
			p.terminate()
			idle = false
			w.order(cmdWant)
		}
		select {
		case <-a.notify:
			a.answerReads(ctx)
			if s.failed != nil {
				p.stop()
				return nil, s.failed
			}
			event()
		case <-w.activity:
			event()
		case o := <-p.disk.fsops:
			if o.req.Pid == 0 || !o.req.Changes { // see fuseheld.go
				p.disk.run(o)
				event()
				continue
			}
			// A change a thread made: held until quiescence, which the watcher looks for at
			// once rather than after the back-off its busy scans reached (up to 2 ms a change).
			p.disk.fuse.hold(o)
			p.owed.gen.Add(1)
			idle = false
			w.order(cmdWant)
		case err := <-s.helloErr:
			p.stop()
			return nil, err
		case <-exited:
			exited = nil
			s.endAccepting() // no connection will come
			event()
		case <-ended:
			ended = nil
			event()
		case <-ctx.Done():
			return nil, ctx.Err()
		case q := <-w.quiet:
			if _, gen := p.owedNow(); gen != q.gen {
				w.order(cmdWant) // something happened since: look again
				continue
			}
			if p.termSent {
				exited, ended = p.diedOfTerm(exited, ended)
			}
			if v := time.Unix(0, w.now.Load()); v.After(p.env.Now()) { // the spin guard moved the clock
				if err := ext.Hold(ctx, v); err != nil {
					return nil, err
				}
				w.order(cmdWant)
				continue
			}
			if o, ok := p.disk.fuse.next(); ok {
				p.owed.gen.Add(1)
				p.disk.run(o)
				w.order(cmdWant)
				continue
			}
			if r := a.next(); r != nil {
				p.owed.gen.Add(1)
				r.deliver(r.reply)
				if s.failed != nil {
					p.stop()
					return nil, s.failed
				}
				w.order(cmdWant)
				continue
			}
			if n := a.admitAll(); n > 0 {
				w.requests.Add(uint64(n))
			}
			var until time.Time
			if q.next != 0 {
				until = time.Unix(0, q.next)
			}
			if exited == nil && ended == nil {
				// The command has exited and its connections have ended: what it left running
				// waits on its own, and a request still in flight (a model call that hangs,
				// whose caller gave up and went on) has no one to answer. Its thread ends
				// with the process, as at a crash.
				return p.end()
			}
			if !a.awaited() && until.IsZero() {
				// Nothing the command waits for is in chaoskit's hands (what is in flight,
				// if anything, was given up by its caller): the command waits on its own.
				idle = true
				continue
			}
			if err := a.hold(ctx, until); err != nil {
				return nil, err
			}
			now := p.env.Now()
			w.now.Store(now.UnixNano())
			if !until.IsZero() && !now.Before(until) {
				if q.beat {
					ext.Waited(q.length, q.what)
				}
				w.order(cmdRelease)
			}
			w.order(cmdWant)
		}
	}
}

// terminate sends the command SIGTERM, as a deploy asks a service to stop, from the serve loop
// while it holds the baton: the command's handler runs, and what it does (its last requests, its
// checkpoint's writes, its exit) is served as anything else it does, from the next quiescence
// on. A quiescence found before the signal went out is stale: the ledger's generation moves, so
// the loop looks again.
func (p *proc) terminate() {
	p.termSent = true
	p.owed.gen.Add(1)
	p.child.terminate()
}

// diedOfTerm takes, at a quiescence after SIGTERM, the command's exit and the end of its
// connections if it has died (of the signal's default action, most often), before the loop
// decides what to do: its death and chaoskit's hearing of it race with the quiescence, and a
// request in flight (a tool call's latency) would otherwise be served, or dropped with the
// process, as that race goes. It returns exited and ended, nil once taken. The wait for the
// connections' end is bounded, for a process the command started may hold one open.
func (p *proc) diedOfTerm(exited, ended chan struct{}) (chan struct{}, chan struct{}) {
	if exited != nil && p.child.dead() {
		<-exited
		exited = nil
		p.sess.endAccepting()
	}
	if exited == nil && ended != nil && p.sess.peersGone() {
		select {
		case <-ended:
			ended = nil
		case <-time.After(time.Second):
		}
	}
	return exited, ended
}

// end is how the process ended, once the command has exited and every request is answered.
func (p *proc) end() (any, error) {
	res, err := p.sess.outcome()
	if err != nil {
		return nil, err
	}
	if err := p.child.err(); err != nil {
		return nil, err
	}
	if !p.sess.connected() && p.disk.ops == 0 && p.front == nil { // a process with services reaches chaoskit over HTTP
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
// stops its watcher, closes the socket, unmounts the state directory (FUSE) or copies it back
// to the disk (plain), and removes the process's directory. It runs when Run returns and,
// through Env.AtEnd, when a fault crashes the process, before the crash reaches the disk.
func (p *proc) stop() {
	p.stopOnce.Do(func() {
		p.disk.stopping() // first: an operation the dying command left on the mount fails, and it can die
		p.child.kill()
		if p.w != nil {
			p.stats = p.w.stop()
		}
		unregisterProc(p)
		p.adm.close()
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
