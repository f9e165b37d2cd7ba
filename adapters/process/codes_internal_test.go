package process

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"testing"

	"github.com/chaoskit/chaoskit/adapters/process/client"
	"github.com/chaoskit/chaoskit/internal/needs"
)

// serverCodes are the protocol's error codes, as the server answers them: the one table every
// client's list is checked against.
var serverCodes = []string{codeTransient, codeAmbiguous, codeTimeout, codeFenced, codeKeyReused, codeLeaseHeld, codeLeaseLost,
	codeRateLimited, codeModelServer, codeContextLength, codeDeadline, codeBadRequest, codeVersion}

// same fails t unless a client's codes are the server's, one for one.
func same(t *testing.T, client string, codes []string) {
	t.Helper()
	want, got := slices.Sorted(slices.Values(serverCodes)), slices.Sorted(slices.Values(codes))
	if !slices.Equal(want, got) {
		t.Errorf("%s knows the error codes %v; the server answers %v", client, got, want)
	}
}

// The Go client, a file of its own that a team may copy, names the protocol's error codes
// itself: they must be the server's, one for one.
func TestGoClientKnowsEveryErrorCode(t *testing.T) {
	var codes []string
	for _, c := range []*client.Error{client.ErrTransient, client.ErrAmbiguous, client.ErrTimeout, client.ErrFenced, client.ErrKeyReused,
		client.ErrLeaseHeld, client.ErrLeaseLost, client.ErrRateLimited, client.ErrModelServer, client.ErrContextLength,
		client.ErrDeadline, client.ErrBadRequest, client.ErrVersion} {
		codes = append(codes, c.Code)
	}
	same(t, "client.go", codes)
}

// So do the Python client (its exception classes by code), the JavaScript client (its
// errorsByCode) and the JavaScript client's type declarations (the ErrorCode union): a code
// added to the server and not to a client fails here.
func TestEveryClientKnowsEveryErrorCode(t *testing.T) {
	// printed runs a program that prints the client's codes as a JSON list.
	printed := func(t *testing.T, argv ...string) []string {
		out, err := exec.Command(argv[0], argv[1:]...).Output()
		if err != nil {
			t.Fatalf("%s: %v", argv[0], err)
		}
		var codes []string
		if err := json.Unmarshal(out, &codes); err != nil {
			t.Fatalf("%q: %v", out, err)
		}
		return codes
	}
	t.Run("python", func(t *testing.T) {
		python := needs.Command(t, "python3", "apt-get install python3")
		same(t, "python/chaoskit.py", printed(t, python, "-S", "-B", "-c", "import json, sys; sys.path.insert(0, 'python'); import chaoskit; print(json.dumps(sorted(chaoskit._BY_CODE)))"))
	})
	t.Run("javascript", func(t *testing.T) {
		node := needs.Command(t, "node", "apt-get install nodejs")
		same(t, "js/chaoskit.mjs", printed(t, node, "--input-type=module", "-e", "const m = await import('./js/chaoskit.mjs'); console.log(JSON.stringify(Object.keys(m.errorsByCode)))"))
	})
	t.Run("typescript", func(t *testing.T) {
		b, err := os.ReadFile("js/chaoskit.d.ts")
		if err != nil {
			t.Fatal(err)
		}
		union := regexp.MustCompile(`(?s)export type ErrorCode =(.*?);`).FindSubmatch(b)
		if union == nil {
			t.Fatal("js/chaoskit.d.ts declares no ErrorCode union")
		}
		var codes []string
		for _, m := range regexp.MustCompile(`'([a-z_]+)'`).FindAllSubmatch(union[1], -1) {
			codes = append(codes, string(m[1]))
		}
		same(t, "js/chaoskit.d.ts", codes)
	})
}
