// Package services serves the outside world of one process of a target over the protocols
// agents reach it by: the model provider's HTTP API (package provider), answered from a
// cassette; the declared tools over MCP (package mcp); and REST service doubles (package rest).
// Every request becomes the Env call it stands for — a model request is Env.Model, a tool call
// Env.Call — so it is a beat, faults land there, and effects are the world's, exactly as for a
// target that calls the Env itself. An agent is then tested as it ships: it talks HTTP to
// OPENAI_BASE_URL and its tools' URLs, and carries no chaoskit code.
//
// Where each concept lives:
//   - front.go: Config, the Front of one process (an http.Handler routing to the three
//     services), the Runner that puts a request on a thread of the simulation, and the request
//     the cassette could not answer (Front.Miss), which makes the run undecided.
//   - model.go: the model requests as Env.Model calls: their purpose (the API, the turn and
//     the request's digest), the cassette's answer and alternative, a cassette's answers in
//     order kept across restarts (Env.ModelCalls), the faults as the provider's HTTP answers.
//   - tools.go: the tool calls of MCP and REST as Env.Call.
//   - inprocess.go: a Go target's side: Wrap gives each process an *http.Client (Client) whose
//     requests the Front serves on the caller's own thread, no network involved.
//
// A process target (package adapters/process) serves the same Front on loopback, one per
// process, and sets OPENAI_BASE_URL, CHAOSKIT_MCP_URL and CHAOSKIT_HTTP_URL to it.
package services
