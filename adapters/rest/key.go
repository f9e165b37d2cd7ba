package rest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/chaoskit/chaoskit/harness"
)

// KeyAt says where a call's idempotency key is. An IdempotentByKey tool sets exactly one field;
// the others set none. A call that does not carry its key there has none, and the world applies
// it every time.
type KeyAt struct {
	// Header is a request header (REST), e.g. Idempotency-Key.
	Header string
	// Body is a JSON path into a REST request's body, e.g. $.idempotency_key.
	Body string
	// Arg is a JSON path into an MCP tool call's arguments, e.g. $.order.key.
	Arg string
	// Meta is a field of an MCP tool call's _meta, e.g. idempotency_key.
	Meta string
}

// The contracts' words in a declaration: a key's place follows the colon of the idempotent ones.
const (
	wordReadOnly      = "read-only"
	wordNotIdempotent = "not-idempotent"
	wordByHeader      = "idempotent-by-header:"
	wordByBody        = "idempotent-by-body:"
	wordByArg         = "idempotent-by-arg:"
	wordByMeta        = "idempotent-by-meta:"
)

const contractForms = "read-only, not-idempotent, idempotent-by-header:NAME, idempotent-by-body:$.PATH, idempotent-by-arg:$.PATH or idempotent-by-meta:NAME"

// ParseContract parses a contract as declarations write it, with the place of the key of an
// idempotent one:
//
//	read-only
//	not-idempotent
//	idempotent-by-header:Idempotency-Key   a request header (REST)
//	idempotent-by-body:$.idempotency_key   a JSON path into the request body (REST)
//	idempotent-by-arg:$.order.key          a JSON path into the tool call's arguments (MCP)
//	idempotent-by-meta:idempotency_key     a field of the tool call's _meta (MCP)
//
// A JSON path is $ followed by .name or ["name"] steps (a JSON string, for names with other
// characters than letters, digits, _ and -). No part may hold a comma, which ends it in a
// declaration.
func ParseContract(text string) (harness.Contract, KeyAt, error) {
	fail := func(format string, args ...any) (harness.Contract, KeyAt, error) {
		return 0, KeyAt{}, fmt.Errorf("contract %q: %s", text, fmt.Sprintf(format, args...))
	}
	var k KeyAt
	switch {
	case text == wordReadOnly:
		return harness.ReadOnly, k, nil
	case text == wordNotIdempotent:
		return harness.NotIdempotent, k, nil
	case text == "idempotent-by-key" || text == "idempotent":
		return fail("say where the key is: %s", contractForms)
	}
	for _, f := range []struct {
		word string
		dst  *string
	}{{wordByHeader, &k.Header}, {wordByBody, &k.Body}, {wordByArg, &k.Arg}, {wordByMeta, &k.Meta}} {
		if place, ok := strings.CutPrefix(text, f.word); ok {
			if place == "" {
				return fail("want the key's place after %q", f.word)
			}
			*f.dst = place
			if err := k.validate(); err != nil {
				return fail("%v", err)
			}
			return harness.IdempotentByKey, k, nil
		}
	}
	return fail("unknown (want %s)", contractForms)
}

// FormatContract returns the text form of c with the key's place k, which ParseContract reads
// back.
func FormatContract(c harness.Contract, k KeyAt) string {
	switch {
	case c != harness.IdempotentByKey:
		return c.String()
	case k.Header != "":
		return wordByHeader + k.Header
	case k.Body != "":
		return wordByBody + k.Body
	case k.Arg != "":
		return wordByArg + k.Arg
	case k.Meta != "":
		return wordByMeta + k.Meta
	}
	return c.String()
}

// set returns how many of k's fields are set.
func (k KeyAt) set() int {
	n := 0
	for _, s := range []string{k.Header, k.Body, k.Arg, k.Meta} {
		if s != "" {
			n++
		}
	}
	return n
}

// validate checks each field k sets.
func (k KeyAt) validate() error {
	if k.Header != "" && !isToken(k.Header) {
		return fmt.Errorf("header %q is not a header name", k.Header)
	}
	for _, p := range []string{k.Body, k.Arg} {
		if p != "" {
			if _, err := parsePath(p); err != nil {
				return err
			}
		}
	}
	if k.Meta != "" && strings.ContainsAny(k.Meta, ", \t\r\n") {
		return fmt.Errorf("_meta field %q has a comma or a space", k.Meta)
	}
	return nil
}

