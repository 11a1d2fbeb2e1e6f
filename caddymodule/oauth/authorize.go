package oauth

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/oklog/ulid/v2"

	"socialrouter/caddymodule/store"
)

// AuthRequest is a checked authorization request: what the consent page
// shows and carries in its form, and what Approve binds the code to.
type AuthRequest struct {
	Client      Client
	RedirectURI string
	// RedirectGiven is whether the request named its redirect URI (it may
	// leave it out when the client registered one): the token request
	// must then name the same (OAuth 2.1 §4.1.3).
	RedirectGiven bool
	State         string
	CodeChallenge string
	Resource      string
	// Origin is the issuer this request came to (the iss of the redirect).
	Origin string
}

// RedirectHost is the host the member's browser is sent back to, which
// the consent page names beside the client's self-chosen name.
func (a *AuthRequest) RedirectHost() string {
	u, err := url.Parse(a.RedirectURI)
	if err != nil {
		return a.RedirectURI
	}
	return u.Host
}

// Params are the request's parameters, for the consent form's hidden inputs.
func (a *AuthRequest) Params() [][2]string {
	redirect := ""
	if a.RedirectGiven {
		redirect = a.RedirectURI
	}
	return [][2]string{
		{"response_type", "code"}, {"client_id", a.Client.ID}, {"redirect_uri", redirect},
		{"code_challenge", a.CodeChallenge}, {"code_challenge_method", "S256"},
		{"state", a.State}, {"resource", a.Resource}, {"scope", Scope},
	}
}

// AuthError is a refused authorization request. Without a client and
// redirect URI to trust, it is shown to the member (Redirect false: a
// 400 page, never a redirect to an unregistered URI); otherwise the
// client gets it on its redirect URI.
type AuthError struct {
	Redirect    bool
	Code        string
	Description string
}

func (e *AuthError) Error() string { return e.Code + ": " + e.Description }

// ErrStore is returned (wrapped) by ParseAuthorize when the store failed.
var ErrStore = errors.New("account store unavailable")

var challengeForm = regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`)

// ParseAuthorize checks the parameters of an authorization request (the
// query of the GET, the form of the consent POST).
func (s *Server) ParseAuthorize(ctx context.Context, r *http.Request, v url.Values) (*AuthRequest, error) {
	c, err := s.client(ctx, v.Get("client_id"))
	if errors.Is(err, store.ErrNotFound) {
		return nil, &AuthError{Code: "invalid_client", Description: "unknown client_id: the client must register first (or register again: a registration lapses a day after it is made if no tokens were issued to it, a year after its latest tokens otherwise)"}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStore, err)
	}
	a := &AuthRequest{Client: c, RedirectURI: v.Get("redirect_uri"), RedirectGiven: v.Get("redirect_uri") != "",
		State: v.Get("state"), Origin: Origin(r)}
	switch {
	case a.RedirectURI == "" && len(c.RedirectURIs) == 1:
		a.RedirectURI = c.RedirectURIs[0]
	default:
		// Compared in the form registration kept (its host in ASCII), so
		// a client naming it as it registered it still matches.
		if a.RedirectURI = matchRedirectURI(c.RedirectURIs, a.RedirectURI); a.RedirectURI == "" {
			return nil, &AuthError{Code: "invalid_request", Description: "redirect_uri is not one the client registered"}
		}
	}
	fail := func(code, msg string) (*AuthRequest, error) {
		return a, &AuthError{Redirect: true, Code: code, Description: msg}
	}
	if v.Get("response_type") != "code" {
		return fail("unsupported_response_type", "response_type must be code")
	}
	if v.Get("code_challenge_method") != "S256" {
		return fail("invalid_request", "PKCE is required: code_challenge_method must be S256")
	}
	a.CodeChallenge = v.Get("code_challenge")
	if !challengeForm.MatchString(a.CodeChallenge) {
		return fail("invalid_request", "code_challenge must be the base64url SHA-256 of the code verifier (43 characters)")
	}
	a.Resource = Resource(r)
	if res := v.Get("resource"); res != "" && res != a.Resource {
		return fail("invalid_target", "tokens are issued only for the resource "+a.Resource)
	}
	if len(a.State) > 1024 {
		return fail("invalid_request", "state is too long (at most 1024 bytes)")
	}
	return a, nil
}

// ErrorURL is where the browser goes with a refused request.
func ErrorURL(a *AuthRequest, e *AuthError) string {
	return withQuery(a.RedirectURI, url.Values{"error": {e.Code}, "error_description": {e.Description}}, a)
}

// withQuery adds parameters, state and iss to a redirect URI's query.
func withQuery(redirect string, q url.Values, a *AuthRequest) string {
	u, err := url.Parse(redirect)
	if err != nil {
		return redirect
	}
	all := u.Query()
	for k, v := range q {
		all[k] = v
	}
	if a.State != "" {
		all.Set("state", a.State)
	}
	all.Set("iss", a.Origin)
	u.RawQuery = all.Encode()
	return u.String()
}

// codeData is what a code carries to the token endpoint.
type codeData struct {
	ClientID      string             `json:"client_id"`
	ClientName    string             `json:"client_name"`
	RedirectURI   string             `json:"redirect_uri"`
	RedirectGiven bool               `json:"redirect_given,omitempty"`
	CodeChallenge string             `json:"code_challenge"`
	Resource      string             `json:"resource"`
	AccountID     string             `json:"account_id"`
	CreditLimit   *store.CreditLimit `json:"credit_limit,omitempty"`
}

// Approve records the member's consent: a single-use code, valid for
// CodeTTL, bound to the client, redirect URI, PKCE challenge and resource.
// The grant (a key of kind oauth) is created when the code is exchanged,
// under the id chosen here, so a replayed code can revoke what it gave.
// It returns where to send the browser.
func (s *Server) Approve(ctx context.Context, a *AuthRequest, accountID string, limit *store.CreditLimit) (string, error) {
	if err := limit.Validate(); err != nil {
		return "", err
	}
	now := s.now()
	data, err := json.Marshal(codeData{ClientID: a.Client.ID, ClientName: a.Client.Name, RedirectURI: a.RedirectURI,
		RedirectGiven: a.RedirectGiven,
		CodeChallenge: a.CodeChallenge, Resource: a.Resource, AccountID: accountID, CreditLimit: limit})
	if err != nil {
		return "", fmt.Errorf("encoding code: %v", err)
	}
	code := secret(s.KeyPrefix + "_oac_")
	grant := "key_" + strings.ToLower(ulid.MustNew(ulid.Timestamp(now), rand.Reader).String())
	err = s.Store.PutOAuth(ctx, store.OAuthRecord{Hash: digest(code), Kind: recordCode, GrantID: grant, Data: data,
		CreatedAt: now, ExpiresAt: now.Add(CodeTTL)})
	if err != nil {
		return "", fmt.Errorf("storing code: %w", err)
	}
	return withQuery(a.RedirectURI, url.Values{"code": {code}}, a), nil
}

// Deny is where the browser goes when the member refuses.
func Deny(a *AuthRequest) string {
	return ErrorURL(a, &AuthError{Code: "access_denied", Description: "the member refused the request"})
}
