package provider

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
)

// family is the provider a request is addressed to, which decides how errors and model lists
// look: OpenAI's (Chat Completions and Responses) or Anthropic's.
type family struct {
	anthropic bool
}

// familyOf tells the family of a request: Anthropic for /v1/messages or a request with
// Anthropic's headers.
func familyOf(r *http.Request, api API) family {
	return family{anthropic: anthropic(r, api)}
}

// write sends an error answer with extra headers and the request id ("" draws one from seed 0).
func (f family) write(w http.ResponseWriter, e apiError, extra http.Header, requestID string) {
	if requestID == "" {
		requestID = NewIDs(0).Next(RequestID)
	}
	for k, v := range extra {
		w.Header()[http.CanonicalHeaderKey(k)] = v
	}
	if f.anthropic {
		w.Header().Set("request-id", requestID)
		writeJSON(w, e.status, anthropicError(e, requestID))
		return
	}
	w.Header().Set("x-request-id", requestID)
	writeJSON(w, e.status, openAIError(e))
}

// refuse answers a request that could not be read (or that the stand-in does not serve) with a
// 400 invalid_request_error naming the field, and tells the SDK not to retry it.
func (f family) refuse(w http.ResponseWriter, err error) {
	e := apiError{status: 400, typ: "invalid_request_error", message: "chaoskit: " + err.Error()}
	var ref *refusal
	if errors.As(err, &ref) {
		e.param, e.message = ref.param, "chaoskit: "+ref.message
	}
	f.write(w, e, http.Header{"X-Should-Retry": {"false"}}, "")
}

// fault is a fault error as this family answers it; ok is false for an error that is no fault.
func (f family) fault(api API, model string, err error) (apiError, http.Header, bool) {
	if f.anthropic {
		return anthropicFault(err)
	}
	return openAIFault(api, model, err)
}

// notFoundType is the error type of an unknown path.
func (f family) notFoundType() string {
	if f.anthropic {
		return "not_found_error"
	}
	return "invalid_request_error"
}

// tooLargeType is the error type of a body over the limit.
func (f family) tooLargeType() string {
	if f.anthropic {
		return "request_too_large"
	}
	return "invalid_request_error"
}

// serverErrorType is the error type of a 500.
func (f family) serverErrorType() string {
	if f.anthropic {
		return "api_error"
	}
	return "server_error"
}

// models answers GET /v1/models (id "") or /v1/models/{id} from the cassette's model names
// and Options.Models. It is no model call: it does not reach the Backend.
func (h *Handler) models(w http.ResponseWriter, f family, id string) {
	names := append(h.cassette.ModelNames(), h.opts.Models...)
	slices.Sort(names)
	entry := func(m string) object {
		if f.anthropic {
			return object{{"type", "model"}, {"id", m}, {"display_name", m}, {"created_at", "1970-01-01T00:00:00Z"}}
		}
		return object{{"id", m}, {"object", "model"}, {"created", 0}, {"owned_by", "chaoskit"}}
	}
	requestID := NewIDs(0).Next(RequestID)
	if id != "" {
		for _, m := range names {
			if m == id {
				if f.anthropic {
					w.Header().Set("request-id", requestID)
				} else {
					w.Header().Set("x-request-id", requestID)
				}
				writeJSON(w, http.StatusOK, mustMarshal(entry(m)))
				return
			}
		}
		e := apiError{status: 404, typ: f.notFoundType(), code: "model_not_found",
			message: fmt.Sprintf("The model '%s' does not exist or you do not have access to it.", id)}
		if f.anthropic {
			e.message = "model: " + id
		}
		f.write(w, e, nil, requestID)
		return
	}
	seen := map[string]bool{}
	data := []any{}
	for _, m := range names {
		if !seen[m] {
			seen[m] = true
			data = append(data, entry(m))
		}
	}
	var body object
	if f.anthropic {
		first, last := any(nil), any(nil)
		if len(data) > 0 {
			first, last = data[0].(object)[1].value, data[len(data)-1].(object)[1].value
		}
		body = object{{"data", data}, {"has_more", false}, {"first_id", first}, {"last_id", last}}
		w.Header().Set("request-id", requestID)
	} else {
		body = object{{"object", "list"}, {"data", data}}
		w.Header().Set("x-request-id", requestID)
	}
	writeJSON(w, http.StatusOK, mustMarshal(body))
}
