package rest

import (
	"context"
	"net/http"
	"strings"
)

// TokenPrefix starts a path that names the calling process: /t/<token>/... (see WithToken).
const TokenPrefix = "/t/"

type tokenKey struct{}

// Token returns the token of the process that made the request whose context ctx is, as
// WithToken found it ("" when the request carried none).
func Token(ctx context.Context) string {
	t, _ := ctx.Value(tokenKey{}).(string)
	return t
}

// ContextWithToken returns ctx carrying token, as WithToken leaves it for the handlers (and for
// Tools.Call): for tests of a Tools, and for front ends that learn the token otherwise.
func ContextWithToken(ctx context.Context, token string) context.Context {
	return context.WithValue(ctx, tokenKey{}, token)
}

// WithToken returns h behind the identification of the calling process. A request names its
// process by its path's first two segments, /t/<token>, which are removed before h sees the
// path (a REST SDK's base URL, an MCP client's URL: http://127.0.0.1:PORT/t/<token>); failing
// that, by its bearer credential (Authorization: Bearer <token>, which is where an SDK whose
// paths are fixed sends its API key). Token(r.Context()) returns it in h ("" for neither). A
// request that already went through WithToken is passed on as it is, so handlers that apply
// WithToken themselves can be mounted behind a shared one.
func WithToken(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, done := r.Context().Value(tokenKey{}).(string); done {
			h.ServeHTTP(w, r)
			return
		}
		token := ""
		if rest, ok := strings.CutPrefix(r.URL.Path, TokenPrefix); ok {
			token, rest, _ = strings.Cut(rest, "/")
			if token == "" {
				writeError(w, http.StatusNotFound, "invalid_request_error", "the path "+r.URL.Path+" names no token after "+TokenPrefix)
				return
			}
			r2 := new(http.Request)
			*r2 = *r
			u := *r.URL
			u.Path, u.RawPath = "/"+rest, ""
			r2.URL = &u
			r = r2
		} else if bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			token = strings.TrimSpace(bearer)
		}
		h.ServeHTTP(w, r.WithContext(ContextWithToken(r.Context(), token)))
	})
}
