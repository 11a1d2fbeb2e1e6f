// Package oauth is the gateway's own OAuth 2.1 authorization server for
// the /mcp endpoint, so an MCP client can sign in without a key: protected
// resource metadata (RFC 9728), authorization server metadata (RFC 8414),
// dynamic client registration of public clients (RFC 7591), the
// authorization code grant with PKCE S256 only, tokens bound to the /mcp
// resource (RFC 8707), rotating refresh tokens and revocation (RFC 7009).
//
// A member's consent is a grant: a store.Key of kind oauth, so a grant has
// a key's credit limit, spend and revocation and a tool call with its
// access token is billed exactly like one with a key. Codes, access and
// refresh tokens are random (130 bits) and stored only as their SHA-256.
// The sign-in and consent pages are the dashboard's (package dashboard
// calls ParseAuthorize and Approve); this package knows nothing of Caddy
// and uses only the store methods it declares (Store).
//
// The token code is written here rather than taken from a library:
// zitadel/oidc's op package is an OpenID provider around its own client
// storage and JWT tokens, with no dynamic registration nor RFC 8707
// resource binding; the Go MCP SDK has the client side and the metadata
// types, which are used here.
package oauth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"

	"socialrouter/caddymodule/store"
)

// Lifetimes. A code is exchanged right after the redirect; an access token
// is short so a revoked grant or a leaked token stops quickly; a refresh
// token rotates at each use and lapses after a month unused.
const (
	CodeTTL    = time.Minute
	AccessTTL  = time.Hour
	RefreshTTL = 30 * 24 * time.Hour
	// A registration lives ClientUnusedTTL until its first tokens, then
	// ClientTTL past its latest tokens: registration is open, so the
	// ones never used (a client that gave up, or a flood) lapse in a day
	// rather than fill the store for a year.
	ClientUnusedTTL = 24 * time.Hour
	ClientTTL       = 365 * 24 * time.Hour
)

// Scope is the one scope: the MCP tools of the member's account.
const Scope = "mcp"

// Paths served. The protected resource is ResourcePath.
const (
	ResourcePath     = "/mcp"
	PathResourceMeta = "/.well-known/oauth-protected-resource"
	PathServerMeta   = "/.well-known/oauth-authorization-server"
	PathAuthorize    = "/oauth/authorize"
	PathToken        = "/oauth/token"
	PathRegister     = "/oauth/register"
	PathRevoke       = "/oauth/revoke"
	ResourceName     = "Social Data Router"
)

// Kinds of store.OAuthRecord.
const (
	recordClient  = "client"
	recordCode    = "code"
	recordAccess  = "access"
	recordRefresh = "refresh"
	// recordReplayed marks a grant whose code was presented twice.
	recordReplayed = "replayed"
)

// Bounds of what a client may send.
const (
	maxRegisterBytes  = 16 << 10 // a registration, token or revocation body
	maxRedirectURIs   = 10
	maxRedirectURILen = 2000 // bytes; what browsers reliably follow
	maxClientNameRune = 100
)

// Store is the part of the account store the authorization server uses:
// its clients, codes and tokens (store.OAuth), and the keys of kind oauth
// its grants are. It is declared here, where it is used, so that oauth
// depends on these methods and not on the whole store.Store.
type Store interface {
	store.OAuth
	CreateKey(ctx context.Context, k store.Key) error
	GetKey(ctx context.Context, id string) (store.Key, error)
	KeyByHash(ctx context.Context, hash [32]byte) (store.Key, error)
	RevokeKey(ctx context.Context, id string, at time.Time) (store.Key, error)
}

// Server is the authorization server over a store. It holds no state of
// its own, so every node serving one PostgreSQL store is the same server.
type Server struct {
	Store Store
	// KeyPrefix is the prefix of the gateway's secrets (sdr): access
	// tokens are <prefix>_oat_…, refresh tokens <prefix>_ort_….
	KeyPrefix string
	Logger    *zap.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

func (s *Server) now() time.Time {
	if s.Now == nil {
		return time.Now().UTC()
	}
	return s.Now().UTC()
}

func (s *Server) logger() *zap.Logger {
	if s.Logger == nil {
		return zap.NewNop()
	}
	return s.Logger
}

// Origin is the scheme, host and port the request came to: the issuer,
// and with ResourcePath the resource.
func Origin(r *http.Request) string {
	if r.TLS != nil {
		return "https://" + r.Host
	}
	return "http://" + r.Host
}

// Resource is the one resource tokens are issued for.
func Resource(r *http.Request) string { return Origin(r) + ResourcePath }

// Serves reports whether path is one of the endpoints ServeHTTP answers
// (the authorize endpoint is the dashboard's).
func Serves(path string) bool {
	switch path {
	case PathResourceMeta, PathResourceMeta + ResourcePath, PathServerMeta, PathToken, PathRegister, PathRevoke:
		return true
	}
	return false
}

// ServeHTTP serves the metadata, registration, token and revocation
// endpoints. They are public and carry no cookie, so any origin may call
// them (browser-based clients need CORS).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Allow-Headers", "Content-Type, Authorization, MCP-Protocol-Version")
	h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
	if r.Method == http.MethodOptions {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	get := r.Method == http.MethodGet || r.Method == http.MethodHead
	switch p := r.URL.Path; {
	case (p == PathResourceMeta || p == PathResourceMeta+ResourcePath) && get:
		s.resourceMeta(w, r)
	case p == PathServerMeta && get:
		s.serverMeta(w, r)
	case p == PathRegister && r.Method == http.MethodPost:
		s.register(w, r)
	case p == PathToken && r.Method == http.MethodPost:
		s.token(w, r)
	case p == PathRevoke && r.Method == http.MethodPost:
		s.revoke(w, r)
	default:
		h.Set("Allow", "GET, POST, OPTIONS")
		writeJSON(w, http.StatusMethodNotAllowed, tokenError{Error: "invalid_request", Description: "method not allowed"})
	}
}

// secret makes a random token with a prefix: 26 base32 characters, 130 bits.
func secret(prefix string) string { return prefix + rand.Text() }

// digest is the stored form of a secret.
func digest(secret string) [32]byte { return sha256.Sum256([]byte(secret)) }

func (s *Server) accessPrefix() string  { return s.KeyPrefix + "_oat_" }
func (s *Server) refreshPrefix() string { return s.KeyPrefix + "_ort_" }

// IsAccessToken reports whether a bearer token has the access token form,
// so /mcp can tell it from an API key.
func (s *Server) IsAccessToken(token string) bool {
	return strings.HasPrefix(token, s.accessPrefix())
}
