package services

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/chaoskit/chaoskit/adapters/mcp"
	"github.com/chaoskit/chaoskit/adapters/provider"
	"github.com/chaoskit/chaoskit/adapters/rest"
	"github.com/chaoskit/chaoskit/harness"
)

// Config says what a Front serves. Its zero value serves nothing: each part is served when it
// is given.
type Config struct {
	// Cassette holds the model's answers. Without one (and without Model) the model API is
	// not served.
	Cassette *provider.Cassette
	// Model, if set, serves the model API in the Cassette's place, outside the simulation:
	// its requests are not beats (a provider.Recorder, to record a cassette).
	Model http.Handler
	// Tools are the tools served over MCP (at /mcp), each a tool of the world of the same name.
	// Without them MCP is not served.
	Tools []mcp.Tool
	// Routes are the REST service doubles, under the base URL.
	Routes []rest.Route
}

// WorldTools returns tools with the tools the services' requests call, as the world declares
// them, added: each MCP tool and each REST route, unless tools already declares its name (with a
// contract of its own). A target that serves cfg declares what WorldTools returns.
func (cfg Config) WorldTools(tools []harness.Tool) []harness.Tool {
	declared := func(name string) bool {
		return slices.ContainsFunc(tools, func(t harness.Tool) bool { return t.Name == name })
	}
	for _, t := range cfg.Tools {
		if !declared(t.Name) {
			tools = append(tools, harness.Tool{Name: t.Name, Contract: t.Contract})
		}
	}
	for _, r := range cfg.Routes {
		if !declared(r.ToolName()) {
			tools = append(tools, harness.Tool{Name: r.ToolName(), Contract: r.Contract})
		}
	}
	return tools
}

// Runner runs a request's work as a call of the process's Env: f on a thread of the process in
// the simulation, returning once f has. key names the request canonically (what it calls, with
// which key and arguments): requests that arrive at once are run in the order of their keys, so
// that parallel calls decide the same every run. Run returns ctx's error if ctx is done before f
// could start, and then f does not run.
type Runner interface {
	Run(ctx context.Context, key string, f func(ctx context.Context)) error
}

// RunnerFunc is a function as a Runner.
type RunnerFunc func(ctx context.Context, key string, f func(ctx context.Context)) error

// Run calls r.
func (r RunnerFunc) Run(ctx context.Context, key string, f func(ctx context.Context)) error {
	return r(ctx, key, f)
}

// Inline is the Runner of a request served on a thread of the simulation already (a Go
// target's in-process client): it calls f there.
var Inline Runner = RunnerFunc(func(ctx context.Context, _ string, f func(ctx context.Context)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f(ctx)
	return nil
})

// Front is the services of one process: an http.Handler serving the model API under /v1 (and
// Anthropic's /v1/messages), MCP at /mcp, and the REST doubles at their routes' paths. A
// request's path may start with /t/TOKEN (rest.WithToken), which is removed.
type Front struct {
	env   *harness.Env
	run   Runner
	cfg   Config
	model http.Handler // nil without a cassette
	mcp   http.Handler // nil without tools
	rest  http.Handler // nil without routes

	mu    sync.Mutex
	miss  error  // the first model request the cassette could not answer
	base  uint64 // the seed of the process's fresh ids, drawn at the first model answer
	drawn bool
}

// New returns the Front of the process whose Env is env, its requests run by run. An error names
// the part of cfg at fault.
func New(env *harness.Env, cfg Config, run Runner) (*Front, error) {
	if env == nil || run == nil {
		panic("services: New without an Env or a Runner")
	}
	f := &Front{env: env, run: run, cfg: cfg}
	switch {
	case cfg.Model != nil:
		f.model = cfg.Model
	case cfg.Cassette != nil:
		f.model = provider.New(backend{f}, cfg.Cassette, provider.Options{})
	}
	if len(cfg.Tools) > 0 {
		s, err := mcp.New(mcp.Options{Tools: withSchemas(cfg.Tools, cfg.Cassette), World: tools{f}})
		if err != nil {
			return nil, fmt.Errorf("services: MCP tools: %w", err)
		}
		f.mcp = s
	}
	if len(cfg.Routes) > 0 {
		s, err := rest.New(rest.Options{Routes: cfg.Routes, World: tools{f}})
		if err != nil {
			return nil, fmt.Errorf("services: REST routes: %w", err)
		}
		f.rest = s
	}
	return f, nil
}

// withSchemas returns tools, each without an InputSchema given the schema and description the
// cassette's recorded requests offered the model for a function tool of its name: the schema the
// agent learned from the real MCP server when it was recorded, which the agent then offers the
// model again, as the recorded request did.
func withSchemas(tools []mcp.Tool, c *provider.Cassette) []mcp.Tool {
	if c == nil {
		return tools
	}
	out := slices.Clone(tools)
	for i, t := range out {
		if t.InputSchema != nil {
			continue
		}
	found:
		for _, it := range c.Interactions {
			if it.Match.Request == nil {
				continue
			}
			for _, rt := range it.Match.Request.Tools {
				if rt.Name == t.Name && len(rt.Parameters) > 0 {
					out[i].InputSchema, out[i].Description = rt.Parameters, cmp.Or(t.Description, rt.Description)
					break found
				}
			}
		}
	}
	return out
}

// modelPaths are the model API's paths (with or without /v1, as provider.Handler serves them).
var modelPaths = []string{"/chat/completions", "/responses", "/messages", "/models"}

// ServeHTTP routes a request to the service its path names.
func (f *Front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest.WithToken(http.HandlerFunc(f.route)).ServeHTTP(w, r)
}

func (f *Front) route(w http.ResponseWriter, r *http.Request) {
	p := strings.TrimPrefix(r.URL.Path, "/v1")
	switch {
	case f.model != nil && isModelPath(p):
		f.model.ServeHTTP(w, r)
	case f.mcp != nil && (r.URL.Path == "/mcp" || r.URL.Path == "/mcp/"):
		f.mcp.ServeHTTP(w, r)
	case f.rest != nil:
		f.rest.ServeHTTP(w, r)
	default:
		http.Error(w, fmt.Sprintf("chaoskit serves nothing at %s %s: %s", r.Method, r.URL.Path, f.served()), http.StatusNotFound)
	}
}

func isModelPath(p string) bool {
	for _, m := range modelPaths {
		if p == m || m == "/models" && strings.HasPrefix(p, "/models/") {
			return true
		}
	}
	return false
}

// served says what the Front serves, for a request to a path it does not.
func (f *Front) served() string {
	var parts []string
	if f.model != nil {
		parts = append(parts, "the model API under /v1 (--cassette)")
	}
	if f.mcp != nil {
		parts = append(parts, "MCP at /mcp (--tool)")
	}
	if f.rest != nil {
		parts = append(parts, "REST routes (--http)")
	}
	if len(parts) == 0 {
		return "no service is declared (--cassette, --tool, --http)"
	}
	return "it serves " + strings.Join(parts, ", ")
}

// Miss returns, once a model request came that the cassette could not answer, an error wrapping
// harness.ErrUndecided with the diff between what was asked and what was recorded; nil
// otherwise. A process that ends with it makes its run undecided.
func (f *Front) Miss() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.miss
}

func (f *Front) missed(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.miss == nil {
		f.miss = fmt.Errorf("the model was asked what its cassette does not answer, so the run cannot be judged (add an interaction, or a rule, to the cassette): %w: %w", harness.ErrUndecided, err)
	}
}

// errAsked is what a request gets whose work did not run (its client gave up first).
var errAsked = errors.New("services: the request ended before it was run")
