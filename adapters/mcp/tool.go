package mcp

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/chaoskit/chaoskit/adapters/rest"
	"github.com/chaoskit/chaoskit/harness"
)

// Tool is one declared tool of the MCP server.
type Tool struct {
	// Name is the tool's name, which the world's tool of the same name answers: 1 to 128
	// letters, digits, _, - and . (the MCP SDKs' rule).
	Name     string
	Contract harness.Contract
	// Key is where an IdempotentByKey tool's key is: Arg (a JSON path into the arguments, left
	// out of the effect's Args) or Meta (a field of the request's _meta).
	Key rest.KeyAt
	// Description is shown to the model.
	Description string
	// InputSchema is the tool's JSON Schema, an object schema; nil means any object
	// ({"type":"object"}). Arguments are not validated against it: the server takes what the
	// agent sends, as the world records it.
	InputSchema json.RawMessage
}

// ParseTool parses a tool's text form, NAME=CONTRACT, with CONTRACT as rest.ParseContract reads
// it (read-only, not-idempotent, idempotent-by-arg:$.PATH or idempotent-by-meta:NAME), e.g.
//
//	create_po=idempotent-by-arg:$.idempotency_key
//	send_email=idempotent-by-meta:idempotency_key
//	get_po=read-only
//
// Description and InputSchema have no text form: set them on the result.
func ParseTool(text string) (Tool, error) {
	var t Tool
	name, contract, ok := strings.Cut(text, "=")
	if !ok {
		return Tool{}, fmt.Errorf("tool %q: want NAME=CONTRACT, like create_po=idempotent-by-arg:$.idempotency_key", text)
	}
	t.Name = name
	var err error
	if t.Contract, t.Key, err = rest.ParseContract(contract); err != nil {
		return Tool{}, fmt.Errorf("tool %q: %w", text, err)
	}
	if err := t.check(); err != nil {
		return Tool{}, fmt.Errorf("tool %q: %w", text, err)
	}
	return t, nil
}

// String returns the tool's text form, which ParseTool reads back.
func (t Tool) String() string { return t.Name + "=" + rest.FormatContract(t.Contract, t.Key) }

// check validates t's fields; the error names the field.
func (t Tool) check() error {
	if err := validName(t.Name); err != nil {
		return err
	}
	switch t.Contract {
	case harness.ReadOnly, harness.IdempotentByKey, harness.NotIdempotent:
	default:
		return fmt.Errorf("Contract %v is not a contract", t.Contract)
	}
	if err := t.Key.Check(t.Contract, "arg", "meta"); err != nil {
		return err
	}
	if t.InputSchema != nil {
		var schema map[string]any
		if err := json.Unmarshal(t.InputSchema, &schema); err != nil {
			return fmt.Errorf("InputSchema is not a JSON object: %w", err)
		}
		if schema["type"] != "object" {
			return fmt.Errorf(`InputSchema: want "type": "object", as MCP requires of a tool's input (got %v)`, schema["type"])
		}
	}
	return nil
}

func validName(name string) error {
	if name == "" || len(name) > 128 {
		return fmt.Errorf("Name %q: want 1 to 128 characters", name)
	}
	for _, c := range []byte(name) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			return fmt.Errorf("Name %q: %q is not a letter, digit, _, - or .", name, c)
		}
	}
	return nil
}
