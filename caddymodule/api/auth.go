package api

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"strings"

	"go.uber.org/zap"

	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/testmode"
)

// Authenticate checks the request's bearer key (AuthenticateHeader).
func (a *API) Authenticate(r *http.Request) (store.Key, *Error) {
	return a.AuthenticateHeader(r.Context(), r.Header.Get("Authorization"))
}

// AuthenticateHeader checks the bearer key of an Authorization header, for
// front-ends that hold the header apart from an *http.Request: missing →
// missing_api_key, malformed or unknown → invalid_api_key, revoked →
// revoked_api_key (all 401), a store failure → 503 store_unavailable.
func (a *API) AuthenticateHeader(ctx context.Context, hdr string) (store.Key, *Error) {
	if hdr == "" {
		return store.Key{}, newError(http.StatusUnauthorized, "missing_api_key", typeAuthentication,
			"no API key: send it as Authorization: Bearer "+a.KeyPrefix+"_live_…")
	}
	scheme, secret, ok := strings.Cut(hdr, " ")
	secret = strings.TrimSpace(secret)
	if !ok || !strings.EqualFold(scheme, "Bearer") || !a.keyShaped(secret) {
		msg := "malformed Authorization header: expected Authorization: Bearer " + a.KeyPrefix + "_live_…"
		if ok && strings.HasPrefix(secret, a.KeyPrefix+"_oat_") {
			// An MCP client's OAuth access token, sent to the REST API.
			msg = "this is an OAuth access token, which only /mcp accepts; the REST API takes an API key: Authorization: Bearer " + a.KeyPrefix + "_live_…"
		}
		return store.Key{}, newError(http.StatusUnauthorized, "invalid_api_key", typeAuthentication, msg)
	}
	k, err := a.Store.KeyByHash(ctx, sha256.Sum256([]byte(secret)))
	if errors.Is(err, store.ErrNotFound) {
		return store.Key{}, newError(http.StatusUnauthorized, "invalid_api_key", typeAuthentication,
			"unknown API key; check that it was copied whole, or create a new one")
	}
	if err != nil {
		a.Logger.Error("looking up api key", zap.Error(err))
		return store.Key{}, storeUnavailable()
	}
	if k.RevokedAt != nil {
		return store.Key{}, newError(http.StatusUnauthorized, "revoked_api_key", typeAuthentication,
			"this API key was revoked on "+k.RevokedAt.UTC().Format("2006-01-02T15:04:05Z")+"; create a new key")
	}
	if testmode.IsTest(k.AccountID) && a.TestRouter == nil {
		return store.Key{}, testModeOff()
	}
	return k, nil
}

// keyShaped reports whether secret has the form of an API key of either
// mode: <prefix>_live_… or <prefix>_test_….
func (a *API) keyShaped(secret string) bool {
	return strings.HasPrefix(secret, a.KeyPrefix+"_live_") || strings.HasPrefix(secret, a.KeyPrefix+"_test_")
}
