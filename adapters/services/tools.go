package services

import (
	"context"

	"github.com/chaoskit/chaoskit/harness"
)

// tools performs the tool calls of MCP and REST as Env.Call (rest.Tools).
type tools struct{ f *Front }

// Call is rest.Tools's: the call as a call of the process's Env, run where the Runner puts it,
// keyed by what it calls, with which key and which arguments.
func (t tools) Call(ctx context.Context, c harness.Call) (harness.Reply, error) {
	var (
		reply harness.Reply
		err   error
	)
	args, _ := c.Args.([]byte)
	if raw, ok := c.Args.(interface{ MarshalJSON() ([]byte, error) }); ok && args == nil {
		args, _ = raw.MarshalJSON()
	}
	key := "tool " + c.Tool + "\x00" + c.Key + "\x00" + string(args)
	if ran := t.f.run.Run(ctx, key, func(ctx context.Context) { reply, err = t.f.env.Call(ctx, c) }); ran != nil {
		return harness.Reply{}, ran
	}
	return reply, err
}
