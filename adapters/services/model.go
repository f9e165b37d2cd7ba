package services

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/chaoskit/chaoskit/adapters/provider"
	"github.com/chaoskit/chaoskit/harness"
)

// backend answers the model API's requests as Env.Model calls (provider.Backend).
type backend struct{ f *Front }

// digestLen is how much of a request's digest its purpose carries: enough to tell requests
// apart, short enough to read in a beat's label.
const digestLen = 12

// purpose names a model request as the world counts it: the API, the turn of the conversation
// and the request's digest, e.g. "responses turn 2 3f2a9c1b0d4e". A request asked again (a
// retry, a resumed agent asking what it asked before) has the same purpose, which is how the
// oracle counts model calls made again.
func purpose(call *provider.Call) string {
	return fmt.Sprintf("%s turn %d %s", call.API, call.Request.Turn(), call.Digest[:min(digestLen, len(call.Digest))])
}

// Answer is provider.Backend's: the cassette's answer, looked up with the request's place among
// the run's distinct requests (which a restart keeps), given through Env.Model so that the
// request is a beat and the model's faults land there.
func (b backend) Answer(ctx context.Context, call *provider.Call) (*provider.Answer, error) {
	f := b.f
	p := purpose(call)
	var (
		ans    *provider.Answer
		err    error
		lookup error
	)
	ran := f.run.Run(ctx, "model "+call.Digest, func(ctx context.Context) {
		nth := place(f.env.ModelCalls(), p)
		it, lerr := f.cfg.Cassette.Lookup(call.API, call.Request, nth)
		if lerr != nil {
			lookup = lerr
			return
		}
		c := harness.ModelCall{Purpose: p, Reply: encode(&it.Answer)}
		if len(it.Alternatives) > 0 {
			c.Alternative = encode(&it.Alternatives[0])
		}
		var text string
		text, err = f.env.Model(ctx, c)
		if err != nil && !errors.Is(err, harness.ErrModelCut) {
			return
		}
		reply := &it.Answer
		if err == nil && text != c.Reply {
			reply = new(provider.Reply) // decoded afresh: the cassette's own replies are shared by every run
			if uerr := json.Unmarshal([]byte(text), reply); uerr != nil {
				panic("services: an answer the Front encoded does not decode: " + uerr.Error())
			}
		}
		ans = &provider.Answer{Reply: reply, Seed: call.Seed(f.idBase()), Created: f.env.Now()}
	})
	switch {
	case ran != nil:
		return nil, ran
	case lookup != nil:
		f.missed(lookup)
		return nil, lookup // the provider's 400, naming the diff
	case errors.Is(err, harness.ErrModelCut):
		return nil, &provider.Cut{Answer: ans, AfterEvents: cutAfter}
	case err != nil:
		return nil, providerError(err)
	}
	return ans, nil
}

// cutAfter is how many events of a streamed answer a model-cut lets through: enough for the
// client to have begun the answer (its first delta), never its end (provider.Cut keeps the last).
const cutAfter = 3

// place returns the 1-based place of request p among the run's distinct requests asked so far
// (asked, in order): its own if it was asked before, else the next one.
func place(asked []string, p string) int {
	for i, a := range asked {
		if a == p {
			return i + 1
		}
	}
	return len(asked) + 1
}

// idBase returns the seed of the process's fresh ids, drawn from its Env's random source the
// first time it is needed (a process that never asks the model draws nothing). It runs on a
// thread of the simulation.
func (f *Front) idBase() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.drawn {
		f.base, f.drawn = f.env.Rand().Uint64(), true
	}
	return f.base
}

// providerError turns an error of Env.Model into the provider's answer.
func providerError(err error) error {
	var rl *harness.RateLimitError
	switch {
	case errors.As(err, &rl):
		return &provider.RateLimited{RetryAfter: rl.RetryAfter}
	case errors.Is(err, harness.ErrModelServer):
		return provider.ErrServer
	case errors.Is(err, harness.ErrModelUnavailable):
		return provider.ErrUnavailable
	case errors.Is(err, harness.ErrContextLength):
		return provider.ErrContextLength
	}
	return err // the request's context, done: the client gave up (a hang), nothing is written
}

// encode returns a reply as the text Env.Model carries.
func encode(r *provider.Reply) string {
	b, err := json.Marshal(r)
	if err != nil {
		panic("services: a cassette's reply does not encode: " + err.Error())
	}
	return strings.TrimSpace(string(b))
}
