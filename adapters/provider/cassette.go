package provider

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// CassetteVersion is the version a cassette file declares.
const CassetteVersion = "chaoskit.cassette/v1"

// Cassette is a model's answers, recorded from a real provider or written by hand: a list of
// interactions, each a match on a request and the answer it gets. CASSETTE.md describes the
// file.
type Cassette struct {
	// Version is CassetteVersion (absent in a file: the same).
	Version string `json:"version"`
	// Models are model names GET /v1/models lists besides those the interactions name.
	Models []string `json:"models,omitempty"`
	// Interactions are tried in order; the first whose match holds answers.
	Interactions []Interaction `json:"interactions"`
}

// Interaction is one rule of a cassette: which requests it answers, and how.
type Interaction struct {
	// Name labels the interaction in diffs and reports.
	Name string `json:"name,omitempty"`
	// Match says which requests it answers.
	Match Match `json:"match"`
	// Answer is the reply.
	Answer Reply `json:"answer"`
	// Alternatives are replies given instead when the model answers differently, as it may
	// when it is asked again after a crash: another amount, recipient or tool. Which one, and
	// when, is the Backend's to decide.
	Alternatives []Reply `json:"alternatives,omitempty"`
}

// Match is an interaction's conditions, all of which must hold (at least one is given).
type Match struct {
	// Nth holds for the Nth distinct request a Handler is asked (1-based; the same request
	// asked again, after a 429 or a crash, keeps its place).
	Nth int `json:"nth,omitempty"`
	// Turn holds for a request whose conversation has Turn-1 assistant messages.
	Turn int `json:"turn,omitempty"`
	// API holds for requests of that wire format.
	API API `json:"api,omitempty"`
	// Model holds for requests for that model.
	Model string `json:"model,omitempty"`
	// LastUserContains holds when the last user message contains this text.
	LastUserContains string `json:"last_user_contains,omitempty"`
	// ToolResultOf holds when the tool results that end the conversation include one of this
	// tool.
	ToolResultOf string `json:"tool_result_of,omitempty"`
	// ToolResultContains holds when one of the tool results that end the conversation contains
	// this text.
	ToolResultContains string `json:"tool_result_contains,omitempty"`
	// Includes is part of a normalized request: it holds when every member given is in the
	// request with the same value (objects: the members given; arrays: the elements given, in
	// order, among the request's; strings, numbers, booleans: equal).
	Includes json.RawMessage `json:"includes,omitempty"`
	// Request is a whole normalized request: it holds for that request exactly (same Digest).
	// A recording writes this.
	Request *Request `json:"request,omitempty"`
}

// empty reports whether the match has no condition.
func (m *Match) empty() bool {
	return m.Nth == 0 && m.Turn == 0 && m.API == "" && m.Model == "" && m.LastUserContains == "" &&
		m.ToolResultOf == "" && m.ToolResultContains == "" && len(m.Includes) == 0 && m.Request == nil
}

// Load reads a cassette file. An error names the file and the field at fault.
func Load(path string) (*Cassette, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("provider: reading the cassette: %w", err)
	}
	return Parse(data, path)
}

// Parse reads a cassette from data; name (the file's) starts every error, which names the field
// at fault. Unknown fields are errors, so a misspelt condition never matches everything.
func Parse(data []byte, name string) (*Cassette, error) {
	var file struct {
		Version      string            `json:"version"`
		Models       []string          `json:"models"`
		Interactions []json.RawMessage `json:"interactions"`
	}
	if err := strictDecode(data, &file); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if file.Version != "" && file.Version != CassetteVersion {
		return nil, fmt.Errorf("%s: version: %q, want %q", name, file.Version, CassetteVersion)
	}
	if file.Interactions == nil {
		return nil, fmt.Errorf("%s: interactions: missing", name)
	}
	c := &Cassette{Version: CassetteVersion, Models: file.Models, Interactions: make([]Interaction, len(file.Interactions))}
	for i, raw := range file.Interactions {
		where := fmt.Sprintf("%s: interactions[%d]", name, i)
		in := &c.Interactions[i]
		if err := strictDecode(raw, in); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		if err := in.check(); err != nil {
			return nil, fmt.Errorf("%s.%w", where, err)
		}
	}
	return c, nil
}

// strictDecode decodes one JSON value into v, refusing unknown fields and trailing data.
func strictDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("data after the JSON value")
	}
	return nil
}

