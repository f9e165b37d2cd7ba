package services

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"

	"github.com/chaoskit/chaoskit/harness"
)

// BaseURL is where a Go target's Client finds the services: the model API at BaseURL+"/v1"
// (an SDK's base URL), MCP at BaseURL+"/mcp", the REST routes at their paths under BaseURL. The
// host is reserved (.invalid): no request to it can leave the process.
const BaseURL = "http://chaoskit.invalid"

// Wrap returns t with the services of cfg: every process of t finds them through Client(env),
// served in-process on the calling thread, each request the Env call it stands for. A request
// the cassette cannot answer makes the run undecided. It panics on a cfg New refuses.
func Wrap(t harness.Target, cfg Config) harness.Target {
	if _, err := New(probeEnv, cfg, Inline); err != nil {
		panic(err.Error())
	}
	return wrapped{t: t, cfg: cfg}
}

// probeEnv stands in for an Env where New only checks a Config.
var probeEnv = new(harness.Env)

type wrapped struct {
	t   harness.Target
	cfg Config
}

// Run runs the wrapped target with its process's services registered for Client.
func (w wrapped) Run(ctx context.Context, env *harness.Env) (any, error) {
	f, err := New(env, w.cfg, Inline)
	if err != nil {
		return nil, err
	}
	fronts.Store(env, f)
	env.AtEnd(func() { fronts.Delete(env) })
	defer fronts.Delete(env)
	res, err := w.t.Run(ctx, env)
	if miss := f.Miss(); miss != nil {
		return nil, miss
	}
	return res, err
}

// Tools returns the wrapped target's tools, if it declares any (harness.Tooler), and those its
// services' requests call (Config.WorldTools).
func (w wrapped) Tools() []harness.Tool {
	var tools []harness.Tool
	if tt, ok := w.t.(interface{ Tools() []harness.Tool }); ok {
		tools = slices.Clone(tt.Tools())
	}
	return w.cfg.WorldTools(tools)
}

// fronts holds the Front of every running process of a wrapped target, by its Env.
var fronts sync.Map // *harness.Env -> *Front

// Client returns the HTTP client of the process whose Env is env, which must run a target
// given to Wrap: its requests to BaseURL are served by the process's services on the calling
// thread. Give it to an SDK with BaseURL+"/v1" as its base URL. Call it from the target's
// threads only (Run, or those it starts with Env.Go), as any Env call.
func Client(env *harness.Env) *http.Client {
	v, ok := fronts.Load(env)
	if !ok {
		panic("services: Client of an Env whose target was not given to Wrap (or whose process has ended)")
	}
	return &http.Client{Transport: transport{v.(*Front)}}
}

// transport serves a request with a Front on the calling goroutine.
type transport struct{ f *Front }

// RoundTrip serves r with the Front, here: the Front's handler writes into a buffer, and the
// response is that buffer. A handler that drops the connection (http.ErrAbortHandler: a lost
// reply, a cut stream) gives an error before its status, or a body that ends in
// io.ErrUnexpectedEOF after it, as a connection closed mid-answer does.
func (t transport) RoundTrip(r *http.Request) (resp *http.Response, err error) {
	if r.URL.Host != "chaoskit.invalid" {
		return nil, fmt.Errorf("services: %s is not a chaoskit service: a Go target's Client serves only %s", r.URL, BaseURL)
	}
	rec := &recorder{header: http.Header{}}
	func() {
		defer func() {
			if p := recover(); p != nil {
				if p != http.ErrAbortHandler {
					panic(p)
				}
				rec.aborted = true
			}
		}()
		t.f.ServeHTTP(rec, r)
	}()
	if r.Body != nil {
		r.Body.Close()
	}
	if rec.aborted && rec.status == 0 {
		return nil, errors.New("services: the connection was closed before the answer (connection reset by peer)")
	}
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	var body io.Reader = bytes.NewReader(rec.body.Bytes())
	if rec.aborted {
		body = io.MultiReader(body, errReader{io.ErrUnexpectedEOF})
	}
	return &http.Response{
		Status: fmt.Sprintf("%d %s", rec.status, http.StatusText(rec.status)), StatusCode: rec.status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: rec.header, Body: io.NopCloser(body), ContentLength: -1, Request: r,
	}, nil
}

// recorder is the ResponseWriter of an in-process request.
type recorder struct {
	header  http.Header
	status  int
	body    bytes.Buffer
	aborted bool
}

func (w *recorder) Header() http.Header { return w.header }

func (w *recorder) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *recorder) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(p)
}

// Flush lets a streaming handler flush; the whole answer is read once the handler is done.
func (w *recorder) Flush() {}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
