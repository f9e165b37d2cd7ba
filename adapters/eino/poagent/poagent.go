// Package poagent is an example Eino graph under chaoskit: a purchasing agent of five nodes,
// written as an Eino graph is (chat-model nodes and tools nodes sharing the conversation in the
// graph's local state), in a correct configuration and in the mistakes teams make with Eino's
// checkpoints, each one a Variant.
//
//	START → plan (model) → lookup (tools: vendor_lookup, read-only)
//	      → decide (model) → order (tools: create_po, idempotent by key) → report (model) → END
//
// The model asks for the vendor's record, then files a purchase order of $84,000, then reports
// the order's number. Its tool calls carry ids that a real model makes up anew each time it is
// asked, which is what makes the idempotency key a question of what was checkpointed.
package poagent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/chaoskit/chaoskit/adapters/eino"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
	"github.com/spf13/afero"
)

// Variant is a configuration of the agent.
type Variant string

// The variants.
const (
	// Correct checkpoints through eino.Store (durable: fsync, rename, directory fsync) with an
	// interrupt after every node, and keys create_po by run and tool call id.
	Correct Variant = "correct"
	// MemoryStore uses the map-backed CheckPointStore of Eino's examples: checkpoints die with
	// the process, so a restart asks the model again and files the order under a new key.
	MemoryStore Variant = "memory-store"
	// EndOnly interrupts (and so checkpoints) only after the order node, as a team that saves
	// "once the work is done" does: the model's message that carries the order's call id is not
	// saved before the order is filed.
	EndOnly Variant = "end-only"
	// NoKey calls create_po without an idempotency key: a crash after the order was applied and
	// before the checkpoint after the node files it again.
	NoKey Variant = "no-key"
	// NoFsync writes checkpoints with afero.WriteFile (no fsync, no directory fsync), which a
	// kill forgives and a power loss does not.
	NoFsync Variant = "no-fsync"
)

// Variants lists every variant, the correct one first.
var Variants = []Variant{Correct, MemoryStore, EndOnly, NoKey, NoFsync}

// Nodes are the graph's nodes, in order.
var Nodes = []string{"plan", "lookup", "decide", "order", "report"}

// Tools are the agent's tools, as chaoskit must know them.
var Tools = []harness.Tool{
	{Name: "vendor_lookup", Contract: harness.ReadOnly, Latency: 200 * time.Millisecond},
	{Name: "create_po", Contract: harness.IdempotentByKey, Latency: time.Second},
}

// RunID is the checkpoint id of the agent's run.
const RunID = "po-run-1"

// state is the graph's local state: the conversation so far. Eino saves it in every checkpoint,
// so its type is registered with Eino's serializer.
type state struct {
	Messages []*schema.Message
}

func init() {
	schema.RegisterName[*state]("chaoskit_poagent_state")
}

// New returns the agent in variant v as a chaoskit target; give it to sim.NewRunner or
// chaoskittest.Check as harness.Fresh(poagent.New(v)).
func New(v Variant) eino.Graph[[]*schema.Message, *schema.Message] {
	return eino.Graph[[]*schema.Message, *schema.Message]{
		ID:       RunID,
		Input:    []*schema.Message{schema.UserMessage("Order 40 pallets from Acme Corp, within the approved $84,000.")},
		ToolList: Tools,
		Compile: func(ctx context.Context, b *eino.Binding) (compose.Runnable[[]*schema.Message, *schema.Message], error) {
			return compile(ctx, b, v)
		},
	}
}

var (
	vendorLookup = &schema.ToolInfo{Name: "vendor_lookup", Desc: "look a vendor's record up",
		ParamsOneOf: schema.NewParamsOneOfByParams(map[string]*schema.ParameterInfo{"vendor": {Type: schema.String, Required: true}})}
	createPO = &schema.ToolInfo{Name: "create_po", Desc: "file a purchase order",
		ParamsOneOf: schema.NewParamsOneOfByParams(map[string]*schema.ParameterInfo{
			"vendor": {Type: schema.String, Required: true}, "amount": {Type: schema.Integer, Required: true}})}
)

// script returns the model's answer at one node: it is the model.
func script(purpose string) eino.Script {
	return func(_ context.Context, in []*schema.Message, _ []*schema.ToolInfo) (eino.Turn, error) {
		var reply *schema.Message
		switch purpose {
		case "plan":
			reply = schema.AssistantMessage("", []schema.ToolCall{{Function: schema.FunctionCall{Name: "vendor_lookup", Arguments: `{"vendor":"Acme Corp"}`}}})
		case "decide":
			reply = schema.AssistantMessage("", []schema.ToolCall{{Function: schema.FunctionCall{Name: "create_po", Arguments: `{"amount":84000,"vendor":"Acme Corp"}`}}})
		case "report":
			last := in[len(in)-1]
			reply = schema.AssistantMessage(fmt.Sprintf("Filed the purchase order for Acme Corp, $84,000: %s", last.Content), nil)
		}
		return eino.Turn{Purpose: purpose, Reply: reply}, nil
	}
}