// check validates an interaction read from a file and puts its JSON values in canonical form;
// an error starts with the field's path below the interaction.
func (in *Interaction) check() error {
	m := &in.Match
	if m.empty() {
		return fmt.Errorf("match: needs at least one of nth, turn, api, model, last_user_contains, tool_result_of, tool_result_contains, includes, request")
	}
	if m.Nth < 0 {
		return fmt.Errorf("match.nth: %d, want 1 or more", m.Nth)
	}
	if m.Turn < 0 {
		return fmt.Errorf("match.turn: %d, want 1 or more", m.Turn)
	}
	if m.API != "" && !m.API.valid() {
		return fmt.Errorf("match.api: %q is not one of %s, %s, %s", m.API, ChatCompletions, Responses, Messages)
	}
	if len(m.Includes) > 0 {
		c, err := canonical(m.Includes)
		if err != nil || c[0] != '{' {
			return fmt.Errorf("match.includes: want a JSON object (part of a normalized request)")
		}
		m.Includes = c
	}
	if m.Request != nil {
		if err := m.Request.tidy(); err != nil {
			return fmt.Errorf("match.request.%w", err)
		}
	}
	if err := in.Answer.validate(); err != nil {
		return fmt.Errorf("answer.%w", err)
	}
	in.Answer.tidy()
	for j := range in.Alternatives {
		if err := in.Alternatives[j].validate(); err != nil {
			return fmt.Errorf("alternatives[%d].%w", j, err)
		}
		in.Alternatives[j].tidy()
	}
	return nil
}

// tidy puts a request read from a file in canonical form (its JSON values canonical), so that it
// hashes as the request it was normalized from; an error names the field.
func (r *Request) tidy() error {
	canon := func(where string, raw *json.RawMessage) error {
		if len(*raw) == 0 {
			return nil
		}
		c, err := canonical(*raw)
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		*raw = c
		return nil
	}
	for i := range r.Messages {
		m := &r.Messages[i]
		for j := range m.Parts {
			if err := canon(fmt.Sprintf("messages[%d].parts[%d]", i, j), &m.Parts[j]); err != nil {
				return err
			}
		}
		for j := range m.ToolCalls {
			if err := canon(fmt.Sprintf("messages[%d].tool_calls[%d].arguments", i, j), &m.ToolCalls[j].Arguments); err != nil {
				return err
			}
		}
	}
	for i := range r.Tools {
		if err := canon(fmt.Sprintf("tools[%d].parameters", i), &r.Tools[i].Parameters); err != nil {
			return err
		}
		if err := canon(fmt.Sprintf("tools[%d].spec", i), &r.Tools[i].Spec); err != nil {
			return err
		}
	}
	for _, k := range sortedKeys(r.Params) {
		v := r.Params[k]
		if err := canon("params."+k, &v); err != nil {
			return err
		}
		r.Params[k] = v
	}
	return nil
}

