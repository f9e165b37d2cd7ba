package fusefs

import (
	"encoding/gob"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/afero"
)

// A FUSE server that runs in the process whose threads may die at any moment (a simulation
// SIGKILLed at a random point) is in the same failure domain as its mounts: a request the
// kernel sent it is never answered, and whatever waits on the mount waits for ever. So the
// kernel's side of a mount can run in a helper process of its own (ServeHelper), which only
// forwards each request to the process that runs the backend (Helper.Mount) over a connection
// of its own, and answers the kernel. If that process dies, the helper's connection ends: it
// fails every request still waiting, unmounts (aborting the FUSE connection if it must), and
// exits once no mount is left. The helper makes no request on its mounts itself and starts no
// process, so nothing of go-fuse's fork/exec deadlock applies.

// ctl says what a frame that carries no request or reply is.
type ctl uint8

const (
	ctlNone       ctl = iota
	ctlMount          // backend → helper: mount Spec
	ctlMounted        // helper → backend: mounted, or Err
	ctlUnmount        // backend → helper: unmount
	ctlUnmounted      // helper → backend: unmounted, or Err
	ctlSharedMaps     // backend → helper: a question; helper → backend: the answer in Yes
)

// frame is one message on a mount's connection.
type frame struct {
	ID   uint64 // a request's, echoed by its reply
	Req  *request
	Rep  *reply
	Ctl  ctl
	Spec *mountSpec
	Err  string
	Yes  bool
}

// mountSpec is what the helper needs to mount: the mount point and the options of its side
// (with flags for what is set: gob leaves out zero values, a uid 0 among them).
type mountSpec struct {
	Dir            string
	SetUID, SetGID bool
	UID, GID       uint32
	Debug          bool
}

// options returns the options the spec gives the helper's side.
func (m *mountSpec) options() Options {
	o := Options{Debug: m.Debug, ServeOnly: true}
	if m.SetUID {
		o.UID = &m.UID
	}
	if m.SetGID {
		o.GID = &m.GID
	}
	return o
}

// wire is one end of a mount's connection: frames in and out, each sent whole.
type wire struct {
	conn net.Conn
	dec  *gob.Decoder
	mu   sync.Mutex
	enc  *gob.Encoder
}

func newWire(conn net.Conn) *wire {
	return &wire{conn: conn, dec: gob.NewDecoder(conn), enc: gob.NewEncoder(conn)}
}

func (w *wire) send(f frame) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.enc.Encode(f)
}

func (w *wire) recv() (frame, error) {
	var f frame
	err := w.dec.Decode(&f)
	return f, err
}

// errOf returns the error whose text msg is, or nil for "".
func errOf(msg string) error {
	if msg == "" {
		return nil
	}
	return errors.New(msg)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// ServeHelper is the main of a helper process: it serves the mounts that the process at the
// other end of ctl (a Unix socket of type SOCK_SEQPACKET, made with HelperPair) asks for, until
// that process has gone and every mount has been torn down. A helper process should ignore
// SIGINT, SIGTERM and SIGHUP, which are for that process to act on (by unmounting).
func ServeHelper(ctl *net.UnixConn) error {
	var mounts sync.WaitGroup
	defer mounts.Wait()
	buf, oob := make([]byte, 16), make([]byte, syscall.CmsgSpace(4))
	for {
		n, oobn, _, _, err := ctl.ReadMsgUnix(buf, oob)
		if err != nil || n == 0 && oobn == 0 {
			return nil // the other process has gone: its mounts' connections end too
		}
		conn, err := receivedConn(oob[:oobn])
		if err != nil {
			return fmt.Errorf("fusefs: helper: %w", err)
		}
		mounts.Add(1)
		go func() {
			defer mounts.Done()
			serveMount(newWire(conn))
		}()
	}
}

// receivedConn returns the connection whose descriptor a control message carries.
func receivedConn(oob []byte) (net.Conn, error) {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil || len(msgs) != 1 {
		return nil, fmt.Errorf("a mount request without its connection (%v)", err)
	}
	fds, err := syscall.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return nil, fmt.Errorf("a mount request without its connection (%v)", err)
	}
	f := os.NewFile(uintptr(fds[0]), "mount")
	defer f.Close()
	return net.FileConn(f)
}

