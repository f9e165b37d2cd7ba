// Package provider is a stand-in for a model provider's HTTP API: it serves on loopback what
// agent SDKs call (OpenAI's Chat Completions and Responses, Anthropic's Messages, streaming or
// not), answers from a cassette, and turns the simulation's faults into the provider's own HTTP
// answers, so that an unmodified agent runs under chaoskit with only OPENAI_BASE_URL and
// OPENAI_API_KEY set (ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY for Anthropic's SDK).
//
// Its one job is the wire: reading a request into a normalized form, and writing an answer, a
// fault or a cut exactly as the provider would. What each request gets is decided elsewhere,
// by a Backend (the simulation: a request is a beat).
//
// Where each concept lives:
//
//   - request.go: the normalized Request (what a cassette matches and Digest hashes), the
//     volatile fields left out, the call#N placeholders of tool-call ids.
//   - content.go: content parts and tool choices, shared by the wire formats.
//   - chat.go, responses.go, messages.go: one wire format each, its request read and its
//     answer written whole and as server-sent events.
//   - wire.go: what the formats share: the answer prepared with its ids, SSE events, error
//     bodies.
//   - reply.go: Reply, what the model answers, with usage worked out when absent.
//   - ids.go: IDs, the fresh ids every answer carries, drawn from a seed.
//   - cassette.go, diff.go: the Cassette (CASSETTE.md describes the file), Load, Save,
//     Lookup and the NotFound diff.
//   - handler.go: the Handler (http.Handler), the Backend interface, Call and Answer, Replay.
//   - faults.go: the faults a Backend returns (RateLimited, ErrServer, ErrUnavailable,
//     ErrContextLength, Cut) and how each provider says them.
//   - family.go: what differs between OpenAI and Anthropic outside the formats: error
//     envelopes and GET /v1/models.
//   - record.go: the Recorder, which proxies to a real provider and writes a cassette, and the
//     reading of a provider's answers (whole or streamed) back into a Reply.
//   - CASSETTE.md: the cassette file format, for people writing one by hand.
//   - testdata/sdk: the real SDKs' scripts (openai, @openai/agents, @langchain/openai,
//     @anthropic-ai/sdk, the Vercel AI SDK, Python's urllib) that sdk_test.go runs against a
//     Handler; testdata/golden: the answers' bytes.
package provider
