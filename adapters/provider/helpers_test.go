package provider_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/adapters/provider"
)

// update rewrites the golden files from what the tests get.
var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// golden compares got with testdata/golden/name, or writes it there under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./adapters/provider -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from what the handler wrote (go test ./adapters/provider -run %s -update rewrites it)\ngot:\n%s\nwant:\n%s", path, t.Name(), got, want)
	}
}

// exchange is one HTTP answer as a client sees it.
type exchange struct {
	status  int
	header  http.Header
	body    []byte
	dropped bool // the connection closed before the body's end
}

// dump is the answer as a golden file holds it: status, headers sorted, body, and a last line
// when the connection dropped.
func (e *exchange) dump() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP %d\n", e.status)
	keys := make([]string, 0, len(e.header))
	for k := range e.header {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s: %s\n", k, strings.Join(e.header[k], ", "))
	}
	b.WriteString("\n")
	b.Write(e.body)
	if e.dropped {
		b.WriteString("\n<connection dropped>\n")
	}
	return b.Bytes()
}

// post sends body to the server's path with headers (name, value, …) and reads the answer.
func post(t *testing.T, srv *httptest.Server, method, path, body string, headers ...string) *exchange {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer test-key")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	return &exchange{status: resp.StatusCode, header: resp.Header, body: got, dropped: err != nil}
}

// created is the time the tests' answers carry.
var created = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// fixed is a Backend that answers every call the same way, and keeps the calls.
type fixed struct {
	mu     sync.Mutex
	answer *provider.Answer
	err    error
	calls  []*provider.Call
}

// Answer returns the fixed answer or error; an error of nil with no answer answers with the
// proposal, seed 7.
func (f *fixed) Answer(_ context.Context, call *provider.Call) (*provider.Answer, error) {
	f.mu.Lock()
	f.calls = append(f.calls, call)
	f.mu.Unlock()
	if f.answer == nil && f.err == nil {
		if call.Miss != nil {
			return nil, call.Miss
		}
		return &provider.Answer{Reply: &call.Proposal.Answer, Seed: 7, Created: created}, nil
	}
	return f.answer, f.err
}

// seen returns the calls so far.
func (f *fixed) seen() []*provider.Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// serve starts a Handler of b and c; the server closes with the test.
func serve(t *testing.T, b provider.Backend, c *provider.Cassette) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(provider.New(b, c, provider.Options{Models: []string{"gpt-4o"}}))
	t.Cleanup(srv.Close)
	return srv
}

// mustParse parses a cassette given as text.
func mustParse(t *testing.T, text string) *provider.Cassette {
	t.Helper()
	c, err := provider.Parse([]byte(text), "test.json")
	if err != nil {
		t.Fatal(err)
	}
	return c
}
