package provider

import (
	"encoding/json"
	"fmt"
	"strings"
)

// textKinds says, for one wire format, which content part types hold text and in which
// member; parts of the types in drop are left out (Anthropic's thinking blocks, whose signatures
// differ every time).
type textKinds struct {
	text map[string]string
	drop map[string]bool
}

// content reads a message's content, a string or an array of parts, into its text (text parts
// joined by a newline) and its other parts.
func (k textKinds) content(where string, raw json.RawMessage) (string, []json.RawMessage, error) {
	if isNull(raw) {
		return "", nil, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return "", nil, fmt.Errorf("%s: want a string or an array of parts", where)
	}
	var texts []string
	var parts []json.RawMessage
	for i, item := range items {
		var head map[string]json.RawMessage
		if err := json.Unmarshal(item, &head); err != nil {
			return "", nil, fmt.Errorf("%s[%d]: want an object", where, i)
		}
		var typ string
		json.Unmarshal(head["type"], &typ)
		if k.drop[typ] {
			continue
		}
		if member, ok := k.text[typ]; ok {
			var t string
			if err := json.Unmarshal(head[member], &t); err != nil {
				return "", nil, fmt.Errorf("%s[%d].%s: want a string", where, i, member)
			}
			texts = append(texts, t)
			continue
		}
		p, err := part(item)
		if err != nil {
			return "", nil, fmt.Errorf("%s[%d]: %w", where, i, err)
		}
		parts = append(parts, p)
	}
	return strings.Join(texts, "\n"), parts, nil
}

// role maps a wire role to the normalized one: developer instructions are system instructions.
func role(r string) string {
	if r == "developer" {
		return "system"
	}
	return r
}

// choiceOf normalizes a tool choice of the shapes every OpenAI-like format shares: a string, or
// an object naming one function ({"type":"function","name":…} or
// {"type":"function","function":{"name":…}}). ok is false for any other shape.
func choiceOf(raw json.RawMessage) (choice string, ok bool) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, true
	}
	var c named
	if err := json.Unmarshal(raw, &c); err != nil {
		return "", false
	}
	switch {
	case c.Type == "function" && c.Function != nil && c.Function.Name != "":
		return "tool:" + c.Function.Name, true
	case c.Type == "function" && c.Name != "":
		return "tool:" + c.Name, true
	}
	return "", false
}

// toolChoice normalizes the tool_choice field of b, or keeps it in Params.
func (n *normalizer) toolChoice(b body) error {
	raw := b.take("tool_choice")
	if isNull(raw) {
		return nil
	}
	if c, ok := choiceOf(raw); ok {
		n.req.ToolChoice = c
		return nil
	}
	return n.param("tool_choice", raw)
}
