package oauth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"regexp"
	"time"

	"go.uber.org/zap"

	"socialrouter/caddymodule/store"
)

// tokenError is an RFC 6749 §5.2 error answer.
type tokenError struct {
	Error       string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

// tokenResponse is a successful token answer.
type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int    `json:"expires_in"`
	RefreshToken string `json:"refresh_token"`
	Scope        string `json:"scope"`
}

// tokenData is what an access or refresh token record carries.
type tokenData struct {
	ClientID  string `json:"client_id"`
	Resource  string `json:"resource"`
	AccountID string `json:"account_id"`
}

var verifierForm = regexp.MustCompile(`^[A-Za-z0-9._~-]{43,128}$`)

// failure is a refused token request.
type failure struct {
	status int
	tokenError
}

func refuse(code, msg string) *failure {
	return &failure{status: http.StatusBadRequest, tokenError: tokenError{Error: code, Description: msg}}
}

var errUnavailable = &failure{status: http.StatusServiceUnavailable,
	tokenError: tokenError{Error: "temporarily_unavailable", Description: "the account store is unavailable; try again shortly"}}

// token serves POST /oauth/token: the authorization_code and
// refresh_token grants of a public client.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if f := parseForm(w, r); f != nil {
		writeJSON(w, f.status, f.tokenError)
		return
	}
	var (
		resp *tokenResponse
		f    *failure
	)
	if res := r.PostForm.Get("resource"); res != "" && res != Resource(r) {
		f = refuse("invalid_target", "tokens are issued only for the resource "+Resource(r))
	} else if f = s.knownClient(r); f == nil {
		switch r.PostForm.Get("grant_type") {
		case "authorization_code":
			resp, f = s.exchangeCode(r)
		case "refresh_token":
			resp, f = s.refresh(r)
		case "":
			f = refuse("invalid_request", "grant_type is required")
		default:
			f = refuse("unsupported_grant_type", "grant_type must be authorization_code or refresh_token")
		}
	}
	if f != nil {
		writeJSON(w, f.status, f.tokenError)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// parseForm reads the body of a token or revocation request: an
// application/x-www-form-urlencoded form (RFC 6749 §3.2, RFC 7009 §2.1)
// whose parameters each appear at most once. Any other body (JSON, a
// multipart form) is refused rather than read as an empty form, so the
// client learns what is wrong instead of "grant_type is required".
func parseForm(w http.ResponseWriter, r *http.Request) *failure {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/x-www-form-urlencoded" {
		return refuse("invalid_request", "the body must be an application/x-www-form-urlencoded form")
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxRegisterBytes)
	if err := r.ParseForm(); err != nil {
		return refuse("invalid_request", "the body must be an application/x-www-form-urlencoded form of at most 16 KiB")
	}
	for k, v := range r.PostForm {
		if len(v) > 1 {
			return refuse("invalid_request", "parameter "+k+" is sent more than once")
		}
	}
	return nil
}

// knownClient refuses a token request whose client_id is not a live
// registration with invalid_client, HTTP 401 (RFC 6749 §5.2): that is
// what tells a client its registration lapsed, so it registers again
// (the MCP SDKs do), where invalid_grant would leave it retrying the
// same client_id. A missing client_id is left to the grant's checks.
func (s *Server) knownClient(r *http.Request) *failure {
	id := r.PostForm.Get("client_id")
	if id == "" {
		return nil
	}
	_, err := s.client(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return &failure{status: http.StatusUnauthorized, tokenError: tokenError{Error: "invalid_client",
			Description: "unknown client_id: register again (registrations lapse a day unused, a year after their latest tokens)"}}
	}
	if err != nil {
		s.logger().Error("reading oauth client", zap.Error(err))
		return errUnavailable
	}
	return nil
}

