package provider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
)

// field is one member of an object whose members keep the order they are written in, as the
// provider writes its JSON; value is anything encoding/json marshals.
type field struct {
	key   string
	value any
}

// object is a JSON object in a fixed member order: the answers' bodies are built from these so
// that their bytes follow the provider's own order.
type object []field

// MarshalJSON writes the members in order.
func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := marshal(f.key)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		v, err := marshal(f.value)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.key, err)
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// marshal is json.Marshal without HTML escaping (the providers send <, > and & as they are) and
// without the encoder's trailing newline.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// mustMarshal is marshal of a value built by this package, which always marshals.
func mustMarshal(v any) []byte {
	b, err := marshal(v)
	if err != nil {
		panic("provider: marshal of a value built by the package failed: " + err.Error())
	}
	return b
}

// canonical returns raw with its object members sorted by key, insignificant space removed and
// numbers as written: two JSON texts that mean the same give the same bytes.
func canonical(raw []byte) (json.RawMessage, error) {
	v, err := decodeAny(raw)
	if err != nil {
		return nil, err
	}
	return marshal(v)
}

// decodeAny decodes one JSON value with numbers kept as written, and refuses trailing data.
func decodeAny(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("data after the JSON value")
	}
	return v, nil
}

// compact returns raw without insignificant space, members in their order.
func compact(raw []byte) (json.RawMessage, error) {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// isNull reports whether raw is absent or the JSON null.
func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
