// Package eino puts a graph of Eino (github.com/cloudwego/eino, compose) under chaoskit, in
// process: a checkpoint store on the process's disk (Store), tools whose calls go through
// chaoskit's world (Tool), a chat model that is chaoskit's scripted model (ChatModel), and Graph,
// which makes a graph one chaoskit target, resumed from its last checkpoint after every crash.
// It is its own module so that Eino's dependencies stay out of chaoskit's.
//
// # Pointing chaoskit at your graph
//
// Move the graph's construction into a function that takes its components from a Binding, compile
// it with b.Checkpointing(every node), declare the tools with their contracts, and check it:
//
//	target := eino.Graph[In, Out]{
//		ID: "run-1", Input: in, // one run, resumed under this checkpoint id
//		ToolList: []harness.Tool{{Name: "create_po", Contract: harness.IdempotentByKey}},
//		Compile: func(ctx context.Context, b *eino.Binding) (compose.Runnable[In, Out], error) {
//			po := b.Tool(createPOInfo, eino.CallIDKey(b.RunID)) // in place of your real tool
//			m := b.ChatModel(script)                              // in place of your real model
//			g := buildMyGraph(m, po)                              // your graph, unchanged
//			return g.Compile(ctx, b.Checkpointing("plan", "act", "report")...)
//		},
//	}
//	chaoskittest.Check(t, harness.Fresh(target), campaign.Options{})
//
// Your tools' real side effects stay out: a Tool only tells chaoskit's world what the call does
// (its arguments) and under which key, and the world counts it. The script says what the model
// answers at each step. Package poagent is a complete example, with the usual mistakes as
// variants and what catches each.
//
// # What Eino does and does not save
//
// Eino saves a checkpoint only when a run stops at an interrupt, never after an ordinary node and
// never when the run succeeds. Without interrupts a crash re-runs the whole graph, whatever store
// it has; with compose.WithInterruptAfterNodes naming every node, Graph invokes the graph again
// after each interrupt and a crash redoes at most the node it cut. The interrupt after the last
// node never fires, and a finished run's last checkpoint stays, so invoking its id again would
// run the last nodes again: Graph records the output (Store.SetDone) and returns it from then on.
//
// An idempotency key must be stable per logical step. Eino gives each tool call the id the model
// made up for it (compose.GetToolCallID), which is new every time the model is asked: CallIDKey
// is stable exactly when the model's message was checkpointed before its tools ran, which an
// interrupt after the model's node does.
//
// # Keep the graph on one goroutine
//
// chaoskit crashes a process by ending, with runtime.Goexit, the goroutine that reached the
// crash beat. Eino runs a node on the caller's goroutine when it is the only one ready, and on
// a goroutine of its own otherwise (parallel branches, parallel tool calls, a graph interrupted
// from outside); chaoskit cannot schedule those goroutines, and Eino takes one that exits for a
// node that finished with no output (an error merging values, or a panic, follows). Keep graphs
// sequential: no parallel branches, compose.ToolsNodeConfig{ExecuteSequentially: true}, no
// compose.WithGraphInterrupt.
package eino
