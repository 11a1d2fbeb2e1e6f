package oauth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"go.uber.org/zap"

	"socialrouter/caddymodule/store"
)

// maxPeek bounds how much of an anonymous request's body Guard reads to
// find a tools/call; a larger body is passed on whole, unread by Guard.
const maxPeek = 1 << 20

// Guard puts /mcp behind OAuth as MCP clients expect it: a request whose
// bearer token is not an API key must be a live access token for this
// resource, and an anonymous request calling a tool that needs sign-in
// (anonymous reports the ones that do not) is refused. Both refusals are
// HTTP 401 with a WWW-Authenticate challenge naming the resource
// metadata, which starts a client's sign-in. An API key (<prefix>_live_,
// or a test key <prefix>_test_) passes if it is live (unknown or revoked: the same 401 as an unknown
// access token); the tool call checks it again as REST does. The grant of
// a verified access token reaches the tool call as the SDK's TokenInfo
// (Grant reads it), so the call does not look the token up again.
func (s *Server) Guard(next http.Handler, anonymous func(tool string) bool) http.Handler {
	// The SDK takes a request's TokenInfo only from its own middleware:
	// its verifier here hands on the grant Guard verified.
	// TokenInfo.UserID also binds an MCP session to the credential that
	// opened it: the SDK refuses (403) a request on that session carrying
	// another one, so a leaked session id is of no use to someone holding
	// another account's key. It is the grant (stable across refreshes) or
	// the API key's hash (the key itself is checked by the tool call).
	withGrant := auth.RequireBearerToken(func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
		g, ok := ctx.Value(grantKey{}).(store.Key)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: "grant:" + g.ID, Scopes: []string{Scope}, Extra: map[string]any{tokenInfoGrant: g}}, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(next)
	withKey := auth.RequireBearerToken(func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		sum := sha256.Sum256([]byte(tok))
		return &auth.TokenInfo{UserID: "key:" + hex.EncodeToString(sum[:])}, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hdr := r.Header.Get("Authorization"); hdr != "" {
			scheme, tok, _ := strings.Cut(hdr, " ")
			tok = strings.TrimSpace(tok)
			if strings.EqualFold(scheme, "Bearer") && (strings.HasPrefix(tok, s.KeyPrefix+"_live_") || strings.HasPrefix(tok, s.KeyPrefix+"_test_")) {
				// Looked up here, as an access token is: a key that is
				// not live gets the challenge that sends its client to
				// sign in again, at initialize rather than at its first
				// tool call.
				k, err := s.Store.KeyByHash(r.Context(), sha256.Sum256([]byte(tok)))
				if errors.Is(err, store.ErrNotFound) || (err == nil && (k.RevokedAt != nil || k.Kind != "")) {
					challenge(w, r, http.StatusUnauthorized, "invalid_token", "the API key is unknown or revoked; create a new key or sign in again")
					return
				}
				if err != nil {
					s.logger().Error("looking up api key", zap.Error(err))
					writeJSON(w, http.StatusServiceUnavailable, apiError("store_unavailable", "the account store is unavailable; try again shortly", "unavailable"))
					return
				}
				withKey.ServeHTTP(w, r)
				return
			}
			// RFC 6750 §3.1: another scheme is no authentication at all
			// (a challenge without an error code); a Bearer without a
			// token is a malformed request (invalid_request, 400).
			if !strings.EqualFold(scheme, "Bearer") {
				challenge(w, r, http.StatusUnauthorized, "", "send the access token as Authorization: Bearer …")
				return
			}
			if tok == "" {
				challenge(w, r, http.StatusBadRequest, "invalid_request", "the Authorization header names no token: send Authorization: Bearer <token>")
				return
			}
			g, err := s.Verify(r.Context(), r, tok)
			if errors.Is(err, ErrInvalidToken) {
				challenge(w, r, http.StatusUnauthorized, "invalid_token", "the access token is unknown, expired or revoked; refresh it or sign in again")
				return
			}
			if err != nil {
				s.logger().Error("verifying access token", zap.Error(err))
				writeJSON(w, http.StatusServiceUnavailable, apiError("store_unavailable", "the account store is unavailable; try again shortly", "unavailable"))
				return
			}
			withGrant.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), grantKey{}, g)))
			return
		}
		if r.Method == http.MethodPost && r.Body != nil {
			head, err := io.ReadAll(io.LimitReader(r.Body, maxPeek+1))
			if err != nil {
				writeJSON(w, http.StatusBadRequest, apiError("invalid_body", "the request body could not be read", "validation"))
				return
			}
			r.Body = struct {
				io.Reader
				io.Closer
			}{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
			if len(head) <= maxPeek && callsSignedIn(head, anonymous) {
				challenge(w, r, http.StatusUnauthorized, "", "this tool needs sign-in: an OAuth access token (the client discovers how from this answer) or an API key as Authorization: Bearer …")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// grantKey carries the grant Guard verified to withGrant's verifier.
type grantKey struct{}

// tokenInfoGrant is the TokenInfo.Extra key of the verified grant.
const tokenInfoGrant = "grant"

// Grant is the grant Guard verified for the HTTP request that carried a
// tool call (the SDK's RequestExtra.TokenInfo); false when the request
// carried no access token (an API key, or none).
func Grant(ti *auth.TokenInfo) (store.Key, bool) {
	if ti == nil {
		return store.Key{}, false
	}
	g, ok := ti.Extra[tokenInfoGrant].(store.Key)
	return g, ok
}

// callsSignedIn reports whether a JSON-RPC message (or batch) calls a tool
// that is not anonymous. A body that is not JSON-RPC is left to the SDK.
func callsSignedIn(body []byte, anonymous func(string) bool) bool {
	type message struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	var batch []message
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		if json.Unmarshal(body, &batch) != nil {
			return false
		}
	} else {
		var m message
		if json.Unmarshal(body, &m) != nil {
			return false
		}
		batch = append(batch, m)
	}
	for _, m := range batch {
		if m.Method == "tools/call" && !anonymous(m.Params.Name) {
			return true
		}
	}
	return false
}

// challenge answers status (401, or 400 for invalid_request) with the RFC
// 9728 challenge; code is the RFC 6750 error ("" when no token was sent).
func challenge(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	v := `Bearer resource_metadata="` + Origin(r) + PathResourceMeta + ResourcePath + `"`
	if code != "" {
		v += `, error="` + code + `"`
	}
	w.Header().Set("WWW-Authenticate", v)
	if code == "" {
		code = "missing_token"
	}
	writeJSON(w, status, apiError(code, msg, "authentication"))
}

// apiError is the gateway's error envelope, as REST answers.
func apiError(code, msg, typ string) map[string]any {
	return map[string]any{"error": map[string]any{"code": code, "message": msg, "type": typ}}
}
