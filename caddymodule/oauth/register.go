package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"go.uber.org/zap"

	"socialrouter/caddymodule/store"
)

// Client is a registered public client, as stored.
type Client struct {
	ID           string    `json:"client_id"`
	Name         string    `json:"client_name"`
	RedirectURIs []string  `json:"redirect_uris"`
	CreatedAt    time.Time `json:"created_at"`
}

// register serves POST /oauth/register (RFC 7591): public clients only
// (token_endpoint_auth_method none), the code grant, redirect URIs over
// https or over http to a loopback host (a native client's local port).
func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRegisterBytes))
	if err != nil {
		registerError(w, "invalid_client_metadata", "the body could not be read (at most 16 KiB)")
		return
	}
	var meta oauthex.ClientRegistrationMetadata
	if err := json.Unmarshal(body, &meta); err != nil {
		registerError(w, "invalid_client_metadata", "the body must be a JSON object of client metadata")
		return
	}
	c, code, msg := validateClient(meta)
	if code != "" {
		registerError(w, code, msg)
		return
	}
	now := s.now()
	c.ID, c.CreatedAt = secret("client_"), now
	if err := s.putClient(r.Context(), c); err != nil {
		s.logger().Error("storing oauth client", zap.Error(err))
		writeJSON(w, http.StatusServiceUnavailable, tokenError{Error: "temporarily_unavailable", Description: "the account store is unavailable"})
		return
	}
	resp := &oauthex.ClientRegistrationResponse{
		ClientRegistrationMetadata: oauthex.ClientRegistrationMetadata{
			RedirectURIs:            c.RedirectURIs,
			TokenEndpointAuthMethod: "none",
			GrantTypes:              []string{"authorization_code", "refresh_token"},
			ResponseTypes:           []string{"code"},
			ClientName:              c.Name,
			Scope:                   Scope,
		},
		ClientID:         c.ID,
		ClientIDIssuedAt: now,
	}
	writeJSON(w, http.StatusCreated, resp)
}

// validateClient checks registration metadata: the error code and message
// of RFC 7591 §3.2.2 when it is refused.
func validateClient(m oauthex.ClientRegistrationMetadata) (c Client, code, msg string) {
	if len(m.RedirectURIs) == 0 || len(m.RedirectURIs) > maxRedirectURIs {
		return c, "invalid_redirect_uri", fmt.Sprintf("redirect_uris must list 1 to %d URIs", maxRedirectURIs)
	}
	uris := make([]string, len(m.RedirectURIs))
	for i, u := range m.RedirectURIs {
		if len(u) > maxRedirectURILen {
			return c, "invalid_redirect_uri", fmt.Sprintf("a redirect URI may have at most %d bytes", maxRedirectURILen)
		}
		n, err := normalizeRedirectURI(u)
		if err != nil {
			return c, "invalid_redirect_uri", fmt.Sprintf("redirect_uri %+q: %v", u, err)
		}
		uris[i] = n
	}
	if a := m.TokenEndpointAuthMethod; a != "" && a != "none" {
		return c, "invalid_client_metadata", "token_endpoint_auth_method must be none: only public clients (PKCE) are registered"
	}
	for _, g := range m.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			return c, "invalid_client_metadata", fmt.Sprintf("grant type %q is not supported (authorization_code, refresh_token)", g)
		}
	}
	for _, t := range m.ResponseTypes {
		if t != "code" {
			return c, "invalid_client_metadata", fmt.Sprintf("response type %q is not supported (code)", t)
		}
	}
	name := strings.TrimSpace(m.ClientName)
	if utf8.RuneCountInString(name) > maxClientNameRune {
		return c, "invalid_client_metadata", fmt.Sprintf("client_name may have at most %d characters", maxClientNameRune)
	}
	// The consent page shows the name to the member: a format character (a
	// bidirectional override such as U+202E, a zero-width joiner) would let
	// "Evil\u202eppa" read as another application's name, so it is dropped,
	// and a control character (a newline) becomes a space. Dropping rather
	// than refusing keeps such a client able to register (RFC 7591 lets the
	// server replace a value; the answer shows the name kept).
	name = strings.TrimSpace(strings.Map(func(r rune) rune {
		switch {
		case unicode.Is(unicode.Cf, r):
			return -1
		case unicode.IsControl(r):
			return ' '
		}
		return r
	}, name))
	if name == "" {
		name = "Unnamed MCP client"
	}
	return Client{Name: name, RedirectURIs: uris}, "", ""
}

// checkRedirectURI accepts an absolute https URI, or http to a loopback
// host; never a fragment (RFC 6749 §3.1.2).
func checkRedirectURI(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" {
		return errors.New("not an absolute URI")
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return errors.New("a redirect URI may not have a fragment")
	}
	if u.User != nil {
		return errors.New("a redirect URI may not carry credentials")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if isLoopback(u.Hostname()) {
			return nil
		}
		return errors.New("http is allowed only to a loopback host (localhost, 127.0.0.1, [::1]); use https")
	}
	return errors.New("the scheme must be https (or http to a loopback host)")
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func registerError(w http.ResponseWriter, code, msg string) {
	writeJSON(w, http.StatusBadRequest, &oauthex.ClientRegistrationError{ErrorCode: code, ErrorDescription: msg})
}

func (s *Server) putClient(ctx context.Context, c Client) error {
	data, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("encoding client: %v", err)
	}
	return s.Store.PutOAuth(ctx, store.OAuthRecord{Hash: digest(c.ID), Kind: recordClient, Data: data,
		CreatedAt: c.CreatedAt, ExpiresAt: c.CreatedAt.Add(ClientUnusedTTL)})
}

// client returns a registered client; store.ErrNotFound if unknown.
func (s *Server) client(ctx context.Context, id string) (Client, error) {
	if id == "" {
		return Client{}, store.ErrNotFound
	}
	rec, err := s.Store.GetOAuth(ctx, digest(id), s.now())
	if err != nil {
		return Client{}, err
	}
	var c Client
	if rec.Kind != recordClient {
		return Client{}, store.ErrNotFound
	}
	if err := json.Unmarshal(rec.Data, &c); err != nil || c.ID != id {
		return Client{}, fmt.Errorf("decoding client %s: %v", id, err)
	}
	return c, nil
}
