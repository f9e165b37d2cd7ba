package mcp_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/adapters/mcp"
	"github.com/chaoskit/chaoskit/adapters/rest"
	"github.com/chaoskit/chaoskit/harness"
	"pgregory.net/rapid"
)

func TestToolRoundTrips(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tool := mcp.Tool{
			Name:     rapid.StringMatching(`[A-Za-z0-9_.-]{1,20}`).Draw(t, "name"),
			Contract: rapid.SampledFrom([]harness.Contract{harness.ReadOnly, harness.NotIdempotent, harness.IdempotentByKey}).Draw(t, "contract"),
		}
		if tool.Contract == harness.IdempotentByKey {
			if rapid.Bool().Draw(t, "in _meta") {
				tool.Key.Meta = rapid.StringMatching(`[^, \t\r\n]{1,12}`).Draw(t, "meta")
			} else {
				tool.Key.Arg = rest.FormatPath(rapid.SliceOfN(rapid.StringMatching(`[^,]{1,8}`), 1, 3).Draw(t, "path")...)
			}
		}
		text := tool.String()
		got, err := mcp.ParseTool(text)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(tool) || got.Key != tool.Key || got.Contract != tool.Contract || got.Name != tool.Name {
			t.Fatalf("ParseTool(%q) = %+v, %v; want %+v", text, got, err, tool)
		}
		if again := got.String(); again != text {
			t.Fatalf("String() = %q after parsing %q", again, text)
		}
	})
}

func TestMalformedToolsNameTheField(t *testing.T) {
	for text, says := range map[string]string{
		"create_po":                                  "want NAME=CONTRACT",
		"=read-only":                                 `Name "": want 1 to 128 characters`,
		"create po=read-only":                        `Name "create po": ' ' is not a letter`,
		strings.Repeat("x", 129) + "=read-only":      "want 1 to 128 characters",
		"create_po=idempotent-by-key":                `contract "idempotent-by-key": say where the key is`,
		"create_po=idempotent-by-arg:idempotency":    `JSON path "idempotency", column 1: must start with $`,
		"create_po=idempotent-by-arg:$.a,b":          "a comma ends a declaration's part",
		"create_po=idempotent-by-header:Idem-Key":    "idempotent-by-header is not for this front end",
		"create_po=idempotent-by-body:$.key":         "idempotent-by-body is not for this front end",
		"create_po=idempotent-by-meta:":              `want the key's place after "idempotent-by-meta:"`,
		"create_po=idempotent-by-meta:a b":           `_meta field "a b" has a comma or a space`,
		"create_po=read-only,latency=1s":             `contract "read-only,latency=1s": unknown`,
		"create_po=idempotent-by-arg:$[\"k\"] trail": `unexpected " "`,
	} {
		_, err := mcp.ParseTool(text)
		if err == nil || !strings.Contains(err.Error(), says) || !strings.Contains(err.Error(), fmt.Sprintf("%q", text)) {
			t.Errorf("ParseTool(%q): %v; want an error quoting it and saying %q", text, err, says)
		}
	}
}
