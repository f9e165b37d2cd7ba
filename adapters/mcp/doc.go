// Package mcp serves the declared tools as an MCP server, so that an agent that reaches its
// tools over the Model Context Protocol runs unmodified under chaoskit: over streamable HTTP
// (Server, an http.Handler mounted on loopback) or over stdio, through a relay an agent
// launches as its MCP server subprocess (Relay, behind chaoskit mcp). Every tools/call is one
// harness.Call of the world, through the rest.Tools interface the simulation implements; the
// world counts effects per key as for any tool, and its faults reach the agent as MCP shows
// them.
//
// It is built on the official Go SDK (github.com/modelcontextprotocol/go-sdk): the protocol's
// versions, the initialize handshake, tools/list, the JSON-RPC framing of both transports and
// the streamable HTTP rules (Accept and Content-Type checks, protocol-version headers,
// loopback DNS-rebinding protection) are the SDK's, kept current by the protocol's maintainers.
//
// # Declaring tools
//
// A tool is declared as NAME=CONTRACT (ParseTool, Tool.String), with the place of an
// idempotent tool's key:
//
//	create_po=idempotent-by-arg:$.idempotency_key   a JSON path into the arguments
//	create_po=idempotent-by-arg:$.order["key"]      (["name"] for other characters)
//	send_email=idempotent-by-meta:idempotency_key   a field of the request's _meta
//	get_po=read-only
//	notify=not-idempotent
//
// Tool.Description and Tool.InputSchema (a JSON Schema object; none means any object) have no
// text form: the caller sets them, from a file or inferred from a cassette. The annotations
// follow the contract: readOnlyHint for read-only tools, idempotentHint for all but
// not-idempotent ones.
//
// # A call
//
// A tools/call becomes harness.Call{Tool: the tool's name, Key: the key, Args: the arguments
// without the key, encoded canonically (keys sorted)}: a key that changes on resume is still the
// same effect. Arguments are not validated against the schema. An applied call's result is
// Options.Answer's (a recorded CallToolResult), else the reply as structured content and as its
// JSON text: {"id":"create_po-2"} ("topic" too, for an asynchronous tool). A call replayed
// under its key gets the first call's result again, unmarked, as a payment API answers a replay
// with the first response.
//
// # Faults as MCP shows them
//
// What a backend's error (rest.Tools.Call) becomes, by rest.OutcomeOf:
//
//	nil                        the result (isError false)
//	harness.ErrToolTransient   a result with isError true and the text "service unavailable
//	                           (503): not applied, retry": the model sees it and may retry
//	*harness.KeyReusedError    a result with isError true and Stripe's text ("Keys for
//	                           idempotent requests can only be used with the same parameters
//	                           they were first used with. ...")
//	harness.ErrFenced          a JSON-RPC error, code CodeFenced (-32050), "stale fencing
//	                           token: rejected"
//	any other error            a JSON-RPC error, -32603 (internal error), with its text
//	harness.ErrToolAmbiguous   applied, and no answer: over HTTP the connection closes with
//	                           no response at all (no status line; the TypeScript SDK's
//	                           callTool rejects with TypeError "fetch failed", the Go SDK's
//	                           with an EOF); over stdio the relay writes nothing for that
//	                           request ID, and the client's own request timeout decides (the
//	                           TypeScript SDK's is 60 s by default, then McpError -32001
//	                           "Request timed out")
//	context.DeadlineExceeded   an answer after the caller's timeout: no answer until the
//	                           caller gives up, then as ambiguous. The caller gives up by
//	                           closing its HTTP request or by notifications/cancelled for the
//	                           call (what the TypeScript SDK sends on its timeout; over stdio
//	                           the relay then aborts the call's POST); either cancels the
//	                           context of rest.Tools.Call. A caller without a timeout waits
//	                           for ever, as on a hung server.
//
// The world is not called for a request that is not a call of a declared tool: an undeclared
// tool is the SDK's JSON-RPC error -32602 "unknown tool", and arguments that are not a JSON
// object, or a key that is not a string, are -32602 too.
//
// # Transports and processes
//
// Server is stateless streamable HTTP with JSON responses: every POST stands alone (no
// Mcp-Session-Id, GET and DELETE 405), so a process killed mid-session leaves nothing behind
// and a restarted one needs no new handshake to be served. The calling process is named as for
// adapters/rest: its URL is http://127.0.0.1:PORT/t/<token>/mcp (or the bearer credential
// carries the token), and rest.Token(ctx) gives it to the backend.
//
// Relay is what chaoskit mcp runs: it reads the stdio transport's newline-delimited JSON-RPC
// (with the SDK's IOTransport) and POSTs each message to $CHAOSKIT_MCP_URL, at once, writing
// the answers back as they come. MCP clients pass a launched server few environment variables,
// so the relay takes CHAOSKIT_MCP_URL from the nearest ancestor process that has it when its
// own environment does not (Linux): the agent's configuration needs no change.
package mcp
