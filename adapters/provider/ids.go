package provider

import (
	"fmt"
	"math/rand/v2"
)

// IDKind names one kind of id a provider puts in its answers.
type IDKind int

// The kinds of fresh ids, each in its provider's own format.
const (
	// RequestID is the x-request-id (OpenAI) or request-id (Anthropic) header: req_ and 32 hex digits.
	RequestID IDKind = iota
	// ChatCompletionID is a Chat Completions answer's id: chatcmpl- and 29 letters and digits.
	ChatCompletionID
	// ResponseID is a Responses answer's id: resp_ and 50 hex digits.
	ResponseID
	// OutputMessageID is a Responses message item's id: msg_ and 50 hex digits.
	OutputMessageID
	// FunctionCallItemID is a Responses function_call item's id: fc_ and 50 hex digits.
	FunctionCallItemID
	// CallID is an OpenAI tool-call id (Chat tool_calls[].id, Responses call_id): call_ and 24
	// letters and digits.
	CallID
	// AnthropicMessageID is a Messages answer's id: msg_01 and 22 letters and digits.
	AnthropicMessageID
	// ToolUseID is an Anthropic tool_use block's id: toolu_01 and 22 letters and digits.
	ToolUseID
)

const (
	hexDigits = "0123456789abcdef"
	base62    = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
)

// idFormats gives each kind its prefix, alphabet and length after the prefix.
var idFormats = map[IDKind]struct {
	prefix   string
	alphabet string
	n        int
}{
	RequestID:          {"req_", hexDigits, 32},
	ChatCompletionID:   {"chatcmpl-", base62, 29},
	ResponseID:         {"resp_", hexDigits, 50},
	OutputMessageID:    {"msg_", hexDigits, 50},
	FunctionCallItemID: {"fc_", hexDigits, 50},
	CallID:             {"call_", base62, 24},
	AnthropicMessageID: {"msg_01", base62, 22},
	ToolUseID:          {"toolu_01", base62, 22},
}

// IDs draws the fresh ids of answers from a PCG seeded by the caller: the same seed gives the
// same ids in the same order, and no id is ever one a cassette recorded. An answer draws its ids
// in a fixed order (request id, answer id, message item, then per tool call its item and call
// ids), the same whether it streams or not.
type IDs struct {
	rng *rand.Rand
}

// NewIDs returns the id source of seed.
func NewIDs(seed uint64) *IDs {
	return &IDs{rng: rand.New(rand.NewPCG(seed, 0x6368616f736b6974))}
}

// Next returns the next id of kind k.
func (g *IDs) Next(k IDKind) string {
	f, ok := idFormats[k]
	if !ok {
		panic(fmt.Sprintf("provider: IDs.Next of an unknown IDKind %d", int(k)))
	}
	b := make([]byte, 0, len(f.prefix)+f.n)
	b = append(b, f.prefix...)
	for range f.n {
		b = append(b, f.alphabet[g.rng.IntN(len(f.alphabet))])
	}
	return string(b)
}
