package api

import (
	"maps"
	"net/http"
	"strconv"
	"time"

	"socialrouter/caddymodule/api/errwire"
	"socialrouter/caddymodule/errkind"
	"socialrouter/caddymodule/router"
)

// Error types of the envelope.
const (
	typeValidation     = errwire.TypeValidation
	typeAuthentication = errwire.TypeAuthentication
	typeBilling        = errwire.TypeBilling
	typeRateLimit      = errwire.TypeRateLimit
	typeNotFound       = errwire.TypeNotFound
	typeTimeout        = errwire.TypeTimeout
	typeProvider       = errwire.TypeProvider
	typeInternal       = errwire.TypeInternal
)

// Error is a client-facing error: the envelope
// {"error": {"code", "message", "type", …Extra}} with an HTTP status and,
// for the rate-limit and provider errors, a Retry-After. Front-ends other
// than HTTP render the same fields.
type Error struct {
	Status     int
	Code       string
	Type       string
	Message    string
	Extra      map[string]any
	RetryAfter time.Duration
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func newError(status int, code, typ, msg string) *Error {
	return &Error{Status: status, Code: code, Type: typ, Message: msg}
}

// kindError is the answer to a failure of kind k: its status, code and
// type are errwire's, the one table every surface renders from.
func kindError(k errkind.Kind, msg string) *Error {
	w := errwire.Of(k)
	return newError(w.Status, w.Code, w.Type, msg)
}

// failureError is the answer to a router failure, a money refusal
// included: its kind, message, extra fields and Retry-After.
func failureError(f *router.Failure) *Error {
	e := kindError(f.Kind, f.Message)
	e.Extra = maps.Clone(f.Extra)
	e.RetryAfter = f.RetryAfter
	return e
}

// storeUnavailable is the 503 of a failed store read.
func storeUnavailable() *Error {
	return kindError(errkind.StoreUnavailable, "the account store is unavailable; retry shortly")
}

// with adds an extra field to the error object.
func (e *Error) with(k string, v any) *Error {
	if e.Extra == nil {
		e.Extra = map[string]any{}
	}
	e.Extra[k] = v
	return e
}

func (e *Error) write(w http.ResponseWriter) {
	if c, ok := w.(*call); ok {
		c.code = e.Code
	}
	body := map[string]any{"code": e.Code, "message": e.Message, "type": e.Type}
	for k, v := range e.Extra {
		body[k] = v
	}
	if e.RetryAfter > 0 {
		secs := int((e.RetryAfter + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
	}
	if e.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="social_router"`)
	}
	writeJSON(w, e.Status, map[string]any{"error": body})
}
