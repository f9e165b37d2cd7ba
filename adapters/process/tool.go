package process

import (
	"fmt"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/adapters/mcp"
	"github.com/chaoskit/chaoskit/adapters/rest"
	"github.com/chaoskit/chaoskit/harness"
)

// contracts are the contracts' names in a tool's text form.
var contracts = map[string]harness.Contract{
	"read-only":         harness.ReadOnly,
	"idempotent-by-key": harness.IdempotentByKey,
	"idempotent":        harness.IdempotentByKey,
	"not-idempotent":    harness.NotIdempotent,
}

// ParseTool parses a tool's text form, as --tool takes it:
//
//	NAME=CONTRACT[,latency=DUR][,key-ttl=DUR][,fenced][,ordered][,async=DUR][,outcome=TEXT]
//
// with CONTRACT one of read-only, idempotent-by-key (or idempotent) and not-idempotent, or,
// for a tool an agent calls over MCP (ServedTool), idempotent-by-arg:$.PATH or
// idempotent-by-meta:NAME, which say where its key is; and DUR a Go duration of virtual time,
// e.g. create_po=idempotent,latency=1s,key-ttl=24h.
func ParseTool(text string) (harness.Tool, error) {
	t, _, err := parseTool(text)
	return t, err
}

// ServedTool returns the MCP tool of a tool's text form (ParseTool), which Target.Services
// serves: every tool but one whose CONTRACT is idempotent-by-key, whose key has no place in an
// MCP request (the protocol's clients pass it apart); ok is false for that one.
func ServedTool(text string) (tool mcp.Tool, ok bool, err error) {
	t, key, err := parseTool(text)
	if err != nil || t.Contract == harness.IdempotentByKey && key == (rest.KeyAt{}) {
		return mcp.Tool{}, false, err
	}
	tool, err = mcp.ParseTool(t.Name + "=" + rest.FormatContract(t.Contract, key)) // checks the name as MCP SDKs do
	return tool, err == nil, err
}

// parseTool parses a tool's text form, and the place of its key if it says one.
func parseTool(text string) (harness.Tool, rest.KeyAt, error) {
	var t harness.Tool
	var key rest.KeyAt
	fail := func(format string, args ...any) (harness.Tool, rest.KeyAt, error) {
		return harness.Tool{}, rest.KeyAt{}, fmt.Errorf("tool %q: %s", text, fmt.Sprintf(format, args...))
	}
	head, opts, _ := strings.Cut(text, ",")
	name, contract, ok := strings.Cut(head, "=")
	if !ok || name == "" {
		return fail("want NAME=CONTRACT, like create_po=idempotent-by-key")
	}
	if t.Contract, ok = contracts[contract]; !ok {
		if !strings.HasPrefix(contract, "idempotent-by-arg:") && !strings.HasPrefix(contract, "idempotent-by-meta:") {
			return fail("unknown contract %q (want read-only, idempotent-by-key, not-idempotent, or for MCP idempotent-by-arg:$.PATH or idempotent-by-meta:NAME)", contract)
		}
		var err error
		if t.Contract, key, err = rest.ParseContract(contract); err != nil {
			return fail("%v", err)
		}
	}
	t.Name = name
	for _, opt := range strings.Split(opts, ",") {
		if opt == "" && opts == "" {
			break
		}
		key, val, hasVal := strings.Cut(opt, "=")
		var d *time.Duration
		switch key {
		case "fenced", "ordered":
			if hasVal {
				return fail("%s takes no value", key)
			}
			t.Fenced = t.Fenced || key == "fenced"
			t.Ordered = t.Ordered || key == "ordered"
			continue
		case "outcome":
			t.Outcome = val
			continue
		case "latency":
			d = &t.Latency
		case "key-ttl":
			d = &t.KeyTTL
		case "async":
			d = &t.Async
		default:
			return fail("unknown option %q (want latency=, key-ttl=, fenced, ordered, async= or outcome=)", opt)
		}
		v, err := time.ParseDuration(val)
		if err != nil || v < 0 {
			return fail("%s wants a duration such as 1s, not %q", key, val)
		}
		*d = v
	}
	return t, key, nil
}

// FormatTool returns the text form of t, which ParseTool reads back.
func FormatTool(t harness.Tool) string {
	var b strings.Builder
	b.WriteString(t.Name + "=" + t.Contract.String())
	for _, o := range []struct {
		name string
		d    time.Duration
	}{{"latency", t.Latency}, {"key-ttl", t.KeyTTL}, {"async", t.Async}} {
		if o.d > 0 {
			b.WriteString("," + o.name + "=" + o.d.String())
		}
	}
	if t.Fenced {
		b.WriteString(",fenced")
	}
	if t.Ordered {
		b.WriteString(",ordered")
	}
	if t.Outcome != "" {
		b.WriteString(",outcome=" + t.Outcome)
	}
	return b.String()
}
