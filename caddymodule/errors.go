package caddymodule

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// Error types of the envelope.
const (
	typeValidation     = "validation"
	typeAuthentication = "authentication"
	typeBilling        = "billing"
	typeRateLimit      = "rate_limit"
	typeNotFound       = "not_found"
	typeTimeout        = "timeout"
	typeProvider       = "provider"
)

// apiError is a client-facing error: the envelope
// {"error": {"code", "message", "type", …extra}} with an HTTP status.
type apiError struct {
	status     int
	code       string
	typ        string
	message    string
	extra      map[string]any
	retryAfter time.Duration
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

func newError(status int, code, typ, msg string) *apiError {
	return &apiError{status: status, code: code, typ: typ, message: msg}
}

// with adds an extra field to the error object.
func (e *apiError) with(k string, v any) *apiError {
	if e.extra == nil {
		e.extra = map[string]any{}
	}
	e.extra[k] = v
	return e
}

func (e *apiError) write(w http.ResponseWriter) {
	if cr, ok := w.(codeRecorder); ok {
		cr.recordCode(e.code)
	}
	body := map[string]any{"code": e.code, "message": e.message, "type": e.typ}
	for k, v := range e.extra {
		body[k] = v
	}
	if e.retryAfter > 0 {
		secs := int((e.retryAfter + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
	}
	if e.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="social_router"`)
	}
	writeJSON(w, e.status, map[string]any{"error": body})
}

// writeJSON renders v without HTML escaping: this is an API, not a page,
// and "&" in a URL should stay readable.
func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"code":"internal_error","type":"internal","message":"rendering the response failed"}}`)
	}
	writeRaw(w, status, b)
}

func writeRaw(w http.ResponseWriter, status int, b []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
