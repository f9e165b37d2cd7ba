package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Comparable returns the content of a report.json with what legitimately differs between two
// runs of the same command left out: every field whose name ends in _ms, at any depth, and the
// trailer, whose checksum covers them; and the top-level fields named in drop ("provenance", say,
// for reports made by different command lines, a run and its resumption). The rest is written
// again as indented JSON with sorted keys, so the reports of two runs of one campaign give
// equal bytes, and their first differing line says where they part.
func Comparable(report []byte, drop ...string) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(report))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("reports: not a report: %w", err)
	}
	delete(v, "trailer")
	for _, name := range drop {
		delete(v, name)
	}
	return json.MarshalIndent(withoutMs(v), "", "  ")
}

// withoutMs returns v without its fields whose names end in _ms, at any depth.
func withoutMs(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if strings.HasSuffix(k, "_ms") {
				delete(v, k)
			} else {
				v[k] = withoutMs(x)
			}
		}
	case []any:
		for i, x := range v {
			v[i] = withoutMs(x)
		}
	}
	return v
}
