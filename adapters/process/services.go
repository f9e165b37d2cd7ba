package process

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/chaoskit/chaoskit/adapters/mcp"
	"github.com/chaoskit/chaoskit/adapters/rest"
	"github.com/chaoskit/chaoskit/adapters/services"
	"github.com/chaoskit/chaoskit/harness"
)

// The services a Target declares (Target.Services: a model API answering from a cassette, MCP
// tools, REST doubles) are served to every process of it over HTTP on loopback, through one
// server for all the targets of this program: a process finds its own under
// http://127.0.0.1:PORT/t/TOKEN, whose token names it, as the variables below give it. Every
// request is submitted through Admit, so requests a process makes at once are decided as the
// protocol's are, and what a request does is Env calls: beats where faults land.

// The variables a process of a Target with services gets, each only when the service it names
// is declared. A team maps its own variable names onto them with Env ("PAYMENTS_URL=${CHAOSKIT_HTTP_URL}").
const (
	EnvHTTPURL = "CHAOSKIT_HTTP_URL" // the base of every service of the process: http://127.0.0.1:PORT/t/TOKEN
	EnvMCPURL  = mcp.EnvURL          // the MCP server of the declared tools (streamable HTTP)
)

// serviceVars returns the variables that give a process its services, at base.
func serviceVars(cfg services.Config, base, token string) []string {
	var v []string
	if hasServices(cfg) {
		v = append(v, EnvHTTPURL+"="+base)
	}
	if len(cfg.Tools) > 0 {
		v = append(v, EnvMCPURL+"="+base+"/mcp")
	}
	if cfg.Cassette != nil || cfg.Model != nil {
		v = append(v,
			"OPENAI_BASE_URL="+base+"/v1", "OPENAI_API_KEY="+token,
			// The Agents SDK exports traces to OpenAI's host unless told not to: nothing
			// leaves loopback.
			"OPENAI_AGENTS_DISABLE_TRACING=1",
			"ANTHROPIC_BASE_URL="+base, "ANTHROPIC_API_KEY="+token)
	}
	return v
}

// hasServices reports whether cfg declares any service.
func hasServices(cfg services.Config) bool {
	return cfg.Cassette != nil || cfg.Model != nil || len(cfg.Tools) > 0 || len(cfg.Routes) > 0
}

// expandEnv returns the entries of env (KEY=VALUE) with each ${CHAOSKIT_NAME} in a value
// replaced by that variable of the process, from vars; other text is left as it is.
func expandEnv(env, vars []string) []string {
	known := map[string]string{}
	for _, v := range vars {
		k, val, _ := strings.Cut(v, "=")
		known[k] = val
	}
	out := make([]string, len(env))
	for i, e := range env {
		k, val, _ := strings.Cut(e, "=")
		out[i] = k + "=" + expandChaoskit(val, func(name string) string { return known[name] })
	}
	return out
}

// expandChaoskit replaces each ${CHAOSKIT_NAME} of s by get(CHAOSKIT_NAME).
func expandChaoskit(s string, get func(string) string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "${CHAOSKIT_")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		b.WriteString(get(s[i+2 : i+j]))
		s = s[i+j+1:]
	}
}

// checkEnvRefs returns an error naming the first ${CHAOSKIT_NAME} of env that no process of a
// target with cfg's services gets.
func checkEnvRefs(env []string, cfg services.Config) error {
	known := map[string]bool{EnvSocket: true, EnvToken: true, EnvProtocol: true, EnvStateDir: true, EnvProcess: true, EnvAttempt: true, EnvWorker: true}
	for _, v := range serviceVars(cfg, "", "") {
		k, _, _ := strings.Cut(v, "=")
		known[k] = true
	}
	for _, e := range env {
		bad := ""
		expandChaoskit(e, func(name string) string {
			if !known[name] && bad == "" {
				bad = name
			}
			return ""
		})
		if bad != "" {
			var names []string
			for k := range known {
				if strings.HasPrefix(k, "CHAOSKIT_") {
					names = append(names, k)
				}
			}
			slices.Sort(names)
			return fmt.Errorf("env %q: no process gets ${%s} (it has %s; the URLs come with declared services: a cassette, tools or HTTP routes)", e, bad, strings.Join(names, ", "))
		}
	}
	return nil
}

// door is the loopback server of every process's services, started at the first process that
// has some and serving until the program exits.
var door struct {
	once sync.Once
	url  string // http://127.0.0.1:PORT
	err  error
}

// serveServices starts the services' server once, and returns its URL.
func serveServices() (string, error) {
	door.once.Do(func() {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			door.err = fmt.Errorf("process: serving the services on loopback: %w", err)
			return
		}
		fd := NewFrontDoor()
		srv := &http.Server{Handler: fd.Handler(rest.WithToken(http.HandlerFunc(serveFront))), ConnState: fd.ConnState}
		go srv.Serve(fd.Listener(ln))
		door.url = "http://" + ln.Addr().String()
	})
	return door.url, door.err
}

// serveFront hands a request to the services of the process its token names.
func serveFront(w http.ResponseWriter, r *http.Request) {
	token := rest.Token(r.Context())
	procs.mu.Lock()
	p := procs.m[token]
	procs.mu.Unlock()
	if p == nil || p.front == nil {
		http.Error(w, fmt.Sprintf("chaoskit: no running process has the token of %s (a process's services are at the URL its %s gives it, and end with it)", r.URL.Path, EnvHTTPURL), http.StatusServiceUnavailable)
		return
	}
	p.front.ServeHTTP(w, r)
}

// newFront returns the services of the process p, token its token: its requests are submitted
// through Admit, keyed by what they do.
func newFront(p *proc, cfg services.Config, token string) (*services.Front, error) {
	run := services.RunnerFunc(func(ctx context.Context, key string, f func(context.Context)) error {
		reply, err := Admit(ctx, token, Key{Op: "http", Name: key}, func(ctx context.Context, _ *harness.Env) any {
			// As before each request of the protocol's: on a plain disk, the disk holds at
			// this beat what a kill here leaves.
			if err := p.disk.atBeat(); err != nil {
				p.doorFailed(err)
				return err
			}
			f(ctx)
			return nil
		})
		if err == nil {
			err, _ = reply.(error)
		}
		return err
	})
	return services.New(p.env, cfg, run)
}

// servicesEnv returns, for a process with services, the variables that name them, and starts
// the server of them if it is not running yet.
func (p *proc) servicesEnv(token string) ([]string, error) {
	if !hasServices(p.t.Services) {
		return nil, nil
	}
	url, err := serveServices()
	if err != nil {
		return nil, err
	}
	if p.front, err = newFront(p, p.t.Services, token); err != nil {
		return nil, fmt.Errorf("process: %w", err)
	}
	return serviceVars(p.t.Services, url+rest.TokenPrefix+token, token), nil
}

// doorFailed records the first error that fails the process from its services.
func (p *proc) doorFailed(err error) {
	p.doorMu.Lock()
	defer p.doorMu.Unlock()
	if p.doorErr == nil {
		p.doorErr = err
	}
}

// missed returns the error a process ends with when its services failed it (a copy of its
// state directory that failed), or were asked what the cassette does not answer
// (harness.ErrUndecided); nil otherwise.
func (p *proc) missed() error {
	if p.front == nil {
		return nil
	}
	p.doorMu.Lock()
	defer p.doorMu.Unlock()
	if p.doorErr != nil {
		return p.doorErr
	}
	return p.front.Miss()
}
