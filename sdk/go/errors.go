package sdr

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// Error codes the client itself tells apart (docs/errors.md lists them all).
const (
	CodeCreditLimitExceeded  = "credit_limit_exceeded"
	CodeInsufficientCredits  = "insufficient_credits"
	CodeIdempotencyKeyInUse  = "idempotency_key_in_use"
	CodeIdempotencyKeyReused = "idempotency_key_reused"
)

// APIError is an error answer of the API: its status, and the code and type
// of its envelope ({"error": {"code", "message", "type", …}}). Use
// errors.As to read it:
//
//	var e *sdr.APIError
//	if errors.As(err, &e) && e.Code == "insufficient_credits" { … }
type APIError struct {
	Status  int
	Code    string // e.g. invalid_input_format; "" when the answer was not the API's envelope
	Type    string // validation, authentication, billing, not_found, rate_limit, provider, timeout, internal
	Message string
	// RetryAfter is the answer's Retry-After, 0 when none.
	RetryAfter time.Duration
	// RunID names the run of the call (X-Run-Id or the error's run_id),
	// "" when none was stored.
	RunID string
	// IdempotencyKey is the key the call was sent with.
	IdempotencyKey string
	// Details is the error object as answered, with its code-specific
	// fields (invalid_inputs, balance, attempts…).
	Details ErrorEnvelopeError
	Header  http.Header
	Body    []byte
}

func (e *APIError) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("sdr: HTTP %d: %.200s", e.Status, e.Body)
	}
	return fmt.Sprintf("sdr: %d %s (%s): %s", e.Status, e.Code, e.Type, e.Message)
}

// IsRateLimit reports a 429 for rate (wait and retry), not for money.
func (e *APIError) IsRateLimit() bool {
	return e.Status == http.StatusTooManyRequests && e.Code != CodeCreditLimitExceeded
}

// IsMoney reports a refusal for money: 402 insufficient_credits, or the
// key's credit limit (429 credit_limit_exceeded, until RetryAfter).
func (e *APIError) IsMoney() bool {
	return e.Code == CodeInsufficientCredits || e.Code == CodeCreditLimitExceeded
}

func newAPIError(resp *http.Response, body []byte, key string) *APIError {
	e := &APIError{Status: resp.StatusCode, RetryAfter: retryAfter(resp.Header), RunID: resp.Header.Get("X-Run-Id"),
		IdempotencyKey: key, Header: resp.Header, Body: body}
	var env ErrorEnvelope
	if json.Unmarshal(body, &env) == nil && env.Error.Code != "" {
		e.Code, e.Type, e.Message, e.Details = env.Error.Code, env.Error.Type, env.Error.Message, env.Error
		if env.Error.RunID != nil && e.RunID == "" {
			e.RunID = *env.Error.RunID
		}
	}
	return e
}

// NetworkError is a call that got no answer after its retries (the
// connection dropped, refused, timed out). A POST was sent with
// IdempotencyKey each time: calling again with WithIdempotencyKey of it
// answers the run the call started, if it started one, uncharged twice.
type NetworkError struct {
	Err            error
	IdempotencyKey string
	Attempts       int
}

func (e *NetworkError) Error() string {
	return fmt.Sprintf("sdr: no answer after %d attempts (Idempotency-Key %q): %v", e.Attempts, e.IdempotencyKey, e.Err)
}

func (e *NetworkError) Unwrap() error { return e.Err }