// exchangeCode redeems a code once: a second redemption is a replay, and
// revokes the grant the first one created (RFC 6749 §4.1.2).
func (s *Server) exchangeCode(r *http.Request) (*tokenResponse, *failure) {
	ctx, form := r.Context(), r.PostForm
	code, verifier := form.Get("code"), form.Get("code_verifier")
	if code == "" || form.Get("client_id") == "" {
		return nil, refuse("invalid_request", "code and client_id are required")
	}
	if !verifierForm.MatchString(verifier) {
		return nil, refuse("invalid_request", "code_verifier is required: 43 to 128 characters of A-Z a-z 0-9 - . _ ~")
	}
	var d codeData
	rec, f := s.spend(ctx, code, recordCode, &d)
	if f != nil {
		return nil, f
	}
	switch {
	case form.Get("client_id") != d.ClientID:
		return nil, refuse("invalid_grant", "the code was issued to another client")
	case (d.RedirectGiven || form.Get("redirect_uri") != "") && matchRedirectURI([]string{d.RedirectURI}, form.Get("redirect_uri")) == "":
		return nil, refuse("invalid_grant", "redirect_uri must be the authorization request's, character for character")
	case !pkceMatches(verifier, d.CodeChallenge):
		return nil, refuse("invalid_grant", "code_verifier does not match the code_challenge")
	case d.Resource != Resource(r):
		return nil, refuse("invalid_target", "the code was issued for another resource")
	}
	now := s.now()
	grant := store.Key{ID: rec.GrantID, AccountID: d.AccountID, Name: d.ClientName, Kind: store.KindOAuth,
		Hash: digest(secret("grant_")), Display: d.ClientID, CreatedAt: now, CreditLimit: d.CreditLimit}
	if err := s.Store.CreateKey(ctx, grant); err != nil {
		s.logger().Error("creating oauth grant", zap.Error(err))
		return nil, errUnavailable
	}
	if replayed, err := s.replayed(ctx, rec.GrantID); replayed || err != nil {
		s.revokeGrant(ctx, rec.GrantID, "authorization code replayed")
		if err != nil {
			return nil, errUnavailable
		}
		return nil, refuse("invalid_grant", "the authorization code was presented twice; the grant is revoked, sign in again")
	}
	return s.issue(ctx, rec.GrantID, tokenData{ClientID: d.ClientID, Resource: d.Resource, AccountID: d.AccountID})
}

// spend uses a code or refresh token once and decodes its data into v. A
// secret seen before is a replay: its grant is revoked (RFC 6749 §4.1.2
// for codes, OAuth 2.1 §4.3.1 for refresh tokens) and it is refused.
func (s *Server) spend(ctx context.Context, secret, kind string, v any) (store.OAuthRecord, *failure) {
	what := map[string]string{recordCode: "authorization code", recordRefresh: "refresh token"}[kind]
	rec, err := s.Store.UseOAuth(ctx, digest(secret), s.now())
	if errors.Is(err, store.ErrNotFound) || (err == nil && rec.Kind != kind) {
		return rec, refuse("invalid_grant", "unknown or expired "+what)
	}
	if err != nil {
		s.logger().Error("using oauth "+what, zap.Error(err))
		return rec, errUnavailable
	}
	if rec.Used {
		if kind == recordCode {
			s.markReplayed(ctx, rec.GrantID)
		}
		s.revokeGrant(ctx, rec.GrantID, what+" replayed")
		return rec, refuse("invalid_grant", "the "+what+" was already used; the grant is revoked, sign in again")
	}
	if err := json.Unmarshal(rec.Data, v); err != nil {
		s.logger().Error("decoding oauth "+what, zap.Error(err))
		return rec, errUnavailable
	}
	return rec, nil
}

// A code replayed while its first exchange is under way may find no grant
// to revoke yet. So the replay first leaves a marker, then revokes; the
// exchange first creates the grant, then looks for the marker: whatever
// the interleaving, one of the two sees the other's write.
func replayMarker(grant string) [32]byte { return digest("replayed " + grant) }