// Check checks that an IdempotentByKey contract c has its key in exactly one place, one of
// those allowed, and that other contracts have none. allowed lists the places' words as
// ParseContract takes them ("header", "body", "arg", "meta"); the error names the field.
func (k KeyAt) Check(c harness.Contract, allowed ...string) error {
	if c != harness.IdempotentByKey {
		if k.set() > 0 {
			return fmt.Errorf("Key: a %s tool has no idempotency key", c)
		}
		return nil
	}
	if k.set() != 1 {
		return fmt.Errorf("Key: an idempotent-by-key tool has its key in exactly one place (%d set)", k.set())
	}
	for word, v := range map[string]string{"header": k.Header, "body": k.Body, "arg": k.Arg, "meta": k.Meta} {
		if v != "" && !contains(allowed, word) {
			return fmt.Errorf("Key: idempotent-by-%s is not for this front end (want idempotent-by-%s)", word, strings.Join(allowed, " or idempotent-by-"))
		}
	}
	return k.validate()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// isToken reports whether s is an HTTP token (a header's name).
func isToken(s string) bool {
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return s != ""
}

// parsePath parses a JSON path of names: $ then .name or ["name"] steps.
func parsePath(text string) ([]string, error) {
	fail := func(rest, msg string) ([]string, error) {
		return nil, fmt.Errorf("JSON path %q, column %d: %s", text, len(text)-len(rest)+1, msg)
	}
	s, ok := strings.CutPrefix(text, "$")
	if !ok {
		return fail(text, "must start with $")
	}
	if strings.Contains(s, ",") {
		return fail(s[strings.IndexByte(s, ','):], "a comma ends a declaration's part")
	}
	var names []string
	for s != "" {
		switch {
		case s[0] == '.':
			n := 1
			for n < len(s) && isNameByte(s[n]) {
				n++
			}
			if n == 1 {
				return fail(s, "want a name of letters, digits, _ or - after . (or [\"name\"])")
			}
			names, s = append(names, s[1:n]), s[n:]
		case s[0] == '[':
			d := json.NewDecoder(strings.NewReader(s[1:]))
			var name string
			err := d.Decode(&name)
			end := 1 + int(d.InputOffset())
			if err != nil || name == "" || end >= len(s) || s[end] != ']' {
				return fail(s, `want a JSON string then ] after [`)
			}
			names, s = append(names, name), s[end+1:]
		default:
			return fail(s, fmt.Sprintf("unexpected %q (want .name or [\"name\"])", s[:1]))
		}
	}
	if len(names) == 0 {
		return fail("", "names the whole document, not a field")
	}
	return names, nil
}

func isNameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}

// FormatPath returns the JSON path of the names, .name where a name allows it, ["name"]
// elsewhere.
func FormatPath(names ...string) string {
	var b strings.Builder
	b.WriteString("$")
	for _, n := range names {
		simple := n != ""
		for i := 0; i < len(n); i++ {
			simple = simple && isNameByte(n[i])
		}
		if simple {
			b.WriteString("." + n)
			continue
		}
		b.WriteString("[" + string(encode(n)) + "]")
	}
	return b.String()
}

// ErrKeyNotString is wrapped by SplitKey's error when the value at the key's path is not a
// string.
var ErrKeyNotString = errors.New("an idempotency key must be a JSON string")

// SplitKey takes the idempotency key out of doc, a decoded JSON value (as Decode returns it), at
// the JSON path path (validated by KeyAt.Check): it returns doc without it (doc's objects are
// changed in place) and the key, "" when doc has nothing there. A value there that is not a
// string is an error wrapping ErrKeyNotString.
func SplitKey(doc any, path string) (any, string, error) {
	names, err := parsePath(path)
	if err != nil {
		return doc, "", err
	}
	obj, _ := doc.(map[string]any)
	for _, n := range names[:len(names)-1] {
		obj, _ = obj[n].(map[string]any)
	}
	last := names[len(names)-1]
	v, ok := obj[last]
	if !ok {
		return doc, "", nil
	}
	key, ok := v.(string)
	if !ok {
		return doc, "", fmt.Errorf("%s is %s: %w", path, encode(v), ErrKeyNotString)
	}
	delete(obj, last)
	return doc, key, nil
}

// Decode decodes JSON as SplitKey and Encode take it: numbers stay as written
// (json.Number). Empty data decodes as nil.
func Decode(data []byte) (any, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, errors.New("more than one JSON value")
	}
	return v, nil
}

// Encode returns the canonical JSON of a decoded value: objects' keys sorted, numbers as they
// were written, no HTML escaping. It is how an effect's arguments are identified, so that two
// calls that differ only in field order are the same effect.
func Encode(v any) json.RawMessage { return encode(v) }

func encode(v any) json.RawMessage {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		panic(fmt.Sprintf("rest: encoding a decoded JSON value: %v", err))
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
