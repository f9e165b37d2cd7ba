package rest

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/chaoskit/chaoskit/harness"
)

// Options configures a Service.
type Options struct {
	// Routes are the service's operations; two may not match the same requests.
	Routes []Route
	// World performs the calls (required).
	World Tools
	// Answer, if set, gives the body of a successful response; nil, or an Answer that returns
	// nil, gives the default: the request's JSON object body (without the key) with "id" set to
	// the reply's ID.
	Answer Answer
}

// MaxBody is the largest request body a Service reads (16 MiB); a larger one is answered 413.
const MaxBody = 16 << 20

// Service is a REST service double: an http.Handler whose declared routes are tools of the
// world. Make one with New.
type Service struct {
	opts    Options
	handler http.Handler
}

// New returns the service of opts's routes. An error names the field at fault.
func New(opts Options) (*Service, error) {
	if opts.World == nil {
		return nil, errors.New("rest: Options.World is nil")
	}
	s := &Service{opts: opts}
	mux := http.NewServeMux()
	names := map[string]int{}
	for i, r := range opts.Routes {
		if err := r.check(); err != nil {
			return nil, fmt.Errorf("rest: Options.Routes[%d] (%s): %w", i, r, err)
		}
		if j, dup := names[r.ToolName()]; dup {
			return nil, fmt.Errorf("rest: Options.Routes[%d] (%s): tool name %q is Routes[%d]'s too", i, r, r.ToolName(), j)
		}
		names[r.ToolName()] = i
		if err := handle(mux, r.Method+" "+r.Path, s.route(r)); err != nil {
			return nil, fmt.Errorf("rest: Options.Routes[%d] (%s): %w", i, r, err)
		}
	}
	mux.HandleFunc("/", s.notFound)
	s.handler = WithToken(mux)
	return s, nil
}

// handle registers h for pattern on mux, returning ServeMux's complaint (a conflict with an
// earlier pattern) as an error.
func handle(mux *http.ServeMux, pattern string, h http.HandlerFunc) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	mux.HandleFunc(pattern, h)
	return nil
}

// ServeHTTP serves one request: see the package's documentation for what it answers.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// notFound answers a request no route matches, naming the declared routes.
func (s *Service) notFound(w http.ResponseWriter, r *http.Request) {
	routes := make([]string, len(s.opts.Routes))
	for i, rt := range s.opts.Routes {
		routes[i] = rt.Method + " " + rt.Path
	}
	sort.Strings(routes)
	list := strings.Join(routes, ", ")
	if list == "" {
		list = "none"
	}
	writeError(w, http.StatusNotFound, "invalid_request_error",
		fmt.Sprintf("Unrecognized request URL (%s: %s). Declared routes: %s.", r.Method, r.URL.Path, list))
}

// route returns the handler of r.
func (s *Service) route(rt Route) http.HandlerFunc {
	params := wildcards(rt.Path)
	return func(w http.ResponseWriter, r *http.Request) {
		body, status, err := readBody(w, r)
		if err != nil {
			writeError(w, status, "invalid_request_error", err.Error())
			return
		}
		var key string
		switch {
		case rt.Key.Header != "":
			key = r.Header.Get(rt.Key.Header)
		case rt.Key.Body != "":
			if body, key, err = SplitKey(body, rt.Key.Body); err != nil {
				writeError(w, http.StatusBadRequest, "invalid_request_error", "request body: "+err.Error())
				return
			}
		}
		args := map[string]any{}
		if body != nil {
			args["body"] = body
		}
		if len(params) > 0 {
			path := map[string]any{}
			for _, p := range params {
				path[p] = r.PathValue(p)
			}
			args["path"] = path
		}
		if q := r.URL.Query(); len(q) > 0 {
			args["query"] = flatten(q)
		}
		call := harness.Call{Tool: rt.ToolName(), Key: key, Args: Encode(args)}
		reply, err := s.opts.World.Call(r.Context(), call)
		switch OutcomeOf(err) {
		case Applied:
			s.answer(w, r, rt, call, reply, body)
		case Transient:
			writeError(w, http.StatusServiceUnavailable, "api_error", err.Error())
		case Fenced:
			writeError(w, http.StatusConflict, "fencing_error", err.Error())
		case KeyReused:
			writeError(w, http.StatusUnprocessableEntity, "idempotency_error", err.Error())
		case Late:
			<-r.Context().Done()
			panic(http.ErrAbortHandler)
		case Ambiguous:
			panic(http.ErrAbortHandler)
		default:
			writeError(w, http.StatusInternalServerError, "api_error", err.Error())
		}
	}
}

// answer writes the response to an applied call.
func (s *Service) answer(w http.ResponseWriter, r *http.Request, rt Route, call harness.Call, reply harness.Reply, body any) {
	var out []byte
	if s.opts.Answer != nil {
		recorded, err := s.opts.Answer(r.Context(), call, reply)
		if err != nil {
			writeError(w, http.StatusInternalServerError, "api_error", "answer: "+err.Error())
			return
		}
		out = recorded
	}
	if out == nil {
		obj, _ := body.(map[string]any)
		if obj == nil {
			obj = map[string]any{}
		}
		obj["id"] = reply.ID
		out = Encode(obj)
	}
	if reply.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	status := rt.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(out, '\n'))
}

// readBody decodes a request's body: JSON (any Content-Type ending in json, or none) or a form
// (application/x-www-form-urlencoded: an object of strings, a repeated name an array). An error
// comes with the status to answer.
func readBody(w http.ResponseWriter, r *http.Request) (any, int, error) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("request body larger than %d bytes", MaxBody)
	} else if err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf("reading the request body: %w", err)
	}
	if len(data) == 0 {
		return nil, 0, nil
	}
	ctype := r.Header.Get("Content-Type")
	media, _, _ := mime.ParseMediaType(ctype)
	switch {
	case media == "application/x-www-form-urlencoded":
		form, err := url.ParseQuery(string(data))
		if err != nil {
			return nil, http.StatusBadRequest, fmt.Errorf("request body: %w", err)
		}
		return flatten(form), 0, nil
	case ctype == "" || media == "application/json" || strings.HasSuffix(media, "+json"):
		v, err := Decode(data)
		if err != nil {
			return nil, http.StatusBadRequest, fmt.Errorf("request body is not JSON: %w", err)
		}
		return v, 0, nil
	}
	return nil, http.StatusUnsupportedMediaType, fmt.Errorf("Content-Type %q: want application/json or application/x-www-form-urlencoded", ctype)
}

// flatten turns form or query values into a JSON object: a name's value, or its values when it
// is repeated.
func flatten(v url.Values) map[string]any {
	m := make(map[string]any, len(v))
	for name, vals := range v {
		if len(vals) == 1 {
			m[name] = vals[0]
			continue
		}
		list := make([]any, len(vals))
		for i, s := range vals {
			list[i] = s
		}
		m[name] = list
	}
	return m
}

// writeError writes an error response with Stripe's body: {"error":{"type":...,"message":...}}.
func writeError(w http.ResponseWriter, status int, kind, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(Encode(map[string]any{"error": map[string]any{"type": kind, "message": message}}), '\n'))
}
