package process

import (
	"testing"

	"github.com/chaoskit/chaoskit/adapters/process/client"
)

// The Go client, a file of its own that a team may copy, names the protocol's error codes
// itself: they must be the server's, one for one.
func TestClientKnowsEveryErrorCode(t *testing.T) {
	for server, c := range map[string]*client.Error{
		codeTransient: client.ErrTransient, codeAmbiguous: client.ErrAmbiguous, codeTimeout: client.ErrTimeout,
		codeFenced: client.ErrFenced, codeLeaseHeld: client.ErrLeaseHeld, codeLeaseLost: client.ErrLeaseLost,
		codeRateLimited: client.ErrRateLimited, codeModelServer: client.ErrModelServer,
		codeContextLength: client.ErrContextLength, codeDeadline: client.ErrDeadline,
		codeBadRequest: client.ErrBadRequest, codeVersion: client.ErrVersion,
	} {
		if c.Code != server {
			t.Errorf("the server's code %q is the client's %q", server, c.Code)
		}
	}
}