// serveMount serves one mount for the backend at the other end of w: it mounts, forwards every
// request of the kernel and answers it with the backend's reply, and unmounts when the backend
// asks or has gone.
func serveMount(w *wire) {
	defer w.conn.Close()
	first, err := w.recv()
	if err != nil || first.Ctl != ctlMount || first.Spec == nil {
		return
	}
	spec := first.Spec
	s := newServer(spec.Dir, spec.options())
	var (
		mu      sync.Mutex
		waiting = map[uint64]chan *reply{}
		next    uint64
		gone    = make(chan struct{}) // the backend has gone
	)
	s.run = func(r *request) reply {
		ch := make(chan *reply, 1)
		mu.Lock()
		next++
		id := next
		waiting[id] = ch
		mu.Unlock()
		defer func() {
			mu.Lock()
			delete(waiting, id)
			mu.Unlock()
		}()
		if w.send(frame{ID: id, Req: r}) != nil {
			return reply{Errno: syscall.EIO}
		}
		select {
		case rep := <-ch:
			return *rep
		case <-gone:
		case <-s.closing:
		}
		return reply{Errno: syscall.EIO}
	}
	err = s.serve(spec.Dir, spec.options())
	w.send(frame{Ctl: ctlMounted, Err: errText(err)})
	if err != nil {
		return
	}
	for {
		f, err := w.recv()
		if err != nil {
			close(gone) // the backend has gone: nothing will answer; unmount, aborting if need be
			s.Unmount()
			return
		}
		switch {
		case f.Rep != nil:
			mu.Lock()
			ch := waiting[f.ID]
			mu.Unlock()
			if ch != nil {
				ch <- f.Rep
			}
		case f.Ctl == ctlUnmount:
			err := s.Unmount()
			w.send(frame{Ctl: ctlUnmounted, Err: errText(err)})
			return
		case f.Ctl == ctlSharedMaps:
			go func() {
				s.fuse.WaitMount()
				w.send(frame{Ctl: ctlSharedMaps, Yes: s.SharedMaps()})
			}()
		}
	}
}

// HelperPair returns the two ends of a helper's control connection: ctl, for NewHelper, and
// the helper's end, for the helper process to inherit and pass to ServeHelper (as a *net.UnixConn
// made with net.FileConn). Both are close-on-exec; exec.Cmd.ExtraFiles passes the helper's on.
func HelperPair() (ctl *net.UnixConn, helper *os.File, err error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("fusefs: helper connection: %w", err)
	}
	mine := os.NewFile(uintptr(fds[0]), "fusefs-helper-ctl")
	defer mine.Close()
	c, err := net.FileConn(mine)
	if err != nil {
		syscall.Close(fds[1])
		return nil, nil, fmt.Errorf("fusefs: helper connection: %w", err)
	}
	return c.(*net.UnixConn), os.NewFile(uintptr(fds[1]), "fusefs-helper"), nil
}

// ErrHelperGone is wrapped by Helper.Mount's error when the helper process has gone.
var ErrHelperGone = errors.New("the helper is gone")

// Helper is this process's side of a helper process that serves FUSE mounts for it (see
// ServeHelper): Mount asks it for a mount whose backend runs here.
type Helper struct {
	mu  sync.Mutex
	ctl *net.UnixConn
}

// NewHelper returns the helper at the other end of ctl (see HelperPair).
func NewHelper(ctl *net.UnixConn) *Helper { return &Helper{ctl: ctl} }

// helperTimeout bounds how long a helper may take to mount or unmount.
const helperTimeout = 30 * time.Second

