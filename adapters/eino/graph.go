package eino

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/chaoskit/chaoskit/harness"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
	"github.com/spf13/afero"
)

// DefaultDir is where a Graph keeps its checkpoints on the process's disk.
const DefaultDir = "checkpoints"

// Graph is one run of an Eino graph as a chaoskit target (harness.Target, harness.Tooler,
// harness.Stater): each process compiles the graph afresh with the Binding's components (the
// checkpoint store on env.FS(), tools over env.Call, the model over env.Model) and invokes it
// under the run's checkpoint id until it is done, resuming from the last checkpoint after a
// crash. A Graph is a value: harness.Fresh(eino.Graph[I, O]{...}) makes one per process.
type Graph[I, O any] struct {
	// ID is the run's checkpoint id (compose.WithCheckPointID): every process resumes it.
	ID string
	// Input is the run's input. Once a checkpoint exists, Eino ignores it and resumes.
	Input I
	// Dir is where checkpoints are kept on the process's disk; the default is DefaultDir.
	Dir string
	// ToolList declares the tools the graph calls, with their contracts.
	ToolList []harness.Tool
	// Compile builds and compiles the graph for one process, taking its components from b. A
	// graph compiled with b's store (b.Checkpointing or b.Store) is invoked with the run's
	// checkpoint id; one compiled without is invoked afresh by every process.
	Compile func(ctx context.Context, b *Binding) (compose.Runnable[I, O], error)
}

// Binding hands a graph the components of one chaoskit process.
type Binding struct {
	// Env is the process's Env.
	Env *harness.Env
	// RunID is the Graph's ID.
	RunID     string
	store     *Store
	usesStore bool
}

// Store returns the process's checkpoint store, for compose.WithCheckPointStore.
func (b *Binding) Store() *Store {
	b.usesStore = true
	return b.store
}

// Checkpointing returns the compile options that make a graph durable node by node: the
// process's checkpoint store, and an interrupt after each of the nodes named, at which Eino
// saves a checkpoint (it saves none otherwise) and Graph invokes the graph again to go on. Name
// every node: a crash then redoes at most the node it interrupted. (An interrupt after the last
// node never fires, since the graph ends first; Graph records the output itself.)
func (b *Binding) Checkpointing(nodes ...string) []compose.GraphCompileOption {
	opts := []compose.GraphCompileOption{compose.WithCheckPointStore(b.Store())}
	if len(nodes) > 0 {
		opts = append(opts, compose.WithInterruptAfterNodes(nodes))
	}
	return opts
}

// Tool returns an Eino tool whose calls go through the world, keyed by key (nil for none;
// CallIDKey(b.RunID) keys by run and tool call id).
func (b *Binding) Tool(info *schema.ToolInfo, key KeyFunc) *Tool {
	return NewTool(b.Env, info, key)
}

// ChatModel returns the scripted model.
func (b *Binding) ChatModel(script Script) *ChatModel {
	return NewChatModel(b.Env, script)
}

func (g Graph[I, O]) dir() string {
	if g.Dir == "" {
		return DefaultDir
	}
	return g.Dir
}

// Run runs the graph to its end, or resumes it: if the run is recorded as done it returns the
// recorded output; otherwise it invokes the graph under the run's checkpoint id, again after
// every interrupt after a node (each of which saved a checkpoint), and records the output
// durably when the graph ends. Any other interrupt (a node asking for a person) is returned as
// the error. Any other error, a full disk's included, fails the process, for its supervisor to
// restart.
func (g Graph[I, O]) Run(ctx context.Context, env *harness.Env) (any, error) {
	if g.ID == "" || g.Compile == nil {
		panic("eino.Graph: ID and Compile are required")
	}
	b := &Binding{Env: env, RunID: g.ID, store: NewStore(env.FS(), g.dir(), env.Mark)}
	if out, done, err := b.store.Done(g.ID); err != nil || done {
		if err != nil {
			return nil, err
		}
		return decodeResult(out)
	}
	r, err := g.Compile(ctx, b)
	if err != nil {
		return nil, fmt.Errorf("compiling graph %s: %w", g.ID, err)
	}
	var opts []compose.Option
	if b.usesStore {
		opts = append(opts, compose.WithCheckPointID(g.ID))
	}
	for {
		out, err := r.Invoke(ctx, g.Input, opts...)
		if info, ok := compose.ExtractInterruptInfo(err); ok && nodeInterrupt(info) {
			continue // a checkpoint was saved after a node: go on from it
		}
		var enc []byte
		if err == nil {
			if enc, err = json.Marshal(out); err != nil {
				return nil, fmt.Errorf("graph %s: encoding its output: %w", g.ID, err)
			}
			err = b.store.SetDone(g.ID, json.RawMessage(enc))
		}
		if err != nil {
			return nil, err
		}
		return decodeResult(enc)
	}
}

// nodeInterrupt reports whether an interrupt is one configured before or after nodes (a
// checkpoint to go on from) rather than one a node raised to wait for a person, which makes that
// node a node to rerun.
func nodeInterrupt(info *compose.InterruptInfo) bool {
	if len(info.RerunNodes) > 0 {
		return false
	}
	for _, sub := range info.SubGraphs {
		if !nodeInterrupt(sub) {
			return false
		}
	}
	return len(info.BeforeNodes) > 0 || len(info.AfterNodes) > 0 || len(info.SubGraphs) > 0
}

// decodeResult turns the output's JSON into plain values (maps, slices, strings, numbers),
// which the oracle compares.
func decodeResult(b []byte) (any, error) {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("decoding a graph's output: %w", err)
	}
	return v, nil
}

// Tools returns g.ToolList.
func (g Graph[I, O]) Tools() []harness.Tool { return g.ToolList }

// State reads the run's durable state from a disk: the output recorded when the run ended (nil
// before). Checkpoints are not part of it: they are Eino's encoding of the work in progress,
// which differs from run to run (interrupt ids are random UUIDs).
func (g Graph[I, O]) State(fsys afero.Fs) (any, error) {
	out, done, err := NewStore(fsys, g.dir(), nil).Done(g.ID)
	if err != nil || !done {
		return nil, err
	}
	return decodeResult(out)
}
