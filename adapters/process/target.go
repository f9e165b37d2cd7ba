package process

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/chaoskit/chaoskit/adapters/process/fusefs"
	"github.com/chaoskit/chaoskit/adapters/services"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/spf13/afero"
)

// Disk says how a command's state directory reaches chaoskit's fault disk.
type Disk string

// The disk modes.
const (
	// Plain gives each process a real directory holding a copy of the disk, and copies it back
	// when the process ends: the command's file operations are not beats, a kill keeps
	// everything it wrote, and faults that lose un-fsynced data cannot apply.
	Plain Disk = "plain"
	// FUSE mounts the disk itself as the state directory, so that every mutating file operation
	// of the command is a beat and every storage fault applies to its real files.
	FUSE Disk = "fuse"
)

// Target runs a command as the harness under test: each process of the harness is a real
// process of the command, started in its own process group, talking to chaoskit's world over
// a Unix socket (the protocol of PROTOCOL.md, spoken by the clients in this module), and
// SIGKILLed, with its whole group, when a crash fault fires at one of its beats. Its state
// directory is chaoskit's disk, copied in and out (Plain) or mounted (FUSE).
//
// A Target is a value: harness.Fresh(process.Target{...}) builds one per process.
type Target struct {
	// Argv is the command and its arguments; Argv[0] is looked up in PATH.
	Argv []string
	// Dir is the command's working directory; the default is chaoskit's.
	Dir string
	// Env holds environment variables ("KEY=VALUE") added to the command's, which is chaoskit's
	// own plus the CHAOSKIT_* variables of the protocol.
	Env []string
	// ToolList declares the tools the command calls, with their contracts. A call of a tool not
	// declared fails the process, naming it.
	ToolList []harness.Tool
	// StateArgv, if set, is a command that prints the harness's durable state as JSON on its
	// standard output, run with CHAOSKIT_STATE_DIR naming a copy of the state directory (for
	// example the harness itself with a --dump-state flag). The oracle compares that JSON with
	// the golden run's. Without it the state directory's files are compared byte for byte,
	// which a database's files rarely survive.
	StateArgv []string
	// Ignore lists JSON paths ("$.checkpoints[*].ts", `$["run id"]`) removed from the result
	// and the state before they are compared: what legitimately differs from run to run.
	// Without StateArgv the state is a JSON object of file contents by path, so
	// `$["logs/run.log"]` ignores a file.
	Ignore []string
	// Disk says how the state directory reaches chaoskit's disk; the default is Plain.
	Disk Disk
	// Beats says, with a FUSE disk, which of the command's doings are beats: AllBeats (the
	// default: its requests and every mutating file operation) or CallBeats (its requests
	// only), for a command whose background I/O differs from run to run. With CallBeats the
	// disk still keeps what was fsynced apart from what was not, so power loss and torn
	// writes still apply, at requests; faults that fire at a write or an fsync (diskfull,
	// fsyncfail) cannot.
	Beats Beats
	// Clock says which clock the command's own clock reads and timed waits see: VirtualClock
	// (the default) traps them, so that time.sleep, setTimeout, timeouts and back-offs wait in
	// virtual time and return at once, and the clock reads the simulation's time (PROTOCOL.md,
	// "Time"); WallClock leaves them on the machine's clock. Where this machine cannot trap them
	// (no seccomp user notification, ptrace refused), commands run on the wall clock and chaoskit
	// says so once on its standard error.
	Clock Clock
	// Services are HTTP services served to every process on loopback (services.Config): the
	// model API answering from a cassette, the declared tools over MCP, REST service doubles.
	// A process gets their URLs as the SDKs read them: OPENAI_BASE_URL and OPENAI_API_KEY,
	// ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY, CHAOSKIT_MCP_URL, CHAOSKIT_HTTP_URL (the base
	// of the REST routes); Env maps them onto the command's own names
	// ("PAYMENTS_URL=${CHAOSKIT_HTTP_URL}"). Their tools need no declaration in ToolList. A
	// model request the cassette cannot answer makes the run undecided, with the difference
	// between what was asked and what was recorded.
	Services services.Config
}

// Clock says which clock a command's own clock reads and timed waits see.
type Clock string

// The clocks.
const (
	VirtualClock Clock = "virtual"
	WallClock    Clock = "wall"
)

// Beats says which of a command's doings are beats.
type Beats string

// The beat modes.
const (
	AllBeats  Beats = "all"
	CallBeats Beats = "calls"
)

// Tools returns t.ToolList.
func (t Target) Tools() []harness.Tool {
	return t.Services.WorldTools(slices.Clone(t.ToolList))
}

// DefaultMaxBeats is the bound on a command's golden run, in beats, when sim.Options.MaxBeats
// (chaoskit run --max-beats) sets none: every beat of a command is a round trip between two
// processes, which costs 60 to 120 µs where an in-process beat costs a fraction of one, so the
// in-process default, sim.DefaultMaxBeats, took a minute or two to refuse a command that never
// ends (1,000,000 beats: 75 s on a 2-core machine, 123 s under load). A tenth of it refuses one in
// seconds and stays 400 times the longest example's golden run (Burr on FUSE, 254 beats, where
// every SQLite write is a beat). A harness longer than that sets --max-beats.
const DefaultMaxBeats = 100_000

