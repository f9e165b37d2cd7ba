// Command child is the process target the adapter's tests run: a small harness that files
// purchase orders and checkpoints them in a JSON file (-mode correct), the same acting before
// it saves (-mode act-then-save), a tour of every request of the protocol (-mode tour), and
// commands that misbehave in the ways a target can.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/chaoskit/chaoskit/adapters/process/client"
)

func main() {
	mode := flag.String("mode", "correct", "what to do")
	dump := flag.Bool("dump-state", false, "print the durable state as JSON and exit")
	escape := flag.String("escape", "", "first leave a process running outside the process group: setsid, double-fork or daemon")
	mark := flag.String("mark", "", "with -mode linger: a directory to note the process's pid in, which the tests find it by (in its command line)")
	flag.Parse()
	if *escape != "" {
		leave(*escape)
	}
	if *dump {
		if log := os.Getenv("CHILD_DUMP_LOG"); log != "" { // for the tests of how often chaoskit asks
			f, err := os.OpenFile(log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
			if err != nil {
				fail(err)
			}
			fmt.Fprintln(f, "dumped")
			f.Close()
		}
		b, err := os.ReadFile(filepath.Join(os.Getenv("CHAOSKIT_STATE_DIR"), "orders.json"))
		if errors.Is(err, os.ErrNotExist) {
			b = []byte("{}")
		} else if err != nil {
			fail(err)
		}
		os.Stdout.Write(b)
		return
	}
	switch *mode {
	case "linger": // what escape leaves running
		if *mark != "" {
			must(os.WriteFile(filepath.Join(*mark, strconv.Itoa(os.Getpid())), nil, 0o644))
		}
		time.Sleep(time.Hour)
		return
	case "fork-linger": // the middle of a double fork: start the lingerer and go
		linger(os.Getenv("CHILD_ESCAPE") == "daemon")
		return
	case "noconnect":
		block()
	case "exit0":
		return
	case "exit3":
		fmt.Fprintln(os.Stderr, "boom: the configuration is missing")
		os.Exit(3)
	case "version", "malformed", "badresult", "long-sleep", "empty-messages":
		raw(*mode)
		return
	}
	c, err := client.Connect()
	if err != nil {
		fail(err)
	}
	switch *mode {
	case "correct", "act-then-save", "no-fsync":
		orders(c, *mode)
	case "tour":
		tour(c)
	case "fail-in-state-dir": // a failure whose message quotes the state directory, new every run
		if c.Attempt == 0 {
			must(c.Mark("started"))
			must(c.Done(1))
			return
		}
		fail(fmt.Errorf("cannot open %s/orders.json", c.StateDir))
	case "refuse":
		must(c.Refuse("cannot tell whether order 7 was filed"))
		os.Exit(4)
	case "hang":
		c.Mark("started")
		block()
	case "flood":
		for {
			c.Now()
		}
	case "gated": // correct, but each process from attempt $GATE_FROM on first waits for the
		// file $GATE/open, leaving $GATE/waiting-ATTEMPT-PID while it does: a test's signal then
		// lands in a golden run (GATE_FROM=0) or in a case's restart (1) for sure
		if from, _ := strconv.Atoi(os.Getenv("GATE_FROM")); c.Attempt >= from {
			gate := os.Getenv("GATE")
			must(os.WriteFile(filepath.Join(gate, fmt.Sprintf("waiting-%d-%d", c.Attempt, os.Getpid())), nil, 0o644))
			for _, err := os.Stat(filepath.Join(gate, "open")); err != nil; _, err = os.Stat(filepath.Join(gate, "open")) {
				time.Sleep(10 * time.Millisecond)
			}
		}
		orders(c, "correct")
	case "endless": // a harness that never finishes: it marks progress for ever
		for i := 0; ; i++ {
			must(c.Mark(fmt.Sprintf("m%d", i)))
		}
	case "undeclared":
		c.Call(client.Call{Tool: "launch_missiles", Args: 1})
	default:
		fail(fmt.Errorf("unknown mode %q", *mode))
	}
}

// leave starts a process that leaves the command's process group and outlives the command
// unless chaoskit kills it too, marked with $CHILD_MARK in its command line: a process in a
// session of its own (setsid), the grandchild of a child that exited at once (double-fork, in
// the same session), or a daemon (double-fork through a new session, its environment cleared,
// its working directory /, its standard streams closed).
func leave(how string) {
	self, err := os.Executable()
	if err != nil {
		fail(err)
	}
	marks := os.Getenv("CHILD_MARK")
	before, _ := os.ReadDir(marks)
	switch how {
	case "setsid":
		linger(false)
	case "double-fork", "daemon":
		cmd := exec.Command(self, "-mode", "fork-linger")
		cmd.Env = append(os.Environ(), "CHILD_ESCAPE="+how)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: how == "daemon"}
		must(cmd.Run()) // it exits as soon as it has started the lingerer
	default:
		fail(fmt.Errorf("unknown -escape %q", how))
	}
	for { // until the lingerer has noted its pid: then a test knows one was started
		if now, _ := os.ReadDir(marks); len(now) > len(before) {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// linger starts this program's linger mode in a session of its own and does not wait for it;
// as a daemon, with an empty environment, in /, without standard streams.
func linger(daemon bool) {
	self, err := os.Executable()
	if err != nil {
		fail(err)
	}
	cmd := exec.Command(self, "-mode", "linger", "-mark", os.Getenv("CHILD_MARK"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if daemon {
		cmd.Env, cmd.Dir = []string{}, "/"
	}
	must(cmd.Start())
}

// checkpoint is the harness's durable state: the orders filed so far.
type checkpoint struct {
	Filed []string `json:"filed"`
	Next  int      `json:"next"`
}

// orders files three purchase orders, checkpointing each in orders.json through a temporary
// file, an fsync, a rename and an fsync of the directory, and retries a call with the same key,
// which the tool deduplicates. act-then-save files without a key; no-fsync fsyncs nothing.
func orders(c *client.Client, mode string) {
	actThenSave := mode == "act-then-save"
	path := filepath.Join(c.StateDir, "orders.json")
	var cp checkpoint
	if b, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(b, &cp); err != nil {
			fail(err)
		}
	}
	for cp.Next < 3 {
		i := cp.Next
		call := client.Call{Tool: "create_po", Key: fmt.Sprintf("po-%d", i), Args: map[string]any{"n": i, "usd": 1000 * (i + 1)}}
		if actThenSave {
			call.Key = ""
		}
		var r client.Reply
		var err error
		for try := 0; try < 5; try++ {
			if r, err = c.Call(call); err == nil || !(errors.Is(err, client.ErrTransient) || errors.Is(err, client.ErrAmbiguous) || errors.Is(err, client.ErrTimeout)) || actThenSave {
				break
			}
		}
		if err != nil {
			fail(err)
		}
		cp.Filed, cp.Next = append(cp.Filed, r.ID), i+1
		// A full disk is waited out: the write is retried every 10s of virtual time.
		for err := save(path, cp, mode != "no-fsync"); err != nil; err = save(path, cp, mode != "no-fsync") {
			if !errors.Is(err, syscall.ENOSPC) {
				fail(err)
			}
			must(c.Sleep(10 * time.Second))
		}
		must(c.Mark(fmt.Sprintf("po %d filed", i)))
	}
	must(c.Done(map[string]any{"filed": len(cp.Filed)}))
}

// save writes cp to path through a temporary file, fsynced (with fsync) before and after the
// rename.
func save(path string, cp checkpoint, fsync bool) error {
	b, _ := json.Marshal(cp)
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		return err
	}
	if fsync {
		if err := f.Sync(); err != nil {
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if !fsync {
		return nil
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// tour makes every request of the protocol once and sends what came back as its result.
func tour(c *client.Client) {
	out := map[string]any{"process": c.Process, "attempt": c.Attempt, "worker": c.Worker}
	t0, _ := c.Now()
	must(c.Sleep(90 * time.Second))
	t1, _ := c.Now()
	out["slept"] = t1.Sub(t0).String()
	r, err := c.Call(client.Call{Tool: "create_po", Key: "k1", Ref: "order-1", Args: map[string]any{"b": 2, "a": 1}})
	must(err)
	found, ok, err := c.Lookup("create_po", "order-1")
	must(err)
	_, missing, err := c.Lookup("create_po", "order-2")
	must(err)
	out["lookup"] = fmt.Sprintf("%s %v %v", found.ID, ok, missing)
	again, err := c.Call(client.Call{Tool: "create_po", Key: "k1", Args: map[string]any{"a": 1, "b": 2}})
	must(err)
	out["po"], out["replayed"] = r.ID, again.Replayed
	text, err := c.Model("plan", "file the order", 2*time.Second, time.Minute)
	must(err)
	out["model"] = text
	l, err := c.Acquire("run-1", 30*time.Second)
	must(err)
	l2, err := c.Renew(l, 30*time.Second)
	must(err)
	must(c.Release(l2))
	out["token"] = l2.Token
	ck, err := c.Call(client.Call{Tool: "check", Key: "c1", Args: "vendor"})
	must(err)
	msgs, err := c.Await(ck.Topic, time.Hour)
	must(err)
	out["message"] = msgs[0].Body
	_, err = c.Await("nobody/writes/here", 5*time.Second)
	out["await_deadline"] = errors.Is(err, client.ErrDeadline)
	seen, err := c.Messages(ck.Topic)
	must(err)
	out["messages"] = len(seen)
	n, err := c.Random()
	must(err)
	out["random"] = n != 0
	must(c.Mark("toured"))
	must(c.Done(out))
}

// raw speaks to the socket by hand, to send what no client would.
func raw(mode string) {
	conn, err := net.Dial("unix", os.Getenv("CHAOSKIT_SOCKET"))
	if err != nil {
		fail(err)
	}
	v := 1
	if mode == "version" {
		v = 99
	}
	fmt.Fprintf(conn, `{"op":"hello","v":%d,"token":%q}`+"\n", v, os.Getenv("CHAOSKIT_TOKEN"))
	buf := make([]byte, 4096)
	conn.Read(buf)
	switch mode {
	case "malformed":
		fmt.Fprintln(conn, `{"op":"mark","label":`)
	case "badresult":
		fmt.Fprintln(conn, `{"op":"done","result":{"a":}}`)
	case "long-sleep":
		fmt.Fprintln(conn, `{"op":"sleep","ms":10000000000000}`)
	case "empty-messages":
		fmt.Fprintln(conn, `{"op":"mark","label":"asked"}`)
		conn.Read(buf)
		fmt.Fprintln(conn, `{"op":"messages","topic":"nobody/writes/here"}`)
		n, _ := conn.Read(buf)
		answer, _ := json.Marshal(strings.TrimSpace(string(buf[:n])))
		fmt.Fprintf(conn, `{"op":"done","result":%s}`+"\n", answer)
	}
	conn.Read(buf)
}

func must(err error) {
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "child:", err)
	os.Exit(1)
}

// block blocks for ever on something no clock ends (a pipe nobody writes): a command that has
// stopped talking. (A time.Sleep would end, in virtual time.)
func block() {
	r, w, err := os.Pipe()
	if err != nil {
		fail(err)
	}
	defer w.Close()
	r.Read(make([]byte, 1))
}
