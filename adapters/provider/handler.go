package provider

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Backend answers one model request as the simulation decides: the cassette's answer, an
// alternative, a fault (an error of this package), or a wait. It is where a request becomes a
// beat: the Handler calls it once per request, on the request's goroutine, and writes what it
// returns.
//
// Answer returns an *Answer to send it, or one of these errors to send the provider's own error
// answer: *RateLimited, ErrServer, ErrUnavailable, ErrContextLength (wrapped or not), a *Cut to
// send part of an answer and drop the connection, or the call's Miss (a *NotFound) to refuse a
// request the cassette cannot answer with a 400 naming the diff. A hang is a Backend that blocks
// until ctx is done (the client gave up or the server closed): nothing is written then. Any
// other error is a 500 that tells the SDK not to retry (x-should-retry: false) and carries the
// error's text. Returning neither an answer nor an error panics.
type Backend interface {
	Answer(ctx context.Context, call *Call) (*Answer, error)
}

// BackendFunc is a function as a Backend.
type BackendFunc func(ctx context.Context, call *Call) (*Answer, error)

// Answer calls f.
func (f BackendFunc) Answer(ctx context.Context, call *Call) (*Answer, error) { return f(ctx, call) }

// Call is one model request as the Backend sees it.
type Call struct {
	// API is the request's wire format.
	API API
	// Request is the request, normalized.
	Request *Request
	// Digest is Request.Digest().
	Digest string
	// Stream reports whether the client asked for a stream (SSE).
	Stream bool
	// Key is the client's credential: the bearer token (OpenAI), or the x-api-key (Anthropic);
	// a per-process key tells which process asks.
	Key string
	// Header is a copy of the request's headers (the SDK's retry count is in
	// x-stainless-retry-count for the OpenAI and Anthropic SDKs).
	Header http.Header
	// Nth is the request's place among the distinct requests (by Digest) this Handler has been
	// asked, from 1: a request asked again keeps its place.
	Nth int
	// Asked is how many times this Handler was asked the same request (same Digest) before.
	Asked int
	// Proposal is the cassette's interaction that answers the request (Answer and
	// Alternatives); nil when the cassette has none, and then Miss says why.
	Proposal *Interaction
	// Miss is the *NotFound of a request the cassette does not answer; nil otherwise.
	Miss error
}

// Seed returns a fresh-id seed for this call derived from base, the request's digest and
// Asked: stable for the same request asked the same number of times, whatever other requests
// arrive meanwhile, and different each time it is asked again. A Backend that numbers its calls
// (one beat each) may use its own seeds instead.
func (c *Call) Seed(base uint64) uint64 {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], base)
	h.Write(b[:])
	h.Write([]byte(c.Digest))
	binary.LittleEndian.PutUint64(b[:], uint64(c.Asked))
	h.Write(b[:])
	return h.Sum64()
}

// Answer is what a Backend decides to send: a reply, with the seed of its fresh ids and its
// time.
type Answer struct {
	// Reply is the content: usually the Proposal's Answer or one of its Alternatives.
	Reply *Reply
	// Seed draws the answer's ids (see IDs): give each call its own.
	Seed uint64
	// Created is the answer's created / created_at time (whole seconds); zero sends 0. A
	// simulation gives its virtual clock, never the wall clock, so answers are byte-identical.
	Created time.Time
}

// Replay is the simplest Backend: it answers every call with the cassette's proposal, refuses
// a request the cassette does not answer, and seeds each answer's ids with Call.Seed(Seed).
type Replay struct {
	// Seed is the base of the answers' id seeds.
	Seed uint64
}

// Answer answers with the proposal or refuses with the miss.
func (p Replay) Answer(_ context.Context, call *Call) (*Answer, error) {
	if call.Miss != nil {
		return nil, call.Miss
	}
	return &Answer{Reply: &call.Proposal.Answer, Seed: call.Seed(p.Seed)}, nil
}

// Options configure a Handler.
type Options struct {
	// Models are model names GET /v1/models lists besides the cassette's.
	Models []string
	// MaxBodyBytes bounds a request body; 0 means 32 MiB (Anthropic's limit).
	MaxBodyBytes int64
}

// Handler serves a model provider's HTTP API on behalf of a Backend and a cassette: POST
// /v1/chat/completions, /v1/responses and /v1/messages (also without /v1, for a base URL given
// without it), GET /v1/models and /v1/models/{id}. Give an SDK the server's URL with /v1 as
// OPENAI_BASE_URL (Anthropic's SDK: without /v1 as ANTHROPIC_BASE_URL) and any key.
//
// A Handler remembers the distinct requests it was asked, for Call.Nth and Call.Asked: make
// one per run (a golden run, or one case with its restarts). It is safe for concurrent use.
type Handler struct {
	backend  Backend
	cassette *Cassette
	opts     Options

	mu    sync.Mutex
	order map[string]int // digest → Nth
	asked map[string]int // digest → times asked
}

// New returns a Handler answering from b, with c's proposals (c may be nil: every request is
// then a miss).
func New(b Backend, c *Cassette, opts Options) *Handler {
	if b == nil {
		panic("provider: New needs a Backend")
	}
	if opts.MaxBodyBytes == 0 {
		opts.MaxBodyBytes = 32 << 20
	}
	return &Handler{backend: b, cassette: c, opts: opts, order: map[string]int{}, asked: map[string]int{}}
}

