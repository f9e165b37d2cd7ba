// Package rest serves REST service doubles: a declared HTTP service whose operations are tools
// of chaoskit's world, so that an agent's function tools that call a REST API (payments,
// tickets, email) run unmodified against a base URL on loopback, with their SDK's retries.
// Effects, idempotency keys and faults are the world's, as for any tool. It also holds what
// the MCP server of adapters/mcp shares with it: the Tools interface the simulation implements,
// the declaration of a key's place, the identification of the calling process, and what a
// backend's error means on the wire.
//
// # Declaring a service
//
// A route is declared in one line (ParseRoute, Route.String):
//
//	METHOD PATH=CONTRACT[,name=NAME][,status=CODE]
//
//	POST /v1/charges=idempotent-by-header:Idempotency-Key,name=charges
//	POST /v1/orders=idempotent-by-body:$.idempotency_key,status=201
//	GET /v1/charges/{id}=read-only
//	POST /v1/refunds=not-idempotent
//
// PATH is a net/http.ServeMux pattern ({id} matches a segment); a literal segment wins over a
// wildcard, so /v1/charges/search and /v1/charges/{id} live side by side. The tool is named
// after the route ("POST /v1/charges") unless name= says otherwise.
//
// # A request as a call
//
// A request to a route is one harness.Call:
//   - Tool: the route's tool name;
//   - Args: a JSON object {"body": ..., "path": {...}, "query": {...}}, each part only when the
//     request has it, encoded canonically (Encode: keys sorted), so field order does not make
//     another effect. The body is JSON (Content-Type application/json, any +json, or none) or
//     a form (application/x-www-form-urlencoded, as Stripe's SDKs send: an object of strings,
//     arrays for repeated names); path holds the route's wildcards, query the URL's query.
//   - Key: the idempotency key, from the declared header, or from the declared JSON path of
//     the body, which is then left out of Args: a key that changes on resume is still the same
//     effect, and the world can tell a duplicate from a replay.
//
// # Responses
//
// An applied call is answered with the route's status (200 unless status= says) and a JSON
// body: the request's JSON object body without the key, with "id" set to the world's reply ID
// (as Stripe answers a create with the object it created: {"amount":100,"id":"charges-1"}), or
// {"id":...} for a request without an object body; Options.Answer replaces it with a recorded
// one (a cassette's). A read-only call's reply ID is only its tool's name, so a read-only
// route wants an Answer to say anything useful. A replay (the key was seen) carries
// Idempotent-Replayed: true, as Stripe's does.
//
// What a backend's error (Tools.Call) becomes, by OutcomeOf; error bodies are Stripe's shape,
// {"error":{"type":...,"message":...}}:
//
//	harness.ErrToolTransient   503, type api_error: not applied, retry
//	harness.ErrToolAmbiguous   the connection closes with no response at all after the effect
//	                           was applied (no status line: the client's HTTP library reports a
//	                           reset or an unexpected EOF, "socket hang up", "fetch failed")
//	harness.ErrFenced          409, type fencing_error
//	*harness.KeyReusedError    422, type idempotency_error, with Stripe's text ("Keys for
//	                           idempotent requests can only be used with the same parameters
//	                           they were first used with. ...")
//	context.DeadlineExceeded   no answer until the caller gives up (its own timeout closes
//	                           the connection), then the connection closes: the caller's
//	                           timeout decides, and one without a timeout waits for ever
//	any other error            500, type api_error
//
// A request that is not a call is answered without calling the world: an undeclared route 404
// (type invalid_request_error, naming the declared routes), a body that is not JSON or whose
// key is not a string 400, a body of another type 415, one over MaxBody 413.
//
// # Which process calls
//
// Every process of a target gets its own token. A request names its process by a path prefix,
// /t/<token>, so its base URL is http://127.0.0.1:PORT/t/<token> (a REST SDK's base URL, an
// MCP client's server URL); where an SDK's paths are fixed, by its bearer credential instead
// (Authorization: Bearer <token>: pass the token as the API key). WithToken strips the prefix,
// and Token(ctx) gives it to Tools.Call. A Service applies WithToken itself, so it can be
// mounted at a listener's root or behind a shared WithToken.
package rest
