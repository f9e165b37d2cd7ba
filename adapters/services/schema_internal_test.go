package services

import (
	"testing"

	"github.com/chaoskit/chaoskit/adapters/mcp"
	"github.com/chaoskit/chaoskit/adapters/provider"
)

// A tool declared without a schema is served with the one the recorded requests offered the
// model for it, so that the agent offers the model what it offered when recorded; a declared
// schema stays.
func TestSchemaInferredFromTheCassette(t *testing.T) {
	c, err := provider.Parse([]byte(`{"interactions": [{"match": {"request": {"model": "m", "messages": [{"role": "user", "content": "hi"}],
		"tools": [{"name": "notify", "description": "tell the team", "parameters": {"properties":{"text":{"type":"string"}},"type":"object"}}]}},
		"answer": {"text": "ok"}}]}`), "c.json")
	if err != nil {
		t.Fatal(err)
	}
	declared := []byte(`{"type":"object","properties":{"n":{"type":"integer"}}}`)
	got := withSchemas([]mcp.Tool{{Name: "notify"}, {Name: "count", InputSchema: declared}, {Name: "other"}}, c)
	if string(got[0].InputSchema) != `{"properties":{"text":{"type":"string"}},"type":"object"}` || got[0].Description != "tell the team" {
		t.Errorf("notify: schema %s, description %q: want the recorded request's", got[0].InputSchema, got[0].Description)
	}
	if string(got[1].InputSchema) != string(declared) || got[2].InputSchema != nil {
		t.Errorf("count %s, other %s: want the declared schema and none", got[1].InputSchema, got[2].InputSchema)
	}
}
