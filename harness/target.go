package harness

import (
	"context"
	"io/fs"
	"strings"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/google/go-cmp/cmp"
	"github.com/spf13/afero"
)

// Target is the harness under test, as chaoskit drives it.
//
// Run is the target's main: it runs the harness to completion, or resumes it from whatever
// env.FS holds, and returns its result. chaoskit builds a new instance for every process (see
// sim.NewRunner and Fresh) and calls Run on it once: for the golden run, and again after every crash
// on the disk the crash left. Everything the instance and Run keep in memory dies with the
// process; only what it wrote through env.FS, and what it did to the world through env.Call,
// survives. Keep to the Env (no os files, no time.Now, no global rand) and Run is
// deterministic, which chaoskit checks.
//
// A crash stops Run at a beat the way SIGKILL stops a process: the goroutine that called the
// Env exits on the spot (runtime.Goexit), its deferred calls run, and any further Env call,
// from a deferred call or another thread, exits that goroutine too. Nothing written after the
// crash reaches the disk. Since Goexit cannot be recovered, a harness that recovers panics needs
// no special case for crashes (no sentinel to re-panic). Call the Env from Run's goroutine or
// from threads started with Env.Go; a goroutine of your own that calls it breaks the
// one-at-a-time rule, and shows up as a target that is not deterministic.
//
// A deploy (an upgrade fault) asks Run to stop the way SIGTERM asks a process: ctx is cancelled,
// with ErrTerminated as its cause, and Run has a grace period of virtual time to finish its step,
// checkpoint and return before it is killed as above. Pass ctx to the Env's calls and check it
// between steps, as signal.NotifyContext's context would be checked in production; to finish
// the step in flight after it is cancelled, use context.WithoutCancel(ctx) for its calls.
type Target interface {
	Run(ctx context.Context, env *Env) (result any, err error)
}

// Stater is implemented by targets that can read their durable state back from a disk. The
// oracle's same-state property compares the state read after the faulty run with the state
// read after the golden run; without a Stater it is not checked. State is called on a fresh
// instance, and may be called from several goroutines at once: it must depend on fsys alone.
type Stater interface {
	// State reads the target's durable state from fsys: what a new process would find. fsys is
	// the bare disk, outside any fault.
	State(fsys afero.Fs) (any, error)
}

// Tooler is implemented by targets that call tools: it declares them and their contracts.
// Calling a tool that was not declared panics.
type Tooler interface {
	Tools() []Tool
}

// Comparer is implemented by targets whose results or states hold values that legitimately
// differ between runs (a timestamp, a run id): it gives the go-cmp options to compare them.
type Comparer interface {
	CmpOptions() []cmp.Option
}

// Limiter is implemented by targets that cannot honour everything chaoskit can do to a
// target: a subprocess whose files chaoskit does not see cannot lose un-fsynced writes to a
// power cut, nor have its crash states rebuilt from a recording.
type Limiter interface {
	Limits() Limits
}

// Limits say what a target cannot do. The zero value is no limit.
type Limits struct {
	// NoDerive says the target's processes change the disk outside their beats (their files are
	// copied in and out at their edges, say), so that a crash state cannot be rebuilt from the
	// golden recording: every case re-runs the golden prefix instead.
	NoDerive bool
	// Unsupported names the fault kinds the target cannot honour, each with why, in a few words
	// that say what would lift the limit. A case of such a kind is unknown, with that reason.
	Unsupported map[faults.Kind]string
	// OneWorker, if set, says why the target cannot run with more than one worker (sim.
	// Options.Workers); sim.NewRunner refuses more, with that reason.
	OneWorker string
	// MaxBeats, if positive, is the target's own default bound on its golden run's beats, which
	// sim.Options.MaxBeats replaces when it is set: for a target whose every beat costs far more
	// than an in-process call (a round trip to another process), so that one that never ends is
	// refused in seconds rather than minutes. 0 leaves sim.DefaultMaxBeats.
	MaxBeats int
}

// Fresh returns a constructor of targets that hands every process its own copy of template,
// for sim.NewRunner: the common case of a target whose configuration is its fields and whose
// progress, if it keeps any in memory, starts from template's. The copy is shallow: maps,
// slices and pointers in template are shared by every process, so keep progress out of them,
// or write the constructor yourself.
//
//	rn, err := sim.NewRunner(harness.Fresh(orders.Agent{Store: "orders.log"}), opts)
//
// Pass the template by value, whether its methods have value or pointer receivers: Fresh calls
// them on a pointer to each copy. A pointer, harness.Fresh(&process.Target{...}), does not
// compile, and Go words it as a failed type constraint: "**process.Target does not satisfy
// interface{**process.Target; harness.Target} (missing method Run)"; drop the &.
func Fresh[T any, P interface {
	*T
	Target
}](template T) func() Target {
	return func() Target {
		t := template
		return P(&t)
	}
}

// Func adapts functions to a Target, with the optional capabilities as fields. Keep a run's
// progress in Run's own variables: a Func's fields are shared by every process.
type Func struct {
	// RunFunc is Target.Run; it is required.
	RunFunc func(ctx context.Context, env *Env) (any, error)
	// StateFunc, if set, is Stater.State. A Func is always a Stater: without StateFunc its
	// state is every file on its disk (Files), so a file a crash leaves behind (a temporary
	// file) fails same-state unless the recovery removes it; set StateFunc to read only what
	// matters.
	StateFunc func(fsys afero.Fs) (any, error)
	// ToolList is Tooler.Tools.
	ToolList []Tool
	// Compare is Comparer.CmpOptions.
	Compare []cmp.Option
}

// Run calls f.RunFunc.
func (f Func) Run(ctx context.Context, env *Env) (any, error) {
	if f.RunFunc == nil {
		panic("harness: Func.RunFunc is nil")
	}
	return f.RunFunc(ctx, env)
}

// State calls f.StateFunc, or returns the whole file tree if it is nil.
func (f Func) State(fsys afero.Fs) (any, error) {
	if f.StateFunc == nil {
		return Files(fsys)
	}
	return f.StateFunc(fsys)
}

// Tools returns f.ToolList.
func (f Func) Tools() []Tool { return f.ToolList }

// CmpOptions returns f.Compare.
func (f Func) CmpOptions() []cmp.Option { return f.Compare }

// Files reads every file under the root of fsys into a map from slash-separated path to content,
// a state for targets whose whole disk is their state.
func Files(fsys afero.Fs) (map[string]string, error) {
	out := map[string]string{}
	err := afero.Walk(fsys, "", func(p string, fi fs.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		b, err := afero.ReadFile(fsys, p)
		out[strings.TrimLeft(p, "/")] = string(b)
		return err
	})
	return out, err
}
