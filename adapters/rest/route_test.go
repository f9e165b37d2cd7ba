package rest_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/adapters/rest"
	"github.com/chaoskit/chaoskit/harness"
	"pgregory.net/rapid"
)

// name draws a field or segment name of letters, digits, _ and -.
var name = rapid.StringMatching(`[A-Za-z0-9_-]{1,8}`)

// anyName draws a field name of any characters but a comma (which ends a declaration's part).
var anyName = rapid.StringMatching(`[^,]{1,8}`)

// keyAt draws where a key is, for the given places.
func keyAt(t *rapid.T, places ...string) rest.KeyAt {
	var k rest.KeyAt
	switch rapid.SampledFrom(places).Draw(t, "place") {
	case "header":
		k.Header = rapid.StringMatching(`[A-Za-z0-9!#$%&'*+.^_|~-]{1,12}`).Draw(t, "header")
	case "body":
		k.Body = rest.FormatPath(rapid.SliceOfN(anyName, 1, 3).Draw(t, "body path")...)
	case "arg":
		k.Arg = rest.FormatPath(rapid.SliceOfN(anyName, 1, 3).Draw(t, "arg path")...)
	case "meta":
		k.Meta = rapid.StringMatching(`[^, \t\r\n]{1,12}`).Draw(t, "meta")
	}
	return k
}

func TestContractRoundTrips(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := rapid.SampledFrom([]harness.Contract{harness.ReadOnly, harness.NotIdempotent, harness.IdempotentByKey}).Draw(t, "contract")
		var k rest.KeyAt
		if c == harness.IdempotentByKey {
			k = keyAt(t, "header", "body", "arg", "meta")
		}
		text := rest.FormatContract(c, k)
		c2, k2, err := rest.ParseContract(text)
		if err != nil || c2 != c || k2 != k {
			t.Fatalf("ParseContract(%q) = %v, %+v, %v; want %v, %+v", text, c2, k2, err, c, k)
		}
	})
}

func TestRouteRoundTrips(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		segs := rapid.SliceOfN(rapid.OneOf(name, rapid.Map(name, func(s string) string {
			return "{w" + strings.ReplaceAll(s, "-", "_") + "}"
		})), 1, 4).Draw(t, "segments")
		seen := map[string]bool{}
		for i, s := range segs { // wildcards' names must differ
			if strings.HasPrefix(s, "{") && seen[s] {
				segs[i] = "lit"
			}
			seen[s] = true
		}
		r := rest.Route{
			Method:   rapid.SampledFrom([]string{"GET", "POST", "PUT", "PATCH", "DELETE"}).Draw(t, "method"),
			Path:     "/" + strings.Join(segs, "/"),
			Contract: rapid.SampledFrom([]harness.Contract{harness.ReadOnly, harness.NotIdempotent, harness.IdempotentByKey}).Draw(t, "contract"),
			Name:     rapid.OneOf(rapid.Just(""), anyName).Draw(t, "name"),
			Status:   rapid.OneOf(rapid.Just(0), rapid.IntRange(200, 299)).Draw(t, "status"),
		}
		if r.Contract == harness.IdempotentByKey {
			r.Key = keyAt(t, "header", "body")
		}
		text := r.String()
		got, err := rest.ParseRoute(text)
		if err != nil || got != r {
			t.Fatalf("ParseRoute(%q) = %+v, %v; want %+v", text, got, err, r)
		}
		if again := got.String(); again != text {
			t.Fatalf("String() = %q after parsing %q", again, text)
		}
	})
}

// SplitKey finds a key at any path FormatPath writes, and leaves the rest of the document.
func TestSplitKeyAtFormattedPath(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		names := rapid.SliceOfN(anyName, 1, 3).Draw(t, "names")
		doc := map[string]any{"other": "x"}
		obj := doc
		for _, n := range names[:len(names)-1] {
			child := map[string]any{}
			obj[n] = child
			obj = child
		}
		obj[names[len(names)-1]] = "the-key"
		path := rest.FormatPath(names...)
		rest1, key, err := rest.SplitKey(doc, path)
		if err != nil || key != "the-key" {
			t.Fatalf("SplitKey(%s) = %q, %v", path, key, err)
		}
		if strings.Contains(string(rest.Encode(rest1)), "the-key") {
			t.Fatalf("the key is still in %s", rest.Encode(rest1))
		}
	})
}

func TestMalformedDeclarationsNameTheField(t *testing.T) {
	for text, says := range map[string]string{
		"POST /v1/charges":                                   "want METHOD PATH=CONTRACT",
		"/v1/charges=read-only":                              "want METHOD PATH before =",
		"post /v1/charges=read-only":                         `Method "post" is not an HTTP method in capitals`,
		"POST v1/charges=read-only":                          `Path "v1/charges" must start with /`,
		"POST /v1/{id/x=read-only":                           `Path "/v1/{id/x"`,
		"POST /v1/charges=idempotent":                        `contract "idempotent": say where the key is`,
		"POST /v1/charges=idempotent-by-key":                 "idempotent-by-header:NAME, idempotent-by-body:$.PATH",
		"POST /v1/charges=sometimes":                         `contract "sometimes": unknown`,
		"POST /v1/charges=idempotent-by-header:Bad Header":   `header "Bad Header" is not a header name`,
		"POST /v1/charges=idempotent-by-body:key":            `JSON path "key", column 1: must start with $`,
		"POST /v1/charges=idempotent-by-body:$":              "names the whole document",
		"POST /v1/charges=idempotent-by-body:$.a.":           `JSON path "$.a.", column 4: want a name`,
		`POST /v1/charges=idempotent-by-body:$["a"`:          `column 2: want a JSON string then ] after [`,
		"POST /v1/charges=idempotent-by-body:$.a b":          `column 4: unexpected " "`,
		"POST /v1/charges=idempotent-by-arg:$.key":           "idempotent-by-arg is not for this front end",
		"POST /v1/charges=idempotent-by-meta:key":            "idempotent-by-meta is not for this front end",
		"POST /v1/charges=read-only,status=500":              `status= wants a success status from 200 to 299, not "500"`,
		"POST /v1/charges=read-only,status=2O1":              `not "2O1"`,
		"POST /v1/charges=read-only,name=":                   "name= wants the tool's name",
		"POST /v1/charges=read-only,latency=1s":              `unknown option "latency=1s" (want name= or status=)`,
		"POST /v1/charges=read-only,":                        `unknown option ""`,
		"POST /v1/charges=idempotent-by-header:Idem,,name=x": `unknown option ""`,
	} {
		_, err := rest.ParseRoute(text)
		if err == nil || !strings.Contains(err.Error(), says) || !strings.Contains(err.Error(), fmt.Sprintf("%q", text)) {
			t.Errorf("ParseRoute(%q): %v; want an error quoting it and saying %q", text, err, says)
		}
	}
}
