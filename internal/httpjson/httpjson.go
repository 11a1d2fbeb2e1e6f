// Package httpjson writes JSON answers the way both HTTP APIs (/v1 and the
// /sdr admin routes) answer: no HTML escaping, no trailing newline, an
// explicit Content-Length.
package httpjson

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
)

// Write renders v without HTML escaping: these are APIs, not pages, and
// "&" in a URL should stay readable. A value that cannot be encoded is
// answered as a 500 internal_error envelope.
func Write(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"code":"internal_error","type":"internal","message":"rendering the response failed"}}`)
	}
	WriteRaw(w, status, b)
}

// WriteRaw answers b, which is JSON already.
func WriteRaw(w http.ResponseWriter, status int, b []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
