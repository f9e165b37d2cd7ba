package eino

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/chaoskit/chaoskit/harness"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
)

// KeyFunc returns the idempotency key of one call of a tool, from the call's context (inside a
// ToolsNode it carries the tool call's id: compose.GetToolCallID) and its arguments. An empty
// key is no key.
type KeyFunc func(ctx context.Context, argumentsInJSON string) string

// CallIDKey returns a KeyFunc keying each call by run and by the id of the tool call the model
// made: "run-1/call_3f2a...". The id comes from the model's message, which a real model makes
// up anew every time it is asked: the key is stable per logical step only if that message was
// checkpointed before the tool ran (an interrupt after the model's node, see Checkpointing). If
// the message is lost in a crash, the model is asked again, the new message carries a new id,
// and the same purchase order goes out under a new key. A call made outside a ToolsNode (no tool
// call id) gets no key.
func CallIDKey(runID string) KeyFunc {
	return func(ctx context.Context, _ string) string {
		id := compose.GetToolCallID(ctx)
		if id == "" {
			return ""
		}
		return runID + "/" + id
	}
}

// Tool is an Eino InvokableTool whose every call goes through chaoskit's world (env.Call): the
// call is two beats (sent, applied), the world applies it as the tool's declared contract says,
// and the oracle counts its effect, identified by the tool's name and its arguments.
type Tool struct {
	env  *harness.Env
	info *schema.ToolInfo
	// Key gives each call its idempotency key; nil sends none.
	Key KeyFunc
	// Output turns the world's reply into what the tool returns to the graph; the default is
	// {"id":"<reply id>"}.
	Output func(argumentsInJSON string, reply harness.Reply) (string, error)
}

var _ tool.InvokableTool = (*Tool)(nil)

// NewTool returns a tool calling the world through env. info is what the model sees; its Name
// is the tool's name in chaoskit, which the target must declare with its contract
// (harness.Tooler, Graph.ToolList). key may be nil.
func NewTool(env *harness.Env, info *schema.ToolInfo, key KeyFunc) *Tool {
	if info == nil || info.Name == "" {
		panic("eino.NewTool: info.Name is empty")
	}
	return &Tool{env: env, info: info, Key: key}
}

// Info returns the tool's description for the model.
func (t *Tool) Info(context.Context) (*schema.ToolInfo, error) { return t.info, nil }

// InvokableRun calls the tool through chaoskit's world. The arguments, as the model wrote them,
// are the call's Args (so they identify the effect); they must be JSON.
func (t *Tool) InvokableRun(ctx context.Context, argumentsInJSON string, _ ...tool.Option) (string, error) {
	args := json.RawMessage(argumentsInJSON)
	if !json.Valid(args) {
		return "", fmt.Errorf("tool %s: arguments are not JSON: %q", t.info.Name, argumentsInJSON)
	}
	c := harness.Call{Tool: t.info.Name, Args: args}
	if t.Key != nil {
		c.Key = t.Key(ctx, argumentsInJSON)
	}
	r, err := t.env.Call(ctx, c)
	if err != nil {
		return "", fmt.Errorf("tool %s: %w", t.info.Name, err)
	}
	if t.Output != nil {
		return t.Output(argumentsInJSON, r)
	}
	b, err := json.Marshal(map[string]string{"id": r.ID})
	return string(b), err
}
