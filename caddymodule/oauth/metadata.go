package oauth

import (
	"encoding/json"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// resourceMeta serves RFC 9728 protected resource metadata, at the
// well-known root and at the path of /mcp.
func (s *Server) resourceMeta(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, &oauthex.ProtectedResourceMetadata{
		Resource:               Resource(r),
		AuthorizationServers:   []string{Origin(r)},
		ScopesSupported:        []string{Scope},
		BearerMethodsSupported: []string{"header"},
		ResourceName:           ResourceName,
	})
}

// serverMeta is RFC 8414 metadata. oauthex.AuthServerMeta is not used to
// encode it: it writes "jwks_uri": "" (no omitempty), which is not a URL,
// and clients that validate the document refuse it.
type serverMeta struct {
	Issuer                            string   `json:"issuer"`
	AuthorizationEndpoint             string   `json:"authorization_endpoint"`
	TokenEndpoint                     string   `json:"token_endpoint"`
	RegistrationEndpoint              string   `json:"registration_endpoint"`
	RevocationEndpoint                string   `json:"revocation_endpoint"`
	ResponseTypesSupported            []string `json:"response_types_supported"`
	GrantTypesSupported               []string `json:"grant_types_supported"`
	CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported"`
	TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported"`
	RevocationEndpointAuthMethods     []string `json:"revocation_endpoint_auth_methods_supported"`
	ScopesSupported                   []string `json:"scopes_supported"`
	// The redirect carries iss (RFC 9207), so a client can tell which
	// server answered; clients refuse an iss that is not announced.
	IssParameterSupported bool `json:"authorization_response_iss_parameter_supported"`
}

func (s *Server) serverMeta(w http.ResponseWriter, r *http.Request) {
	o := Origin(r)
	writeJSON(w, http.StatusOK, serverMeta{
		Issuer:                            o,
		AuthorizationEndpoint:             o + PathAuthorize,
		TokenEndpoint:                     o + PathToken,
		RegistrationEndpoint:              o + PathRegister,
		RevocationEndpoint:                o + PathRevoke,
		ResponseTypesSupported:            []string{"code"},
		GrantTypesSupported:               []string{"authorization_code", "refresh_token"},
		CodeChallengeMethodsSupported:     []string{"S256"},
		TokenEndpointAuthMethodsSupported: []string{"none"},
		RevocationEndpointAuthMethods:     []string{"none"},
		ScopesSupported:                   []string{Scope},
		IssParameterSupported:             true,
	})
}

// writeJSON answers a JSON document that no cache may keep (tokens, and
// their errors: RFC 6749 §5.1 asks for both headers, Pragma for HTTP/1.0
// caches).
func writeJSON(w http.ResponseWriter, status int, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