// Limits says what a Plain target cannot do: its file operations are not beats, so only a kill
// applies among the storage faults, and workers cannot share its state directory. (A kill's
// crash state is rebuilt from the golden recording: the state directory is copied back to the
// disk before each of the process's beats.) Any target's golden run is bounded by
// DefaultMaxBeats unless sim.Options.MaxBeats says otherwise.
func (t Target) Limits() harness.Limits {
	if t.Disk == FUSE {
		if t.Beats != CallBeats {
			return harness.Limits{MaxBeats: DefaultMaxBeats}
		}
		why := "with --beats calls the command's file operations are not beats; drop --beats calls"
		return harness.Limits{MaxBeats: DefaultMaxBeats, Unsupported: map[faults.Kind]string{faults.DiskFull: why, faults.FsyncFail: why}}
	}
	why := "the state directory is a copy (--disk plain): chaoskit does not see the command's writes; use --disk fuse"
	l := harness.Limits{MaxBeats: DefaultMaxBeats, OneWorker: "workers cannot share a copied state directory; use --disk fuse", Unsupported: map[faults.Kind]string{}}
	for _, k := range faults.StorageKinds() {
		if k != faults.Kill {
			l.Unsupported[k] = why
		}
	}
	return l
}

// fuseAvailable is fusefs.Available, asked once: Run validates its target at every process
// start, restarts included, and the answer is the machine's.
var fuseAvailable = sync.OnceValue(fusefs.Available)

// Validate reports what is wrong with t, if anything: no command, a disk mode it does not
// know, a malformed ignore path.
func (t Target) Validate() error {
	if len(t.Argv) == 0 || t.Argv[0] == "" {
		return fmt.Errorf("process.Target: no command (Argv is empty)")
	}
	if t.Dir != "" {
		if fi, err := os.Stat(t.Dir); err != nil {
			return fmt.Errorf("process.Target: working directory: %w", err)
		} else if !fi.IsDir() {
			return fmt.Errorf("process.Target: working directory %s is not a directory", t.Dir)
		}
	}
	switch t.Disk {
	case "", Plain:
	case FUSE:
		if err := fuseAvailable(); err != nil {
			return fmt.Errorf("process.Target: --disk fuse: %w", err)
		}
	default:
		return fmt.Errorf("process.Target: unknown disk mode %q (want plain or fuse)", t.Disk)
	}
	switch t.Beats {
	case "", AllBeats:
	case CallBeats:
		if t.Disk != FUSE {
			return fmt.Errorf("process.Target: --beats calls is for --disk fuse (on a plain disk only requests are beats anyway)")
		}
	default:
		return fmt.Errorf("process.Target: unknown beats mode %q (want all or calls)", t.Beats)
	}
	switch t.Clock {
	case "", VirtualClock, WallClock:
	default:
		return fmt.Errorf("process.Target: unknown clock %q (want virtual or wall)", t.Clock)
	}
	if err := checkEnvRefs(t.Env, t.Services); err != nil {
		return fmt.Errorf("process.Target: %w", err)
	}
	for _, p := range t.Ignore {
		if _, err := parsePath(p); err != nil {
			return fmt.Errorf("process.Target: ignore path: %w", err)
		}
	}
	return nil
}

// Run runs one process of the command and serves its requests until it exits, returning the
// result it sent with done (decoded JSON, ignored paths removed; nil if it sent none). A
// command that exits with another status than 0, sends a malformed request or calls a tool not
// declared fails the process, with the reason and the end of its output.
func (t Target) Run(ctx context.Context, env *harness.Env) (any, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	p, err := start(&t, env)
	if err != nil {
		return nil, err
	}
	env.AtEnd(p.stop) // a crash at a beat stops the command there, before anything else happens
	defer p.stop()
	res, err := p.serve(ctx)
	p.stop()
	if err == nil {
		err = p.stopErr
	}
	if miss := p.missed(); miss != nil {
		return nil, miss // what the process did after a request with no answer says nothing
	}
	return res, err
}

// State reads the harness's durable state from fsys: by running StateArgv on a copy of it, or
// as its files.
func (t Target) State(fsys afero.Fs) (any, error) {
	if len(t.StateArgv) > 0 {
		return runState(&t, fsys) // its ignored paths removed
	}
	files, err := harness.Files(fsys)
	if err != nil {
		return nil, err
	}
	m := make(map[string]any, len(files))
	for k, v := range files {
		m[k] = v
	}
	return t.ignore(m)
}

// ignore removes t.Ignore's paths from doc.
func (t *Target) ignore(doc any) (any, error) {
	for _, text := range t.Ignore {
		p, err := parsePath(text)
		if err != nil {
			return nil, err
		}
		doc = p.remove(doc)
	}
	return doc, nil
}

// Name returns a name for the target: its command line.
func (t Target) Name() string { return strings.Join(t.Argv, " ") }
