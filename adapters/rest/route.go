package rest

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/chaoskit/chaoskit/harness"
)

// Route is one declared operation of a REST service: a request it answers, and the tool whose
// calls such requests are.
type Route struct {
	// Method is the HTTP method, e.g. POST; GET also answers HEAD.
	Method string
	// Path is the path pattern, as net/http.ServeMux takes it: /v1/charges,
	// /v1/charges/{id} (a {name} matches one segment, {name...} the rest of the path).
	Path     string
	Contract harness.Contract
	// Key is where an IdempotentByKey route's key is: Header or Body.
	Key KeyAt
	// Name is the tool's name, which identifies its effects; "" means Method and Path, e.g.
	// "POST /v1/charges". The world names what a call creates after it ("charges-2"), which
	// the default response body returns as its id.
	Name string
	// Status is the status of a successful response; 0 means 200.
	Status int
}

// ToolName returns the name of the route's tool: Name, else Method and Path.
func (r Route) ToolName() string {
	if r.Name != "" {
		return r.Name
	}
	return r.Method + " " + r.Path
}

// ParseRoute parses a route's text form:
//
//	METHOD PATH=CONTRACT[,name=NAME][,status=CODE]
//
// with CONTRACT as ParseContract reads it (read-only, not-idempotent,
// idempotent-by-header:NAME or idempotent-by-body:$.PATH), e.g.
//
//	POST /v1/charges=idempotent-by-header:Idempotency-Key,name=charges
//	POST /v1/orders=idempotent-by-body:$.idempotency_key,status=201
//	GET /v1/charges/{id}=read-only
//	POST /v1/refunds=not-idempotent
func ParseRoute(text string) (Route, error) {
	var r Route
	fail := func(format string, args ...any) (Route, error) {
		return Route{}, fmt.Errorf("route %q: %s", text, fmt.Sprintf(format, args...))
	}
	pattern, rest, ok := strings.Cut(text, "=")
	if !ok {
		return fail("want METHOD PATH=CONTRACT, like POST /v1/charges=idempotent-by-header:Idempotency-Key")
	}
	var found bool
	if r.Method, r.Path, found = strings.Cut(pattern, " "); !found {
		return fail("want METHOD PATH before =, like POST /v1/charges")
	}
	contract, opts, hasOpts := strings.Cut(rest, ",")
	var err error
	if r.Contract, r.Key, err = ParseContract(contract); err != nil {
		return fail("%v", err)
	}
	for _, opt := range strings.Split(opts, ",") {
		if !hasOpts {
			break
		}
		name, val, _ := strings.Cut(opt, "=")
		switch name {
		case "name":
			if val == "" {
				return fail("name= wants the tool's name")
			}
			r.Name = val
		case "status":
			if r.Status, err = strconv.Atoi(val); err != nil || r.Status < 200 || r.Status > 299 || strconv.Itoa(r.Status) != val {
				return fail("status= wants a success status from 200 to 299, not %q", val)
			}
		default:
			return fail("unknown option %q (want name= or status=)", opt)
		}
	}
	if err := r.check(); err != nil {
		return fail("%v", err)
	}
	return r, nil
}

// String returns the route's text form, which ParseRoute reads back.
func (r Route) String() string {
	s := r.Method + " " + r.Path + "=" + FormatContract(r.Contract, r.Key)
	if r.Name != "" {
		s += ",name=" + r.Name
	}
	if r.Status != 0 {
		s += ",status=" + strconv.Itoa(r.Status)
	}
	return s
}

// check validates r's fields; the error names the field.
func (r Route) check() error {
	if !isToken(r.Method) || strings.ToUpper(r.Method) != r.Method {
		return fmt.Errorf("Method %q is not an HTTP method in capitals, like POST", r.Method)
	}
	if !strings.HasPrefix(r.Path, "/") || strings.ContainsAny(r.Path, ",= \t\r\n") {
		return fmt.Errorf("Path %q must start with / and hold no comma, = or space", r.Path)
	}
	if err := validPattern(r.Method + " " + r.Path); err != nil {
		return fmt.Errorf("Path %q: %v", r.Path, err)
	}
	switch r.Contract {
	case harness.ReadOnly, harness.IdempotentByKey, harness.NotIdempotent:
	default:
		return fmt.Errorf("Contract %v is not a contract", r.Contract)
	}
	if err := r.Key.Check(r.Contract, "header", "body"); err != nil {
		return err
	}
	if strings.Contains(r.Name, ",") {
		return fmt.Errorf("Name %q has a comma", r.Name)
	}
	if r.Status != 0 && (r.Status < 200 || r.Status > 299) {
		return fmt.Errorf("Status %d is not a success status (200 to 299)", r.Status)
	}
	return nil
}

// validPattern reports whether net/http.ServeMux takes pattern.
func validPattern(pattern string) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	http.NewServeMux().Handle(pattern, http.NotFoundHandler())
	return nil
}

// wildcards returns the names of the {name} and {name...} segments of a path pattern.
func wildcards(path string) []string {
	var names []string
	for _, seg := range strings.Split(path, "/") {
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") && seg != "{$}" {
			names = append(names, strings.TrimSuffix(seg[1:len(seg)-1], "..."))
		}
	}
	return names
}
