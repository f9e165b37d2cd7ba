package eino

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/chaoskit/chaoskit/harness"
	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/schema"
)

// Turn is one answer of the scripted model: what it is for, and what it says.
type Turn struct {
	// Purpose names the logical call uniquely in the run ("plan", "decide"): chaoskit counts the
	// calls made again after a restart by it.
	Purpose string
	// Reply is the model's message: its content and the tools it calls. Leave the tool calls'
	// IDs empty: the model makes them up, as a real one does.
	Reply *schema.Message
}

// Script answers the model's input: it is the model. tools are the tools bound with WithTools.
type Script func(ctx context.Context, in []*schema.Message, tools []*schema.ToolInfo) (Turn, error)

// ChatModel is an Eino ToolCallingChatModel whose every Generate is a call of chaoskit's
// scripted model (env.Model): a beat, with its latency in virtual time, at which the model
// faults (rate limits, server errors, context length, a hang) happen. Its tool calls get fresh
// random IDs ("call_" and 16 hex digits) from the process's random source, as a real model's
// do: a restarted process that asks again gets other IDs.
type ChatModel struct {
	env    *harness.Env
	script Script
	tools  []*schema.ToolInfo
	// Latency is the virtual time each answer takes.
	Latency time.Duration
	// Timeout is each call's deadline, in virtual time (env.WithTimeout): a model that never
	// answers (the model-hang fault) then fails the call rather than the run. The default is
	// DefaultModelTimeout; a negative Timeout sets none.
	Timeout time.Duration
}

// DefaultModelTimeout is ChatModel's default deadline for one call.
const DefaultModelTimeout = 2 * time.Minute

var _ model.ToolCallingChatModel = (*ChatModel)(nil)

// NewChatModel returns the scripted model answering through env.
func NewChatModel(env *harness.Env, script Script) *ChatModel {
	if script == nil {
		panic("eino.NewChatModel: script is nil")
	}
	return &ChatModel{env: env, script: script}
}

// WithTools returns a copy of the model with tools bound.
func (m *ChatModel) WithTools(tools []*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	c := *m
	c.tools = append([]*schema.ToolInfo(nil), tools...)
	return &c, nil
}

// Generate asks the script for the answer and has chaoskit's model give it.
func (m *ChatModel) Generate(ctx context.Context, in []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	turn, err := m.script(ctx, in, m.tools)
	if err != nil {
		return nil, err
	}
	if turn.Reply == nil || turn.Purpose == "" {
		return nil, fmt.Errorf("eino.ChatModel: the script's turn needs a Purpose and a Reply")
	}
	want, err := json.Marshal(turn.Reply)
	if err != nil {
		return nil, err
	}
	if d := m.timeout(); d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = m.env.WithTimeout(ctx, d)
		defer cancel()
	}
	text, err := m.env.Model(ctx, harness.ModelCall{Purpose: turn.Purpose, Reply: string(want), Latency: m.Latency})
	if err != nil {
		return nil, fmt.Errorf("model (%s): %w", turn.Purpose, err)
	}
	var msg schema.Message
	if err := json.Unmarshal([]byte(text), &msg); err != nil {
		return nil, fmt.Errorf("model (%s): %w", turn.Purpose, err)
	}
	if msg.Role == "" {
		msg.Role = schema.Assistant
	}
	for i := range msg.ToolCalls {
		tc := &msg.ToolCalls[i]
		if tc.ID == "" {
			tc.ID = fmt.Sprintf("call_%016x", m.env.Rand().Uint64())
		}
		if tc.Type == "" {
			tc.Type = "function"
		}
	}
	return &msg, nil
}

func (m *ChatModel) timeout() time.Duration {
	if m.Timeout == 0 {
		return DefaultModelTimeout
	}
	return m.Timeout
}

// Stream returns Generate's answer as a stream of one message.
func (m *ChatModel) Stream(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	msg, err := m.Generate(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	return schema.StreamReaderFromArray([]*schema.Message{msg}), nil
}