// route maps a request path (with or without /v1) to its API; models reports a models path and
// the model id asked for, if any.
func route(path string) (api API, models bool, id string) {
	p := strings.TrimPrefix(path, "/v1")
	switch {
	case p == "/chat/completions":
		return ChatCompletions, false, ""
	case p == "/responses":
		return Responses, false, ""
	case p == "/messages":
		return Messages, false, ""
	case p == "/models":
		return "", true, ""
	case strings.HasPrefix(p, "/models/"):
		return "", true, strings.TrimPrefix(p, "/models/")
	}
	return "", false, ""
}

// anthropic reports whether a request comes from an Anthropic client.
func anthropic(r *http.Request, api API) bool {
	return api == Messages || r.Header.Get("anthropic-version") != "" || r.Header.Get("x-api-key") != "" && r.Header.Get("Authorization") == ""
}

// ServeHTTP answers one request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header()["Date"] = nil // answers are a function of the request and the Backend's Answer
	api, models, id := route(r.URL.Path)
	fam := familyOf(r, api)
	switch {
	case models && r.Method == http.MethodGet:
		h.models(w, fam, id)
		return
	case api == "" || r.Method != http.MethodPost:
		fam.write(w, apiError{status: 404, typ: fam.notFoundType(), message: fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path)}, nil, "")
		return
	}
	f := formats[api]
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.opts.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			fam.write(w, apiError{status: 413, typ: fam.tooLargeType(), message: fmt.Sprintf("chaoskit: the request body is larger than %d bytes", h.opts.MaxBodyBytes)}, nil, "")
		}
		return // the client is gone
	}
	p, err := f.parse(data)
	if err != nil {
		fam.refuse(w, err)
		return
	}
	call := h.call(r, api, p)
	ans, err := h.backend.Answer(r.Context(), call)
	if r.Context().Err() != nil {
		return // the client gave up, or the server is closing: there is no one to answer
	}
	requestID := NewIDs(call.Seed(0)).Next(RequestID)
	var cut *Cut
	var nf *NotFound
	switch {
	case err == nil && (ans == nil || ans.Reply == nil):
		panic(fmt.Sprintf("provider: the Backend answered a %s request with neither an Answer with a Reply nor an error", api))
	case err == nil:
		checkReply(api, ans.Reply)
		rd := prepare(api, p, ans)
		w.Header().Set(f.requestIDHeader(), rd.requestID)
		if p.stream {
			writeStream(w, f.events(rd), -1)
		} else {
			writeJSON(w, http.StatusOK, f.body(rd))
		}
	case errors.As(err, &cut):
		if cut.Answer == nil || cut.Answer.Reply == nil {
			panic("provider: a Cut from the Backend needs an Answer with a Reply to cut short")
		}
		checkReply(api, cut.Answer.Reply)
		rd := prepare(api, p, cut.Answer)
		w.Header().Set(f.requestIDHeader(), rd.requestID)
		if p.stream {
			writeStream(w, f.events(rd), cut.AfterEvents)
		} else {
			writeHalf(w, f.body(rd))
		}
		panic(http.ErrAbortHandler) // drops the connection, the body unfinished
	case errors.As(err, &nf):
		fam.write(w, apiError{status: 400, typ: "invalid_request_error", code: "chaoskit_no_recorded_answer", message: nf.Error()},
			http.Header{"X-Should-Retry": {"false"}}, requestID)
	default:
		e, hdr, ok := fam.fault(api, p.req.Model, err)
		if !ok {
			e = apiError{status: 500, typ: fam.serverErrorType(), message: "chaoskit: the simulation failed to answer: " + err.Error()}
			hdr = http.Header{"X-Should-Retry": {"false"}}
		}
		fam.write(w, e, hdr, requestID)
	}
}

// call builds the Call of a parsed request: its place among the distinct requests, the times
// it was asked, and the cassette's proposal.
func (h *Handler) call(r *http.Request, api API, p *parsed) *Call {
	c := &Call{API: api, Request: p.req, Digest: p.req.Digest(), Stream: p.stream, Header: r.Header.Clone()}
	if auth := r.Header.Get("Authorization"); strings.HasPrefix(auth, "Bearer ") {
		c.Key = strings.TrimPrefix(auth, "Bearer ")
	} else {
		c.Key = r.Header.Get("x-api-key")
	}
	h.mu.Lock()
	if _, ok := h.order[c.Digest]; !ok {
		h.order[c.Digest] = len(h.order) + 1
	}
	c.Nth = h.order[c.Digest]
	c.Asked = h.asked[c.Digest]
	h.asked[c.Digest]++
	h.mu.Unlock()
	c.Proposal, c.Miss = h.cassette.Lookup(api, p.req, c.Nth)
	return c
}

// checkReply panics on a reply a Backend built that cannot be sent.
func checkReply(api API, r *Reply) {
	if err := r.validate(); err != nil {
		panic(fmt.Sprintf("provider: the Backend's reply to a %s request cannot be sent: %v", api, err))
	}
}

// writeStream writes a streaming answer, event by event, each flushed; with cut >= 0, only its
// first cut events (at most all but the last).
func writeStream(w http.ResponseWriter, evs []event, cut int) {
	if cut >= 0 {
		evs = evs[:min(cut, len(evs)-1)]
	}
	sseHeaders(w)
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	rc.Flush()
	for _, e := range evs {
		if _, err := w.Write(e.bytes()); err != nil {
			return
		}
		rc.Flush()
	}
}

// writeHalf writes a whole answer's headers and the first half of its body, flushed.
func writeHalf(w http.ResponseWriter, data []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(len(data)))
	w.WriteHeader(http.StatusOK)
	w.Write(data[:len(data)/2])
	http.NewResponseController(w).Flush()
}