func compile(ctx context.Context, b *eino.Binding, v Variant) (compose.Runnable[[]*schema.Message, *schema.Message], error) {
	g := compose.NewGraph[[]*schema.Message, *schema.Message](compose.WithGenLocalState(func(context.Context) *state { return &state{} }))
	history := compose.WithStatePreHandler(func(_ context.Context, in []*schema.Message, s *state) ([]*schema.Message, error) {
		s.Messages = append(s.Messages, in...)
		return s.Messages, nil
	})
	remember := compose.WithStatePostHandler(func(_ context.Context, out *schema.Message, s *state) (*schema.Message, error) {
		s.Messages = append(s.Messages, out)
		return out, nil
	})
	model := func(purpose string, tools ...*schema.ToolInfo) (*eino.ChatModel, error) {
		m, err := b.ChatModel(script(purpose)).WithTools(tools)
		if err != nil {
			return nil, err
		}
		cm := m.(*eino.ChatModel)
		cm.Latency = 2 * time.Second
		return cm, nil
	}
	var key eino.KeyFunc = eino.CallIDKey(b.RunID)
	if v == NoKey {
		key = nil
	}
	lookup, err := compose.NewToolNode(ctx, &compose.ToolsNodeConfig{ExecuteSequentially: true,
		Tools: []tool.BaseTool{b.Tool(vendorLookup, nil)}})
	if err != nil {
		return nil, err
	}
	order, err := compose.NewToolNode(ctx, &compose.ToolsNodeConfig{ExecuteSequentially: true,
		Tools: []tool.BaseTool{b.Tool(createPO, key)}})
	if err != nil {
		return nil, err
	}
	plan, err := model("plan", vendorLookup)
	if err != nil {
		return nil, err
	}
	decide, err := model("decide", createPO)
	if err != nil {
		return nil, err
	}
	report, err := model("report")
	if err != nil {
		return nil, err
	}
	for _, err := range []error{
		g.AddChatModelNode("plan", plan, history, remember),
		g.AddToolsNode("lookup", lookup),
		g.AddChatModelNode("decide", decide, history, remember),
		g.AddToolsNode("order", order),
		g.AddChatModelNode("report", report, history, remember),
		g.AddEdge(compose.START, "plan"),
		g.AddEdge("plan", "lookup"),
		g.AddEdge("lookup", "decide"),
		g.AddEdge("decide", "order"),
		g.AddEdge("order", "report"),
		g.AddEdge("report", compose.END),
	} {
		if err != nil {
			return nil, err
		}
	}
	var opts []compose.GraphCompileOption
	switch v {
	case Correct, NoKey:
		opts = b.Checkpointing(Nodes...)
	case EndOnly:
		opts = b.Checkpointing("order")
	case MemoryStore:
		opts = []compose.GraphCompileOption{compose.WithCheckPointStore(&memoryStore{m: map[string][]byte{}}),
			compose.WithInterruptAfterNodes(Nodes)}
		b.Store() // invoke with the run's checkpoint id, as the team would
	case NoFsync:
		opts = []compose.GraphCompileOption{compose.WithCheckPointStore(&fileStore{fsys: b.Env.FS(), mark: b.Env.Mark}),
			compose.WithInterruptAfterNodes(Nodes)}
		b.Store()
	default:
		return nil, fmt.Errorf("poagent: unknown variant %q", v)
	}
	return g.Compile(ctx, opts...)
}

// memoryStore is the CheckPointStore of Eino's examples: a map.
type memoryStore struct{ m map[string][]byte }

func (s *memoryStore) Get(_ context.Context, id string) ([]byte, bool, error) {
	b, ok := s.m[id]
	return b, ok, nil
}

func (s *memoryStore) Set(_ context.Context, id string, b []byte) error {
	s.m[id] = b
	return nil
}

// fileStore writes each checkpoint over the last with afero.WriteFile: no fsync of the file or
// its directory. Like eino.Store, it numbers its checkpoints (a first line) and marks each.
type fileStore struct {
	fsys afero.Fs
	mark func(string)
}

func (s *fileStore) read(id string) (seq int, cp []byte, found bool, err error) {
	b, err := afero.ReadFile(s.fsys, "checkpoints/"+id)
	if os.IsNotExist(err) {
		return 0, nil, false, nil
	}
	if err != nil {
		return 0, nil, false, err
	}
	head, cp, ok := bytes.Cut(b, []byte("\n"))
	if seq, err = strconv.Atoi(string(head)); !ok || err != nil || !json.Valid(cp) {
		return 0, nil, false, fmt.Errorf("checkpoints/%s: not a checkpoint (%d bytes)", id, len(b))
	}
	return seq, cp, true, nil
}

func (s *fileStore) Get(_ context.Context, id string) ([]byte, bool, error) {
	_, cp, found, err := s.read(id)
	return cp, found, err
}

func (s *fileStore) Set(_ context.Context, id string, b []byte) error {
	seq, _, _, err := s.read(id)
	if err != nil {
		return err
	}
	if err := s.fsys.MkdirAll("checkpoints", 0o755); err != nil {
		return err
	}
	seq++
	if err := afero.WriteFile(s.fsys, "checkpoints/"+id, append([]byte(strconv.Itoa(seq)+"\n"), b...), 0o644); err != nil {
		return err
	}
	s.mark(fmt.Sprintf("checkpoint %s #%d", id, seq))
	return nil
}
