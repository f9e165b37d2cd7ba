package process

import (
	"fmt"
	"strconv"
	"strings"
)

// jsonPath is a parsed JSON path of the small language Target.Ignore takes: "$" followed by
// steps, each .name, ["name"], [N] (an index) or [*] / .* (every member or element).
type jsonPath []step

type step struct {
	name  string
	index int
	all   bool
	isIdx bool
}

// parsePath parses a JSON path.
func parsePath(text string) (jsonPath, error) {
	if !strings.HasPrefix(text, "$") {
		return nil, fmt.Errorf("JSON path %q must start with $", text)
	}
	var p jsonPath
	s := text[1:]
	fail := func(msg string) (jsonPath, error) {
		return nil, fmt.Errorf("JSON path %q, column %d: %s", text, len(text)-len(s)+1, msg)
	}
	for s != "" {
		switch {
		case strings.HasPrefix(s, ".*"):
			p, s = append(p, step{all: true}), s[2:]
		case s[0] == '.':
			n := 1
			for n < len(s) && s[n] != '.' && s[n] != '[' {
				n++
			}
			if n == 1 {
				return fail("want a name after .")
			}
			p, s = append(p, step{name: s[1:n]}), s[n:]
		case strings.HasPrefix(s, "[*]"):
			p, s = append(p, step{all: true}), s[3:]
		case strings.HasPrefix(s, `["`):
			end := strings.Index(s[2:], `"]`)
			if end < 0 {
				return fail(`want "] to close ["`)
			}
			name, err := strconv.Unquote(`"` + s[2:2+end] + `"`)
			if err != nil {
				return fail("malformed quoted name")
			}
			p, s = append(p, step{name: name}), s[2+end+2:]
		case s[0] == '[':
			end := strings.IndexByte(s, ']')
			if end < 0 {
				return fail("want ] to close [")
			}
			n, err := strconv.Atoi(s[1:end])
			if err != nil || n < 0 {
				return fail("want an index, * or a quoted name in [...]")
			}
			p, s = append(p, step{index: n, isIdx: true}), s[end+1:]
		default:
			return fail(fmt.Sprintf("unexpected %q (want .name, [\"name\"], [N] or [*])", s[:1]))
		}
	}
	if len(p) == 0 {
		return nil, fmt.Errorf("JSON path %q names the whole document", text)
	}
	return p, nil
}

// remove returns doc without what p names; doc is a decoded JSON value (maps and slices are
// changed in place).
func (p jsonPath) remove(doc any) any {
	if len(p) == 0 {
		return doc
	}
	st, rest := p[0], p[1:]
	switch v := doc.(type) {
	case map[string]any:
		for k, child := range v {
			if st.all || !st.isIdx && k == st.name {
				if len(rest) == 0 {
					delete(v, k)
				} else {
					v[k] = rest.remove(child)
				}
			}
		}
	case []any:
		for i := len(v) - 1; i >= 0; i-- {
			if st.all || st.isIdx && i == st.index {
				if len(rest) == 0 {
					v = append(v[:i], v[i+1:]...)
				} else {
					v[i] = rest.remove(v[i])
				}
			}
		}
		return v
	}
	return doc
}
