// Package mcp serves the gateway over the Model Context Protocol: one tool
// per extract service of the registry, plus search, catalogue, run, balance
// and usage tools, on a streamable HTTP endpoint (the official Go SDK).
//
// It knows nothing of Caddy, storage or routing: the tools are generated
// from a *registry.Registry (their schemas taken from the registry's
// OpenAPI document) and every call goes through a Backend, the same cores
// the REST handlers call, so a tool call is validated, billed and recorded
// exactly as the REST call is. The Endpoint outlives config reloads; Swap
// replaces its tool set and connected clients get tools/list_changed.
package mcp

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"socialrouter/caddymodule/api/errwire"
	"socialrouter/caddymodule/errkind"
)

// Caller is an authenticated caller, as the Backend returned it; this
// package only hands it back.
type Caller any

// Backend is what the tools call: the REST cores after authentication and
// body reading. Document answers are the exact bytes REST answers with.
type Backend interface {
	// Authenticate resolves the caller of a call from the HTTP request
	// that carried it: its Authorization header, and the token info a
	// verifying middleware in front of the endpoint gave the SDK (nil
	// when there was none).
	Authenticate(ctx context.Context, authorization string, token *auth.TokenInfo) (Caller, *Error)
	// Catalogue is GET /v1/services, /v1/services/{platform} (service "")
	// or /v1/services/{platform}/{service}.
	Catalogue(platform, service string) ([]byte, *Error)
	// Extract is POST /v1/extract/{platform}/{service} with body args.
	Extract(ctx context.Context, c Caller, platform, service string, args []byte) ([]byte, *Error)
	// Search is POST /v1/search with body args.
	Search(ctx context.Context, c Caller, args []byte) ([]byte, *Error)
	// Run is GET /v1/extractions/{id}.
	Run(ctx context.Context, c Caller, id string) ([]byte, *Error)
	// Balance is GET /v1/account/balance.
	Balance(ctx context.Context, c Caller) ([]byte, *Error)
	// Usage is GET /v1/account/usage, days as the query parameter's text
	// (given false: not sent).
	Usage(ctx context.Context, c Caller, days string, given bool) ([]byte, *Error)
}

// Error is an API error as a tool answers it: isError, with the REST error
// envelope {"error": {"code", "message", "type", …}} as its content.
type Error struct {
	Code    string
	Message string
	// Envelope is the REST error body.
	Envelope json.RawMessage
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// NewError renders an error envelope; extra holds the fields beside code,
// message and type (run_id, attempts, invalid_inputs, …).
func NewError(code, typ, message string, extra map[string]any) *Error {
	body := map[string]any{"code": code, "message": message, "type": typ}
	for k, v := range extra {
		body[k] = v
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(map[string]any{"error": body}); err != nil {
		w := errwire.Of(errkind.Internal)
		code, message = w.Code, "rendering the error failed"
		buf.Reset()
		_ = enc.Encode(map[string]any{"error": map[string]any{"code": code, "message": message, "type": w.Type}})
	}
	return &Error{Code: code, Message: message, Envelope: bytes.TrimSpace(buf.Bytes())}
}