func (s *Server) markReplayed(ctx context.Context, grant string) {
	now := s.now()
	err := s.Store.PutOAuth(ctx, store.OAuthRecord{Hash: replayMarker(grant), Kind: recordReplayed, GrantID: grant,
		Data: []byte("{}"), CreatedAt: now, ExpiresAt: now.Add(CodeTTL)})
	if err != nil && !errors.Is(err, store.ErrExists) {
		s.logger().Error("marking oauth code replayed", zap.String("grant", grant), zap.Error(err))
	}
}

func (s *Server) replayed(ctx context.Context, grant string) (bool, error) {
	_, err := s.Store.GetOAuth(ctx, replayMarker(grant), s.now())
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		s.logger().Error("reading oauth replay marker", zap.Error(err))
		return false, err
	}
	return true, nil
}

// pkceMatches checks S256: BASE64URL(SHA256(verifier)) == challenge.
func pkceMatches(verifier, challenge string) bool {
	sum := sha256.Sum256([]byte(verifier))
	want := base64.RawURLEncoding.EncodeToString(sum[:])
	return subtle.ConstantTimeCompare([]byte(want), []byte(challenge)) == 1
}

// refresh rotates a refresh token: the old one is spent, a new pair is
// issued. A spent token presented again means two parties hold it, so
// the whole grant is revoked (OAuth 2.1 §4.3.1).
func (s *Server) refresh(r *http.Request) (*tokenResponse, *failure) {
	ctx, form := r.Context(), r.PostForm
	tok := form.Get("refresh_token")
	if tok == "" || form.Get("client_id") == "" {
		return nil, refuse("invalid_request", "refresh_token and client_id are required")
	}
	var d tokenData
	rec, f := s.spend(ctx, tok, recordRefresh, &d)
	if f != nil {
		return nil, f
	}
	if form.Get("client_id") != d.ClientID {
		return nil, refuse("invalid_grant", "the refresh token was issued to another client")
	}
	if d.Resource != Resource(r) {
		return nil, refuse("invalid_target", "the refresh token was issued for another resource")
	}
	if _, f := s.liveGrant(ctx, rec.GrantID); f != nil {
		return nil, f
	}
	return s.issue(ctx, rec.GrantID, d)
}

// liveGrant returns the grant unless it was revoked.
func (s *Server) liveGrant(ctx context.Context, id string) (store.Key, *failure) {
	g, err := s.Store.GetKey(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && (g.RevokedAt != nil || g.Kind != store.KindOAuth)) {
		return store.Key{}, refuse("invalid_grant", "the grant was revoked; sign in again")
	}
	if err != nil {
		s.logger().Error("reading oauth grant", zap.Error(err))
		return store.Key{}, errUnavailable
	}
	return g, nil
}

// issue stores a new access and refresh token of a grant.
func (s *Server) issue(ctx context.Context, grant string, d tokenData) (*tokenResponse, *failure) {
	data, err := json.Marshal(d)
	if err != nil {
		s.logger().Error("encoding oauth token", zap.Error(err))
		return nil, errUnavailable
	}
	now := s.now()
	resp := &tokenResponse{AccessToken: secret(s.accessPrefix()), TokenType: "Bearer",
		ExpiresIn: int(AccessTTL / time.Second), RefreshToken: secret(s.refreshPrefix()), Scope: Scope}
	for _, t := range []struct {
		secret, kind string
		ttl          time.Duration
	}{{resp.AccessToken, recordAccess, AccessTTL}, {resp.RefreshToken, recordRefresh, RefreshTTL}} {
		err := s.Store.PutOAuth(ctx, store.OAuthRecord{Hash: digest(t.secret), Kind: t.kind, GrantID: grant,
			Data: data, CreatedAt: now, ExpiresAt: now.Add(t.ttl)})
		if err != nil {
			s.logger().Error("storing oauth token", zap.Error(err))
			return nil, errUnavailable
		}
	}
	// The client is in use: its registration lives on. The tokens are
	// stored already, so a failure here is only logged; the next refresh
	// tries again.
	if err := s.Store.ExtendOAuth(ctx, digest(d.ClientID), now, now.Add(ClientTTL)); err != nil {
		s.logger().Warn("extending oauth client registration", zap.String("client", d.ClientID), zap.Error(err))
	}
	return resp, nil
}