// Encode writes the cassette as indented JSON, the form Save writes and Load reads.
func (c *Cassette) Encode(w io.Writer) error {
	out := *c
	if out.Version == "" {
		out.Version = CassetteVersion
	}
	if out.Interactions == nil {
		out.Interactions = []Interaction{}
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(&out)
}

// Save writes the cassette to path (through a temporary file in the same directory, renamed
// into place).
func (c *Cassette) Save(path string) error {
	var b bytes.Buffer
	if err := c.Encode(&b); err != nil {
		return fmt.Errorf("provider: encoding the cassette for %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("provider: saving the cassette: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b.Bytes()); err != nil {
		tmp.Close()
		return fmt.Errorf("provider: saving the cassette to %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("provider: saving the cassette to %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("provider: saving the cassette: %w", err)
	}
	return nil
}

// ModelNames returns the model names the cassette knows, sorted: its Models and those its
// interactions match on or answer with.
func (c *Cassette) ModelNames() []string {
	if c == nil {
		return nil
	}
	names := slices.Clone(c.Models)
	for _, in := range c.Interactions {
		names = append(names, in.Match.Model, in.Answer.Model)
		if in.Match.Request != nil {
			names = append(names, in.Match.Request.Model)
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	if len(names) > 0 && names[0] == "" {
		names = names[1:]
	}
	return names
}

// Lookup returns the first interaction that answers a request of api, the nth distinct request
// its Handler was asked (0 when unknown: no positional match holds). When none does, the error
// is a *NotFound with a diff against the nearest recorded request: the cassette never answers
// with a near miss.
func (c *Cassette) Lookup(api API, req *Request, nth int) (*Interaction, error) {
	q := query{api: api, req: req, nth: nth, digest: req.Digest()}
	var interactions []Interaction
	if c != nil {
		interactions = c.Interactions
	}
	for i := range interactions {
		if q.fails(&interactions[i].Match) == "" {
			return &interactions[i], nil
		}
	}
	return nil, q.notFound(interactions)
}

// query is one request being looked up.
type query struct {
	api    API
	req    *Request
	nth    int
	digest string
	tree   any // the request as decoded JSON, for includes; built on first use
}

// fails returns why m does not hold for the request, "" when it does.
func (q *query) fails(m *Match) string {
	switch {
	case m.API != "" && m.API != q.api:
		return fmt.Sprintf("api is %s, not %s", q.api, m.API)
	case m.Model != "" && m.Model != q.req.Model:
		return fmt.Sprintf("model is %q, not %q", q.req.Model, m.Model)
	case m.Nth != 0 && m.Nth != q.nth:
		return fmt.Sprintf("nth is %d, not %d", q.nth, m.Nth)
	case m.Turn != 0 && m.Turn != q.req.Turn():
		return fmt.Sprintf("turn is %d, not %d", q.req.Turn(), m.Turn)
	case m.LastUserContains != "" && !strings.Contains(q.req.lastUser(), m.LastUserContains):
		return fmt.Sprintf("the last user message does not contain %q", m.LastUserContains)
	}
	results, names := q.req.trailingResults()
	if m.ToolResultOf != "" && !slices.Contains(names, m.ToolResultOf) {
		return fmt.Sprintf("the conversation does not end with a result of %s (it ends with results of %v)", m.ToolResultOf, names)
	}
	if m.ToolResultContains != "" && !slices.ContainsFunc(results, func(r Message) bool { return strings.Contains(r.Content, m.ToolResultContains) }) {
		return fmt.Sprintf("no tool result that ends the conversation contains %q", m.ToolResultContains)
	}
	if len(m.Includes) > 0 {
		if q.tree == nil {
			q.tree, _ = decodeAny(q.req.JSON())
		}
		pattern, err := decodeAny(m.Includes)
		if err != nil || !subset(pattern, q.tree) {
			return "the request does not include the given members"
		}
	}
	if m.Request != nil && m.Request.Digest() != q.digest {
		return "the request differs from the recorded one"
	}
	return ""
}

// subset reports whether the JSON value pattern is part of actual (see Match.Includes).
func subset(pattern, actual any) bool {
	switch p := pattern.(type) {
	case map[string]any:
		a, ok := actual.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range p {
			av, ok := a[k]
			if !ok || !subset(v, av) {
				return false
			}
		}
		return true
	case []any:
		a, ok := actual.([]any)
		if !ok {
			return false
		}
		j := 0
		for _, pv := range p {
			for j < len(a) && !subset(pv, a[j]) {
				j++
			}
			if j == len(a) {
				return false
			}
			j++
		}
		return true
	case json.Number:
		a, ok := actual.(json.Number)
		if !ok {
			return false
		}
		if p == a {
			return true
		}
		pf, err1 := strconv.ParseFloat(string(p), 64)
		af, err2 := strconv.ParseFloat(string(a), 64)
		return err1 == nil && err2 == nil && pf == af
	}
	return pattern == actual
}

// NotFound is the answer of a request no interaction of the cassette answers: what was asked,
// the nearest recorded request with a line diff, and why each hand-written rule did not hold.
type NotFound struct {
	// API is the request's wire format.
	API API
	// Request is what was asked.
	Request *Request
	// Nth is the request's place among the distinct requests its Handler was asked.
	Nth int
	// Nearest names the interaction whose recorded request differs least ("" when no
	// interaction has a recorded request).
	Nearest string
	// Diff is that request against the one asked: "-" lines recorded, "+" lines asked.
	Diff string
	// Rules are, for the interactions without a recorded request (at most 8), why each did not
	// hold.
	Rules []string
}

// Error is a readable account: the request, the nearest recorded one with the diff, the rules.
func (e *NotFound) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "provider: no answer in the cassette for this %s request (nth %d, turn %d, model %q, digest %.12s)",
		e.API, e.Nth, e.Request.Turn(), e.Request.Model, e.Request.Digest())
	if e.Nearest != "" {
		fmt.Fprintf(&b, "\nnearest recorded request: %s; - recorded, + asked:\n%s", e.Nearest, strings.TrimSuffix(e.Diff, "\n"))
	}
	if len(e.Rules) > 0 {
		b.WriteString("\nrules that do not hold:")
		for _, r := range e.Rules {
			b.WriteString("\n  " + r)
		}
	}
	if e.Nearest == "" && len(e.Rules) == 0 {
		b.WriteString("\nthe cassette has no interactions")
	}
	return b.String()
}

// notFound builds the NotFound of q.
func (q *query) notFound(interactions []Interaction) *NotFound {
	nf := &NotFound{API: q.api, Request: q.req, Nth: q.nth}
	asked := indented(q.req)
	best := -1
	for i := range interactions {
		in := &interactions[i]
		label := fmt.Sprintf("interactions[%d]", i)
		if in.Name != "" {
			label += fmt.Sprintf(" %q", in.Name)
		}
		if in.Match.Request == nil {
			if len(nf.Rules) < 8 {
				nf.Rules = append(nf.Rules, label+": "+q.fails(&in.Match))
			}
			continue
		}
		diff, n := diffLines(indented(in.Match.Request), asked, 2, 60)
		if best < 0 || n < best {
			best, nf.Nearest, nf.Diff = n, fmt.Sprintf("%s (%d lines differ)", label, n), diff
		}
	}
	return nf
}

// indented returns a request as indented JSON lines, for diffs.
func indented(r *Request) []string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	enc.Encode(r)
	return strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
}
