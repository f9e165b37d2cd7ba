package rest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/adapters/rest"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/google/go-cmp/cmp"
)

var routes = []string{
	"POST /v1/charges=idempotent-by-header:Idempotency-Key,name=charges",
	"POST /v1/orders=idempotent-by-body:$.order.key,status=201",
	"GET /v1/charges/{id}=read-only",
	"GET /v1/charges/search=read-only",
	"POST /v1/refunds=not-idempotent",
}

// serve starts a service of routes over w.
func serve(t *testing.T, w *world, answer rest.Answer) *httptest.Server {
	t.Helper()
	var rs []rest.Route
	for _, text := range routes {
		r, err := rest.ParseRoute(text)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	svc, err := rest.New(rest.Options{Routes: rs, World: w, Answer: answer})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(svc)
	t.Cleanup(srv.Close)
	return srv
}

type response struct {
	status int
	header http.Header
	body   string
}

// send makes a request; headers alternate names and values.
func send(t *testing.T, method, url, body string, headers ...string) (response, error) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return response{resp.StatusCode, resp.Header, strings.TrimSpace(string(data))}, err
}

func mustSend(t *testing.T, method, url, body string, headers ...string) response {
	t.Helper()
	r, err := send(t, method, url, body, headers...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestHeaderKeyIsNotInArgsAndAReplayIsMarked(t *testing.T) {
	w := &world{}
	srv := serve(t, w, nil)
	url := srv.URL + "/t/proc-1/v1/charges"
	first := mustSend(t, "POST", url, `{"currency":"usd","amount":100}`, "Idempotency-Key", "k1")
	again := mustSend(t, "POST", url, `{"amount":100, "currency":"usd"}`, "Idempotency-Key", "k1")
	if first.status != 200 || first.body != `{"amount":100,"currency":"usd","id":"charges-1"}` || first.header.Get("Idempotent-Replayed") != "" {
		t.Errorf("first call: %d %s, Idempotent-Replayed %q", first.status, first.body, first.header.Get("Idempotent-Replayed"))
	}
	if again.status != 200 || again.body != first.body || again.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replay: %d %s, Idempotent-Replayed %q; want the first body, replayed", again.status, again.body, again.header.Get("Idempotent-Replayed"))
	}
	want := []seen{
		{"proc-1", harness.Call{Tool: "charges", Key: "k1", Args: json.RawMessage(`{"body":{"amount":100,"currency":"usd"}}`)}},
		{"proc-1", harness.Call{Tool: "charges", Key: "k1", Args: json.RawMessage(`{"body":{"amount":100,"currency":"usd"}}`)}},
	}
	if diff := cmp.Diff(want, w.log()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

func TestBodyKeyIsTakenOutOfArgs(t *testing.T) {
	w := &world{}
	srv := serve(t, w, nil)
	r := mustSend(t, "POST", srv.URL+"/t/p/v1/orders", `{"order":{"key":"run-7:3","sku":"A1"},"qty":2}`)
	if r.status != 201 || r.body != `{"id":"POST /v1/orders-1","order":{"sku":"A1"},"qty":2}` {
		t.Errorf("got %d %s", r.status, r.body)
	}
	// A new key on resume is still the same effect: equal Args.
	mustSend(t, "POST", srv.URL+"/t/p/v1/orders", `{"order":{"key":"run-8:3","sku":"A1"},"qty":2}`)
	calls := w.log()
	if calls[0].Call.Key != "run-7:3" || calls[1].Call.Key != "run-8:3" {
		t.Errorf("keys %q, %q", calls[0].Call.Key, calls[1].Call.Key)
	}
	for _, c := range calls {
		if got := string(c.Call.Args.(json.RawMessage)); got != `{"body":{"order":{"sku":"A1"},"qty":2}}` {
			t.Errorf("args %s still hold the key or lost the rest", got)
		}
	}
}

func TestPathParamsQueryAndFormBody(t *testing.T) {
	w := &world{}
	srv := serve(t, w, nil)
	mustSend(t, "GET", srv.URL+"/t/p/v1/charges/ch_9?expand=customer&expand=invoice&limit=3", "")
	mustSend(t, "GET", srv.URL+"/t/p/v1/charges/search?query=amount>10", "")
	form := mustSend(t, "POST", srv.URL+"/t/p/v1/refunds", "charge=ch_9&amount=5", "Content-Type", "application/x-www-form-urlencoded")
	if form.body != `{"amount":"5","charge":"ch_9","id":"POST /v1/refunds-1"}` {
		t.Errorf("form body answered %s", form.body)
	}
	var got []string
	for _, c := range w.log() {
		got = append(got, c.Call.Tool+" "+string(c.Call.Args.(json.RawMessage)))
	}
	want := []string{
		`GET /v1/charges/{id} {"path":{"id":"ch_9"},"query":{"expand":["customer","invoice"],"limit":"3"}}`,
		`GET /v1/charges/search {"query":{"query":"amount>10"}}`,
		`POST /v1/refunds {"body":{"amount":"5","charge":"ch_9"}}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

func TestFaultsOnTheWire(t *testing.T) {
	for _, tc := range []struct {
		err        error
		status     int
		kind, text string
	}{
		{harness.ErrToolTransient, 503, "api_error", "service unavailable (503)"},
		{fmt.Errorf("world: %w", harness.ErrFenced), 409, "fencing_error", "stale fencing token"},
		{errors.New("disk on fire"), 500, "api_error", "disk on fire"},
	} {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			w := &world{fail: func(harness.Call) error { return tc.err }}
			r := mustSend(t, "POST", serve(t, w, nil).URL+"/v1/refunds", `{}`)
			var body struct {
				Error struct{ Type, Message string }
			}
			if err := json.Unmarshal([]byte(r.body), &body); err != nil || r.status != tc.status ||
				body.Error.Type != tc.kind || !strings.Contains(body.Error.Message, tc.text) {
				t.Errorf("got %d %s; want %d type %s saying %q", r.status, r.body, tc.status, tc.kind, tc.text)
			}
		})
	}
}

func TestKeyReusedWithOtherArgsIs422(t *testing.T) {
	w := &world{}
	srv := serve(t, w, nil)
	mustSend(t, "POST", srv.URL+"/v1/charges", `{"amount":100}`, "Idempotency-Key", "k1")
	r := mustSend(t, "POST", srv.URL+"/v1/charges", `{"amount":200}`, "Idempotency-Key", "k1")
	want := `{"error":{"message":"Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than 'k1' if you meant to execute a different request.","type":"idempotency_error"}}`
	if r.status != 422 || r.body != want {
		t.Errorf("got %d %s", r.status, r.body)
	}
}

func TestAmbiguousClosesTheConnectionAfterTheEffect(t *testing.T) {
	w := &world{fail: func(harness.Call) error { return harness.ErrToolAmbiguous }}
	srv := serve(t, w, nil)
	_, err := send(t, "POST", srv.URL+"/v1/charges", `{"amount":100}`, "Idempotency-Key", "k1")
	if err == nil || !(errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "EOF")) {
		t.Errorf("client got %v; want the connection closed with no response (EOF)", err)
	}
	if n := len(w.log()); n < 1 || w.applied["charges"] != 1 {
		t.Errorf("%d calls, %d applied; want the effect applied once", n, w.applied["charges"])
	}
}

func TestLateAnswerWaitsForTheCallersTimeout(t *testing.T) {
	w := &world{fail: func(harness.Call) error { return context.DeadlineExceeded }}
	srv := serve(t, w, nil)
	start := time.Now() // before the deadline is set: the timeout cannot end before start+200ms
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/refunds", strings.NewReader(`{}`))
	_, err := http.DefaultClient.Do(req)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) < 200*time.Millisecond {
		t.Errorf("after %v: %v; want the caller's own timeout", time.Since(start), err)
	}
}

func TestRequestsThatAreNotCalls(t *testing.T) {
	w := &world{}
	srv := serve(t, w, nil)
	for _, tc := range []struct {
		method, path, body, ctype string
		status                    int
		says                      string
	}{
		{"GET", "/v2/nothing", "", "", 404, "Declared routes: GET /v1/charges/search, GET /v1/charges/{id}, POST /v1/charges, POST /v1/orders, POST /v1/refunds."},
		{"DELETE", "/v1/charges", "", "", 404, "Unrecognized request URL (DELETE: /v1/charges)"},
		{"POST", "/v1/refunds", "{nope", "application/json", 400, "request body is not JSON"},
		{"POST", "/v1/orders", `{"order":{"key":7}}`, "application/json", 400, "$.order.key is 7: an idempotency key must be a JSON string"},
		{"POST", "/v1/refunds", "<x/>", "text/xml", 415, `Content-Type \"text/xml\"`},
		{"POST", "/t//v1/refunds", "", "", 404, "names no token"},
	} {
		r := mustSend(t, tc.method, srv.URL+tc.path, tc.body, "Content-Type", tc.ctype)
		if r.status != tc.status || !strings.Contains(r.body, tc.says) {
			t.Errorf("%s %s: got %d %s; want %d saying %q", tc.method, tc.path, r.status, r.body, tc.status, tc.says)
		}
	}
	if n := len(w.log()); n != 0 {
		t.Errorf("%d calls made; want none", n)
	}
}

func TestTokenFromBearerWhenThePathHasNone(t *testing.T) {
	w := &world{}
	srv := serve(t, w, nil)
	mustSend(t, "POST", srv.URL+"/v1/refunds", `{}`, "Authorization", "Bearer sk_proc-4")
	mustSend(t, "POST", srv.URL+"/t/proc-5/v1/refunds", `{}`, "Authorization", "Bearer sk_other")
	mustSend(t, "POST", srv.URL+"/v1/refunds", `{}`)
	var got []string
	for _, c := range w.log() {
		got = append(got, c.Token)
	}
	if diff := cmp.Diff([]string{"sk_proc-4", "proc-5", ""}, got); diff != "" {
		t.Errorf("tokens (-want +got):\n%s", diff)
	}
}

func TestWithTokenOnceForSeveralHandlers(t *testing.T) {
	w := &world{}
	r, _ := rest.ParseRoute("POST /v1/refunds=not-idempotent")
	svc, err := rest.New(rest.Options{Routes: []rest.Route{r}, World: w})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/", svc)
	srv := httptest.NewServer(rest.WithToken(mux))
	defer srv.Close()
	mustSend(t, "POST", srv.URL+"/t/tok/v1/refunds", `{}`)
	if got := w.log(); len(got) != 1 || got[0].Token != "tok" {
		t.Errorf("calls %+v; want one by tok", got)
	}
}

func TestAnswerShapesTheBody(t *testing.T) {
	w := &world{}
	srv := serve(t, w, func(_ context.Context, c harness.Call, r harness.Reply) (json.RawMessage, error) {
		if c.Tool != "charges" {
			return nil, nil
		}
		return json.RawMessage(`{"id":"ch_` + r.ID + `","object":"charge"}`), nil
	})
	if r := mustSend(t, "POST", srv.URL+"/v1/charges", `{}`); r.body != `{"id":"ch_charges-1","object":"charge"}` {
		t.Errorf("recorded answer: %s", r.body)
	}
	if r := mustSend(t, "POST", srv.URL+"/v1/refunds", `[1]`); r.body != `{"id":"POST /v1/refunds-1"}` {
		t.Errorf("default answer to a body that is no object: %s", r.body)
	}
}

func TestNewNamesTheField(t *testing.T) {
	charges := rest.Route{Method: "POST", Path: "/v1/charges", Contract: harness.IdempotentByKey, Key: rest.KeyAt{Header: "Idempotency-Key"}}
	for _, tc := range []struct {
		opts rest.Options
		says string
	}{
		{rest.Options{}, "Options.World is nil"},
		{rest.Options{World: &world{}, Routes: []rest.Route{charges, {Method: "post", Path: "/x", Contract: harness.ReadOnly}}}, `Options.Routes[1] (post /x=read-only): Method "post"`},
		{rest.Options{World: &world{}, Routes: []rest.Route{{Method: "POST", Path: "/x", Contract: harness.IdempotentByKey}}}, "Routes[0] (POST /x=idempotent-by-key): Key: an idempotent-by-key tool has its key in exactly one place (0 set)"},
		{rest.Options{World: &world{}, Routes: []rest.Route{{Method: "POST", Path: "/x", Contract: harness.IdempotentByKey, Key: rest.KeyAt{Meta: "k"}}}}, "Key: idempotent-by-meta is not for this front end (want idempotent-by-header or idempotent-by-body)"},
		{rest.Options{World: &world{}, Routes: []rest.Route{charges, {Method: "POST", Path: "/v1/charges", Contract: harness.NotIdempotent, Name: "other"}}}, "Options.Routes[1] (POST /v1/charges=not-idempotent,name=other): pattern"},
		{rest.Options{World: &world{}, Routes: []rest.Route{charges, {Method: "GET", Path: "/v1/charges", Contract: harness.ReadOnly, Name: "POST /v1/charges"}}}, `tool name "POST /v1/charges" is Routes[0]'s too`},
	} {
		_, err := rest.New(tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("New: %v; want an error saying %q", err, tc.says)
		}
	}
}

func TestOutcomeOf(t *testing.T) {
	for err, want := range map[error]rest.Outcome{
		nil:                      rest.Applied,
		harness.ErrToolTransient: rest.Transient,
		fmt.Errorf("x: %w", harness.ErrToolAmbiguous): rest.Ambiguous,
		harness.ErrFenced: rest.Fenced,
		fmt.Errorf("x: %w", &harness.KeyReusedError{Key: "k"}): rest.KeyReused,
		context.DeadlineExceeded:                               rest.Late,
		context.Canceled:                                       rest.Late,
		errors.New("other"):                                    rest.Failed,
	} {
		if got := rest.OutcomeOf(err); got != want {
			t.Errorf("OutcomeOf(%v) = %v, want %v", err, got, want)
		}
	}
}