// revokeGrant revokes a grant after a replay; the grant of a code
// replayed before its first exchange finished may not exist yet.
func (s *Server) revokeGrant(ctx context.Context, id, why string) {
	if _, err := s.Store.RevokeKey(ctx, id, s.now()); err != nil && !errors.Is(err, store.ErrNotFound) {
		s.logger().Error("revoking oauth grant", zap.String("grant", id), zap.String("why", why), zap.Error(err))
		return
	}
	s.logger().Warn("oauth grant revoked", zap.String("grant", id), zap.String("why", why))
}

// ErrInvalidToken is returned by Verify for a token that is unknown,
// expired, for another resource, or of a revoked grant.
var ErrInvalidToken = errors.New("invalid access token")

// Verify resolves an access token presented to the resource of r: the
// grant it authenticates as, a key of kind oauth.
func (s *Server) Verify(ctx context.Context, r *http.Request, token string) (store.Key, error) {
	return s.VerifyToken(ctx, token, Resource(r))
}

// VerifyToken is Verify for a token presented to resource; "" skips the
// resource check, for a caller behind Guard (which checked it on the
// request) that no longer has the request.
func (s *Server) VerifyToken(ctx context.Context, token, resource string) (store.Key, error) {
	rec, err := s.Store.GetOAuth(ctx, digest(token), s.now())
	if errors.Is(err, store.ErrNotFound) || (err == nil && rec.Kind != recordAccess) {
		return store.Key{}, ErrInvalidToken
	}
	if err != nil {
		return store.Key{}, fmt.Errorf("reading access token: %w", err)
	}
	var d tokenData
	if err := json.Unmarshal(rec.Data, &d); err != nil {
		return store.Key{}, fmt.Errorf("decoding access token: %v", err)
	}
	if resource != "" && d.Resource != resource {
		return store.Key{}, ErrInvalidToken
	}
	g, err := s.Store.GetKey(ctx, rec.GrantID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && (g.RevokedAt != nil || g.Kind != store.KindOAuth)) {
		return store.Key{}, ErrInvalidToken
	}
	if err != nil {
		return store.Key{}, fmt.Errorf("reading grant: %w", err)
	}
	return g, nil
}

// revoke serves POST /oauth/revoke (RFC 7009): an access or refresh token
// revokes its whole grant. An unknown token is no error; a token of
// another client (when client_id is sent) is left alone.
func (s *Server) revoke(w http.ResponseWriter, r *http.Request) {
	if f := parseForm(w, r); f != nil {
		writeJSON(w, f.status, f.tokenError)
		return
	}
	if r.PostForm.Get("token") == "" {
		writeJSON(w, http.StatusBadRequest, tokenError{Error: "invalid_request", Description: "token is required"})
		return
	}
	ctx := r.Context()
	rec, err := s.Store.GetOAuth(ctx, digest(r.PostForm.Get("token")), s.now())
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		s.logger().Error("reading oauth token to revoke", zap.Error(err))
		writeJSON(w, errUnavailable.status, errUnavailable.tokenError)
		return
	}
	if err == nil && (rec.Kind == recordAccess || rec.Kind == recordRefresh) {
		var d tokenData
		_ = json.Unmarshal(rec.Data, &d)
		if c := r.PostForm.Get("client_id"); c == "" || c == d.ClientID {
			s.revokeGrant(ctx, rec.GrantID, "revoked by the client")
		}
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
}
