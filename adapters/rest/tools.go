package rest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/chaoskit/chaoskit/harness"
)

// Tools performs one tool call as the simulation decides: applied to the world (a beat of the
// calling process), or failed by a fault. The process that made the request is Token(ctx).
//
// Its errors are the world's: harness.ErrToolTransient, harness.ErrToolAmbiguous (the call
// was applied, the reply is lost), harness.ErrFenced, *harness.KeyReusedError (the key was first
// used with other arguments; its text is Stripe's), and
// context.DeadlineExceeded for an answer that comes after the caller's timeout. A front end
// (this package's Service, adapters/mcp's Server) shows each as its protocol does; see
// OutcomeOf.
type Tools interface {
	Call(ctx context.Context, c harness.Call) (harness.Reply, error)
}

// Answer returns the recorded answer to an applied call (from a cassette), or nil for the
// front end's default. Service writes it as the response body; adapters/mcp's Server decodes
// it as a CallToolResult. An error fails the request as an internal error.
type Answer func(ctx context.Context, c harness.Call, r harness.Reply) (json.RawMessage, error)

// Outcome is what a backend's answer to a call means on the wire.
type Outcome int

// The outcomes, from OutcomeOf.
const (
	// Applied: no error; the reply goes back to the caller.
	Applied Outcome = iota
	// Transient (harness.ErrToolTransient): not applied; the caller may retry.
	Transient
	// Ambiguous (harness.ErrToolAmbiguous): applied, and the response is lost: the connection
	// closes without it.
	Ambiguous
	// Fenced (harness.ErrFenced): rejected for a stale fencing token.
	Fenced
	// KeyReused (*harness.KeyReusedError, harness.ErrKeyReused): the key was first used with
	// other arguments.
	KeyReused
	// Late (context.DeadlineExceeded, context.Canceled): the answer comes after the caller's
	// timeout. The front end holds the request until the caller gives up (closes the
	// connection or cancels the request), then closes it without an answer: the caller's own
	// timeout decides; a caller without one waits for ever, as on a hung service.
	Late
	// Failed: any other error, shown as an internal error.
	Failed
)

var outcomeNames = [...]string{"applied", "transient", "ambiguous", "fenced", "key-reused", "late", "failed"}

// String returns the outcome's name, e.g. "ambiguous".
func (o Outcome) String() string {
	if o >= 0 && int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// OutcomeOf says what err, a Tools.Call error, means on the wire.
func OutcomeOf(err error) Outcome {
	switch {
	case err == nil:
		return Applied
	case errors.Is(err, harness.ErrToolAmbiguous):
		return Ambiguous
	case errors.Is(err, harness.ErrToolTransient):
		return Transient
	case errors.Is(err, harness.ErrFenced):
		return Fenced
	case errors.Is(err, harness.ErrKeyReused):
		return KeyReused
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return Late
	}
	return Failed
}
