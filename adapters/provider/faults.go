package provider

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"
)

// RateLimited makes the answer a 429 with retry-after (whole seconds, rounded up) and
// retry-after-ms headers and the provider's rate-limit error: OpenAI's
// {"error":{"type":"requests","code":"rate_limit_exceeded",…}}, Anthropic's
// {"type":"error","error":{"type":"rate_limit_error",…}}. Whether a request made before the
// time is up gets another 429 is the Backend's to decide.
type RateLimited struct {
	// RetryAfter is how long the client is told to wait.
	RetryAfter time.Duration
}

// Error says what the answer is.
func (e *RateLimited) Error() string {
	return fmt.Sprintf("provider: rate limited (HTTP 429), retry after %v", e.RetryAfter)
}

// Faults a Backend returns to have the provider's own error answer sent.
var (
	// ErrServer makes the answer a 500: OpenAI's server_error, Anthropic's api_error.
	ErrServer = errors.New("provider: server error (HTTP 500)")
	// ErrUnavailable makes the answer a 503 with OpenAI's body; for Anthropic a 529
	// overloaded_error, which is how that API says it cannot serve now.
	ErrUnavailable = errors.New("provider: unavailable (HTTP 503; Anthropic: 529 overloaded_error)")
	// ErrContextLength makes the answer a 400 invalid_request_error: OpenAI's with code
	// context_length_exceeded, Anthropic's "prompt is too long".
	ErrContextLength = errors.New("provider: context length exceeded (HTTP 400)")
)

// Cut sends part of Answer and then drops the connection without finishing the response, as a
// provider or a proxy does when it fails mid-answer. A stream sends its first AfterEvents
// events (at most all but the last, so a cut always loses the end: the [DONE], the
// response.completed or the message_stop), flushed, and then the connection closes with the
// chunked body unterminated, so the client reads a truncated body, not a clean end. A
// non-streaming answer sends its status and headers (200, Content-Length of the whole body) and
// the first half of the body, then closes: the client has its 200 and fails reading the JSON,
// the case SDKs differ on (a drop before the headers is a connection error every SDK retries,
// which a hang cut short by the client's timeout already covers).
type Cut struct {
	// Answer is the answer to cut short; it must not be nil.
	Answer *Answer
	// AfterEvents is how many SSE events a stream sends before the cut.
	AfterEvents int
}

// Error says what the answer is.
func (e *Cut) Error() string {
	return fmt.Sprintf("provider: answer cut after %d events", e.AfterEvents)
}

// openAIFault is a fault as OpenAI's API answers it, for a request to model.
func openAIFault(api API, model string, err error) (apiError, http.Header, bool) {
	var rl *RateLimited
	switch {
	case errors.As(err, &rl):
		wait := max(rl.RetryAfter, 0)
		msg := fmt.Sprintf("Rate limit reached for %s in organization org-chaoskit on requests per min (RPM): Limit 60, Used 60, Requested 1. Please try again in %s. Visit https://platform.openai.com/account/rate-limits to learn more.", model, retryText(wait))
		h := retryHeaders(wait)
		h.Set("x-ratelimit-limit-requests", "60")
		h.Set("x-ratelimit-remaining-requests", "0")
		h.Set("x-ratelimit-reset-requests", retryText(wait))
		return apiError{status: 429, typ: "requests", code: "rate_limit_exceeded", message: msg}, h, true
	case errors.Is(err, ErrServer):
		return apiError{status: 500, typ: "server_error", message: "The server had an error while processing your request. Sorry about that!"}, nil, true
	case errors.Is(err, ErrUnavailable):
		return apiError{status: 503, typ: "server_error", code: "server_is_overloaded", message: "The server is overloaded or not ready yet."}, nil, true
	case errors.Is(err, ErrContextLength):
		if api == Responses {
			return apiError{status: 400, typ: "invalid_request_error", param: "input", code: "context_length_exceeded",
				message: "Your input exceeds the context window of this model. Please adjust your input and try again."}, nil, true
		}
		return apiError{status: 400, typ: "invalid_request_error", param: "messages", code: "context_length_exceeded",
			message: "This model's maximum context length is 128000 tokens. However, your messages resulted in 128001 tokens. Please reduce the length of the messages."}, nil, true
	}
	return apiError{}, nil, false
}

// anthropicFault is a fault as Anthropic's API answers it.
func anthropicFault(err error) (apiError, http.Header, bool) {
	var rl *RateLimited
	switch {
	case errors.As(err, &rl):
		wait := max(rl.RetryAfter, 0)
		h := retryHeaders(wait)
		h.Set("anthropic-ratelimit-requests-limit", "50")
		h.Set("anthropic-ratelimit-requests-remaining", "0")
		return apiError{status: 429, typ: "rate_limit_error", message: "This request would exceed the rate limit for your organization of 50 requests per minute. Please try again later."}, h, true
	case errors.Is(err, ErrServer):
		return apiError{status: 500, typ: "api_error", message: "Internal server error"}, nil, true
	case errors.Is(err, ErrUnavailable):
		return apiError{status: 529, typ: "overloaded_error", message: "Overloaded"}, nil, true
	case errors.Is(err, ErrContextLength):
		return apiError{status: 400, typ: "invalid_request_error", message: "prompt is too long: 200001 tokens > 200000 maximum"}, nil, true
	}
	return apiError{}, nil, false
}

// retryHeaders are retry-after in whole seconds (rounded up) and retry-after-ms.
func retryHeaders(wait time.Duration) http.Header {
	h := http.Header{}
	h.Set("retry-after", strconv.FormatInt(int64(math.Ceil(wait.Seconds())), 10))
	h.Set("retry-after-ms", strconv.FormatInt(wait.Milliseconds(), 10))
	return h
}

// retryText is a wait as OpenAI's messages say it: 1.5s, 20s, 120ms.
func retryText(wait time.Duration) string {
	if wait < time.Second {
		return strconv.FormatInt(wait.Milliseconds(), 10) + "ms"
	}
	return strconv.FormatFloat(wait.Seconds(), 'f', -1, 64) + "s"
}