// Mount has the helper mount dir, an existing empty directory, and serves fsys there from this
// process, as Mount does, except that requests run one at a time, in the order the kernel sent
// them (with Options.DoRequest, each as it arrives: DoRequest orders them); the returned
// Server's Unmount has the helper unmount it. Options.Do, DoRequest, Trace and Now apply here,
// where fsys runs; UID, GID and Debug in the helper; the helper never uses its mounts, as
// with ServeOnly.
func (h *Helper) Mount(dir string, fsys afero.Fs, opts Options) (*Server, error) {
	if fsys == nil {
		panic("fusefs: Helper.Mount with a nil fsys")
	}
	abs, err := mountPoint(dir)
	if err != nil {
		return nil, err
	}
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("fusefs: mount %s: a connection to the helper: %w", abs, err)
	}
	theirs := os.NewFile(uintptr(fds[1]), "mount")
	h.mu.Lock()
	_, _, err = h.ctl.WriteMsgUnix([]byte{1}, syscall.UnixRights(fds[1]), nil)
	h.mu.Unlock()
	theirs.Close()
	mine := os.NewFile(uintptr(fds[0]), "mount")
	conn, cerr := net.FileConn(mine)
	mine.Close()
	if err != nil || cerr != nil {
		if conn != nil {
			conn.Close()
		}
		return nil, fmt.Errorf("fusefs: mount %s: %w (%w)", abs, ErrHelperGone, errors.Join(err, cerr))
	}
	w := newWire(conn)
	s := newServer(abs, opts)
	b := newBackend(traced(fsys, opts.Trace), opts.Now)
	x := &export{w: w, dir: abs, b: b, do: doer(opts, b), concurrent: opts.DoRequest != nil, srv: s,
		mounted: make(chan string, 1), unmounted: make(chan string, 1), shared: make(chan bool, 1), gone: make(chan struct{})}
	s.exp = x
	spec := &mountSpec{Dir: abs, Debug: opts.Debug}
	if opts.UID != nil {
		spec.SetUID, spec.UID = true, *opts.UID
	}
	if opts.GID != nil {
		spec.SetGID, spec.GID = true, *opts.GID
	}
	if err := w.send(frame{Ctl: ctlMount, Spec: spec}); err != nil {
		conn.Close()
		return nil, fmt.Errorf("fusefs: mount %s: %w (%w)", abs, ErrHelperGone, err)
	}
	go x.serve()
	var err2 error
	select {
	case msg := <-x.mounted:
		err2 = errOf(msg)
	case <-x.gone:
		select {
		case msg := <-x.mounted: // the helper said why, then closed the connection
			err2 = errOf(msg)
		default:
			err2 = fmt.Errorf("fusefs: mount %s: %w", abs, ErrHelperGone)
		}
	case <-time.After(helperTimeout):
		err2 = fmt.Errorf("fusefs: mount %s: the helper did not mount it in %s", abs, helperTimeout)
	}
	if err2 != nil {
		conn.Close()
		return nil, err2
	}
	return s, nil
}

// export is the backend's side of a mount a helper serves: it runs the requests the helper
// forwards.
type export struct {
	w   *wire
	dir string
	b   *backend
	do  func(r *request, op func())
	srv *Server
	// concurrent: each request runs as it arrives (DoRequest orders them), not after the one
	// before it has been answered
	concurrent bool

	mounted, unmounted chan string // the helper's answers: "" or an error
	shared             chan bool
	gone               chan struct{} // closed when the connection ends
}

// serve reads the helper's frames until the connection ends, running each request through Do
// and sending its reply, one request at a time in the order the helper forwarded them (a
// goroutine per request, as a mount served in-process has, costs a few percent more and lets
// requests overtake one another). A Do that does not return holds up the requests after it
// until Unmount, which fails them all with EIO (see Options.Do).
func (x *export) serve() {
	defer close(x.gone)
	for {
		f, err := x.w.recv()
		if err != nil {
			return
		}
		switch {
		case f.Req != nil && x.concurrent:
			go x.answer(f.ID, f.Req)
		case f.Req != nil:
			x.answer(f.ID, f.Req)
		case f.Ctl == ctlMounted:
			x.mounted <- f.Err
		case f.Ctl == ctlUnmounted:
			x.unmounted <- f.Err
			return
		case f.Ctl == ctlSharedMaps:
			x.shared <- f.Yes
		}
	}
}

func (x *export) answer(id uint64, r *request) {
	var rep reply
	errno := runOp(r, x.do, x.srv.closing, x.srv.recordPanic, func() syscall.Errno {
		rep = x.b.do(r)
		return rep.Errno
	})
	if errno != 0 {
		rep = reply{Errno: errno}
	}
	x.w.send(frame{ID: id, Rep: &rep})
}

// unmount has the helper unmount: it fails what still waits here (Unmount closed closing
// first), and aborts the FUSE connection if the mount stays busy. If the helper does not answer,
// this process unmounts by itself, as a root process can.
func (x *export) unmount() error {
	defer x.w.conn.Close()
	if err := x.w.send(frame{Ctl: ctlUnmount}); err == nil {
		select {
		case msg := <-x.unmounted:
			return errOf(msg)
		case <-x.gone:
		case <-time.After(helperTimeout):
		}
	}
	if ms, _ := mounts(x.dir); len(ms) == 0 {
		return nil // the helper unmounted it as it went
	}
	if err := forceUnmount(x.dir, connection(x.dir)); err != nil {
		return fmt.Errorf("fusefs: unmount %s: the helper did not, and: %w", x.dir, err)
	}
	return nil
}

// sharedMaps asks the helper whether the kernel allows shared maps on the mount.
func (x *export) sharedMaps() bool {
	if x.w.send(frame{Ctl: ctlSharedMaps}) != nil {
		return false
	}
	select {
	case yes := <-x.shared:
		return yes
	case <-x.gone:
		return false
	}
}
