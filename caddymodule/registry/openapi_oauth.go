package registry

// The OAuth 2.1 endpoints of /mcp's sign-in (package caddymodule/oauth,
// served by the sdr_dashboard module). They are listed with the rest of
// the site so a client or an operator finds them in one document. None
// of them answers X-Run-Id, which operations() gives /v1 run answers only.

const oauthServed = " Served when `sdr_dashboard` is on the same site as `/mcp` (as in the default Caddyfile). " +
	"ORIGIN is the scheme, host and port the request came to."

// oauthScheme is components.securitySchemes.oauth2.
func oauthScheme() obj {
	return obj{
		"type": "oauth2",
		"description": "OAuth 2.1 sign-in of an MCP client (no key): authorization code grant of a public client " +
			"(dynamic registration at `/oauth/register`, `token_endpoint_auth_method` `none`), PKCE `S256` required, " +
			"tokens bound to the resource `ORIGIN/mcp` (send `resource=ORIGIN/mcp`, RFC 8707). Access tokens " +
			"(`sdr_oat_…`) live 1 hour; refresh tokens (`sdr_ort_…`) rotate at each use. Used by `/mcp` only.",
		"flows": obj{"authorizationCode": obj{
			"authorizationUrl": "/oauth/authorize",
			"tokenUrl":         "/oauth/token",
			"refreshUrl":       "/oauth/token",
			"scopes":           obj{"mcp": "The MCP tools of the member's account, billed to it like its API keys."},
		}},
	}
}

// oauthDoc adds the OAuth endpoints, their schemas and the oauth2 scheme.
func oauthDoc(doc obj) {
	comps := doc["components"].(obj)
	comps["securitySchemes"].(obj)["oauth2"] = oauthScheme()
	schemas := comps["schemas"].(obj)
	oauthSchemas(schemas)
	paths := doc["paths"].(obj)
	noStore := obj{"Cache-Control": obj{"description": "`no-store`.", "schema": obj{"type": "string"}}}
	jsonAnswer := func(desc, schema string) obj {
		return obj{"description": desc, "headers": noStore, "content": jsonContent(ref(schema))}
	}
	html := func(desc string) obj {
		return obj{"description": desc, "content": obj{"text/html": obj{"schema": obj{"type": "string"}}}}
	}
	redirect := func(desc string) obj {
		return obj{"description": desc, "headers": obj{"Location": obj{"required": true, "schema": obj{"type": "string", "format": "uri-reference"}}}}
	}
	op := func(id, sum, desc string, responses obj) obj {
		return obj{"operationId": id, "summary": sum, "description": desc + oauthServed,
			"tags": []any{"oauth"}, "security": []any{}, "responses": responses}
	}
	resourceMeta := func(id, desc string) obj {
		return obj{"get": op(id, "Protected resource metadata", desc+
			" RFC 9728 metadata of the resource `ORIGIN/mcp`: where the client finds the authorization server.",
			obj{"200": jsonAnswer("The resource metadata.", "OAuthProtectedResource")})}
	}
	paths["/.well-known/oauth-protected-resource/mcp"] = resourceMeta("oauth_resource_metadata",
		"The document named by `/mcp`'s 401 challenge (`resource_metadata`).")
	paths["/.well-known/oauth-protected-resource"] = resourceMeta("oauth_resource_metadata_root",
		"The same document at the well-known root.")
	paths["/.well-known/oauth-authorization-server"] = obj{"get": op("oauth_server_metadata",
		"Authorization server metadata",
		"RFC 8414 metadata of the issuer `ORIGIN`: the code grant with PKCE `S256` only, public clients, refresh "+
			"tokens, `iss` in the redirect (RFC 9207).",
		obj{"200": jsonAnswer("The authorization server metadata.", "OAuthServerMetadata")})}

	paths["/oauth/register"] = obj{"post": withBody(op("oauth_register", "Register a client",
		"RFC 7591 dynamic registration of a public client (JSON, at most 16 KiB). `redirect_uris`: 1 to 10 URIs of at "+
			"most 2000 bytes each, over `https`, or `http` to a loopback host (`localhost`, `127.0.0.1`, `[::1]`), "+
			"without fragment or credentials. A registration no tokens were issued to lapses after a day; one in use "+
			"a year after its latest tokens.",
		obj{
			"201": jsonAnswer("The client is registered.", "OAuthClient"),
			"400": jsonAnswer("`invalid_redirect_uri` (no, too many, too long or refused redirect URIs) or "+
				"`invalid_client_metadata` (not a JSON object or larger than 16 KiB, `token_endpoint_auth_method` other "+
				"than `none`, a grant type other than `authorization_code`/`refresh_token`, a response type other than "+
				"`code`, a `client_name` over 100 characters).", "OAuthRegistrationError"),
			"503": jsonAnswer("`temporarily_unavailable`: the account store is unavailable.", "OAuthError"),
		}), jsonContent(ref("OAuthClientMetadata")))}

	authParams := []any{
		oauthParam("response_type", "Must be `code` (else `unsupported_response_type` on the redirect).", true),
		oauthParam("client_id", "The registered client; unknown: a 400 page.", true),
		oauthParam("redirect_uri", "One of the client's `redirect_uris`; may be left out when it registered exactly one. Not registered: a 400 page.", false),
		oauthParam("code_challenge", "BASE64URL(SHA-256(code_verifier)), 43 characters (else `invalid_request`).", true),
		oauthParam("code_challenge_method", "Must be `S256` (else `invalid_request`).", true),
		oauthParam("state", "Returned on the redirect; at most 1024 bytes (else `invalid_request`).", false),
		oauthParam("resource", "`ORIGIN/mcp` when given (else `invalid_target`).", false),
		oauthParam("scope", "`mcp`, the one scope (any value is granted as `mcp`).", false),
	}
	badPage := html("Unknown `client_id`, or a `redirect_uri` the client did not register: a page for the member, never a redirect.")
	paths["/oauth/authorize"] = obj{
		"get": withParams(op("oauth_authorize", "Start sign-in",
			"The authorization endpoint, opened in the member's browser: the dashboard's sign-in first (303 to "+
				"`/dashboard/signin?next=…`), then a consent page naming the client and the host it sends the browser "+
				"back to, with an optional daily credit limit for this client. Not CORS-enabled, never framed.",
			obj{
				"200": html("The consent page (the member is signed in)."),
				"303": redirect("To the dashboard's sign-in (with `next` back here) when the member is not signed in; or a refused " +
					"request, to the client's `redirect_uri` with `error` (`invalid_request`, `unsupported_response_type`, " +
					"`invalid_target`), `error_description`, `state` and `iss`."),
				"400": badPage,
				"503": html("The account store is unavailable."),
			}), authParams),
		"post": withBody(op("oauth_consent", "Allow or deny",
			"The consent page's form (the request's parameters as hidden inputs, the session's CSRF token, "+
				"`decision`, optional `credit_limit` per day). Allow sends the browser back with a single-use `code` "+
				"(valid 60 s), `state` and `iss`.",
			obj{
				"303": redirect("To the client's `redirect_uri`: with `code`, `state` and `iss` (allowed), or with `error` as on refusal " +
					"(`access_denied` when denied, `invalid_request`, `unsupported_response_type`, `invalid_target`)."),
				"400": html("Unknown client or unregistered `redirect_uri`, no `decision`, an unreadable form, or a bad " +
					"`credit_limit` (the consent page again, with the error)."),
				"401": html("The member's session ended."),
				"403": html("The form's CSRF token is not this session's."),
				"503": html("The account store is unavailable."),
			}), obj{"application/x-www-form-urlencoded": obj{"schema": consentForm()}}),
	}

	tokenErrors := "RFC 6749 §5.2: `invalid_request` (not an `application/x-www-form-urlencoded` form of at most " +
		"16 KiB, a parameter sent twice, a missing `grant_type`, `code`, `code_verifier`, `refresh_token` or " +
		"`client_id`), `invalid_grant` (unknown, expired or already used code or refresh token — a replay revokes " +
		"the grant —, another client's, a `redirect_uri` or `code_verifier` that does not match, a revoked grant), " +
		"`invalid_target` (a `resource` other than `ORIGIN/mcp`), `unsupported_grant_type`."
	paths["/oauth/token"] = obj{"post": withBody(op("oauth_token", "Get tokens",
		"The token endpoint of a public client (no client secret): `authorization_code` (with `code_verifier`, and "+
			"the authorize request's `redirect_uri` when it named one) or `refresh_token` (rotated: the old one is "+
			"spent). Each parameter at most once. CORS for any origin.",
		obj{
			"200": jsonAnswer("The tokens.", "OAuthToken"),
			"400": jsonAnswer(tokenErrors, "OAuthError"),
			"401": jsonAnswer("`invalid_client`: unknown or lapsed `client_id`; register again.", "OAuthError"),
			"503": jsonAnswer("`temporarily_unavailable`: the account store is unavailable.", "OAuthError"),
		}), obj{"application/x-www-form-urlencoded": obj{"schema": ref("OAuthTokenRequest")}})}

	paths["/oauth/revoke"] = obj{"post": withBody(op("oauth_revoke", "Revoke a grant",
		"RFC 7009: an access or refresh token revokes its whole grant (its next `/mcp` call is 401 `invalid_token`). "+
			"An unknown token, or one of another client than `client_id`, changes nothing and is still answered 200.",
		obj{
			"200": obj{"description": "Done (empty body).", "headers": noStore},
			"400": jsonAnswer("`invalid_request`: not a form, a parameter sent twice, or no `token`.", "OAuthError"),
			"503": jsonAnswer("`temporarily_unavailable`: the account store is unavailable.", "OAuthError"),
		}), obj{"application/x-www-form-urlencoded": obj{"schema": object("", []any{"token"}, obj{
		"token":           str("An access or refresh token."),
		"token_type_hint": str("Ignored: both kinds are looked up."),
		"client_id":       str("When given, only a token of this client is revoked."),
	})}})}

	doc["tags"] = append(doc["tags"].([]any), obj{"name": "oauth",
		"description": "OAuth 2.1 sign-in of MCP clients: metadata, registration, authorization, tokens, revocation." + oauthServed})
}

// consentForm is the consent page's form; the authorize request's
// parameters ride along as hidden inputs.
func consentForm() obj {
	return obj{
		"type":     "object",
		"required": []any{"decision", "csrf"},
		"properties": obj{
			"decision":     obj{"type": "string", "enum": []any{"allow", "deny"}},
			"credit_limit": str("Optional credits per day this client may spend."),
			"csrf":         str("The session's CSRF token."),
		},
		"additionalProperties": obj{"type": "string"},
	}
}

func withBody(op obj, content obj) obj {
	op["requestBody"] = obj{"required": true, "content": content}
	return op
}

func withParams(op obj, params []any) obj {
	op["parameters"] = params
	return op
}

func oauthParam(name, desc string, required bool) obj {
	return obj{"name": name, "in": "query", "required": required, "description": desc, "schema": obj{"type": "string"}}
}

// oauthSchemas are the documents of the OAuth endpoints, with the field
// names package oauth (and the MCP SDK's oauthex types) encode.
func oauthSchemas(s obj) {
	strs := func(desc string) obj { return stringArray(desc) }
	s["OAuthProtectedResource"] = obj{
		"type": "object", "description": "RFC 9728 protected resource metadata.",
		"required": []any{"resource", "authorization_servers", "scopes_supported", "bearer_methods_supported", "resource_name"},
		"properties": obj{
			"resource":                 str("`ORIGIN/mcp`."),
			"authorization_servers":    strs("`[ORIGIN]`: the gateway is its own authorization server."),
			"scopes_supported":         strs("`[\"mcp\"]`."),
			"bearer_methods_supported": strs("`[\"header\"]`."),
			"resource_name":            str("`Social Data Router`."),
		},
	}
	s["OAuthServerMetadata"] = obj{
		"type": "object", "description": "RFC 8414 authorization server metadata.",
		"required": []any{"issuer", "authorization_endpoint", "token_endpoint", "registration_endpoint",
			"revocation_endpoint", "response_types_supported", "grant_types_supported",
			"code_challenge_methods_supported", "token_endpoint_auth_methods_supported",
			"revocation_endpoint_auth_methods_supported", "scopes_supported",
			"authorization_response_iss_parameter_supported"},
		"properties": obj{
			"issuer":                                         str("`ORIGIN`."),
			"authorization_endpoint":                         str("`ORIGIN/oauth/authorize`."),
			"token_endpoint":                                 str("`ORIGIN/oauth/token`."),
			"registration_endpoint":                          str("`ORIGIN/oauth/register`."),
			"revocation_endpoint":                            str("`ORIGIN/oauth/revoke`."),
			"response_types_supported":                       strs("`[\"code\"]`."),
			"grant_types_supported":                          strs("`[\"authorization_code\", \"refresh_token\"]`."),
			"code_challenge_methods_supported":               strs("`[\"S256\"]`."),
			"token_endpoint_auth_methods_supported":          strs("`[\"none\"]`: public clients only."),
			"revocation_endpoint_auth_methods_supported":     strs("`[\"none\"]`."),
			"scopes_supported":                               strs("`[\"mcp\"]`."),
			"authorization_response_iss_parameter_supported": obj{"type": "boolean", "description": "`true` (RFC 9207)."},
		},
	}
	s["OAuthClientMetadata"] = obj{
		"type": "object", "description": "RFC 7591 client metadata. Other fields of RFC 7591 are accepted and ignored.",
		"required": []any{"redirect_uris"},
		"properties": obj{
			"redirect_uris": obj{"type": "array", "minItems": 1, "maxItems": 10,
				"items":       obj{"type": "string", "maxLength": 2000},
				"description": "`https` URIs, or `http` to a loopback host; no fragment, no credentials."},
			"token_endpoint_auth_method": obj{"type": "string", "enum": []any{"none"}},
			"grant_types":                obj{"type": "array", "items": obj{"type": "string", "enum": []any{"authorization_code", "refresh_token"}}},
			"response_types":             obj{"type": "array", "items": obj{"type": "string", "enum": []any{"code"}}},
			"client_name":                str("At most 100 characters, shown on the consent page (default `Unnamed MCP client`)."),
			"scope":                      str("Ignored: the one scope is `mcp`."),
		},
	}
	s["OAuthClient"] = obj{
		"type": "object", "description": "RFC 7591 registration answer.",
		"required": []any{"client_id", "client_id_issued_at", "redirect_uris", "token_endpoint_auth_method",
			"grant_types", "response_types", "client_name", "scope"},
		"properties": obj{
			"client_id":                  obj{"type": "string", "pattern": "^client_"},
			"client_id_issued_at":        integer("Unix seconds."),
			"redirect_uris":              strs("As registered."),
			"token_endpoint_auth_method": obj{"type": "string", "enum": []any{"none"}},
			"grant_types":                strs("`[\"authorization_code\", \"refresh_token\"]`."),
			"response_types":             strs("`[\"code\"]`."),
			"client_name":                str("As registered (trimmed), or `Unnamed MCP client`."),
			"scope":                      obj{"type": "string", "enum": []any{"mcp"}},
		},
	}
	s["OAuthRegistrationError"] = obj{
		"type": "object", "description": "RFC 7591 §3.2.2 registration error.",
		"required": []any{"error"},
		"properties": obj{
			"error":             obj{"type": "string", "enum": []any{"invalid_redirect_uri", "invalid_client_metadata"}},
			"error_description": str("What is wrong, in words."),
		},
	}
	s["OAuthTokenRequest"] = obj{
		"type": "object", "description": "RFC 6749 token request of a public client.",
		"required": []any{"grant_type", "client_id"},
		"properties": obj{
			"grant_type":    obj{"type": "string", "enum": []any{"authorization_code", "refresh_token"}},
			"client_id":     str("The registered client."),
			"code":          str("`authorization_code`: the code of the redirect (single-use, 60 s)."),
			"code_verifier": obj{"type": "string", "pattern": "^[A-Za-z0-9._~-]{43,128}$", "description": "`authorization_code`: the PKCE verifier."},
			"redirect_uri":  str("`authorization_code`: the authorize request's, character for character, when it named one."),
			"refresh_token": str("`refresh_token`: the latest refresh token."),
			"resource":      str("`ORIGIN/mcp` when given (RFC 8707)."),
		},
	}
	s["OAuthToken"] = obj{
		"type": "object", "description": "RFC 6749 §5.1 token answer.",
		"required": []any{"access_token", "token_type", "expires_in", "refresh_token", "scope"},
		"properties": obj{
			"access_token":  obj{"type": "string", "pattern": "^sdr_oat_", "description": "Bearer token of `/mcp`, 1 hour."},
			"token_type":    obj{"type": "string", "enum": []any{"Bearer"}},
			"expires_in":    integer("Seconds the access token lives: 3600."),
			"refresh_token": obj{"type": "string", "pattern": "^sdr_ort_", "description": "Single use: rotates at each refresh; lapses after 30 days unused."},
			"scope":         obj{"type": "string", "enum": []any{"mcp"}},
		},
	}
	s["OAuthError"] = obj{
		"type": "object", "description": "RFC 6749 §5.2 error.",
		"required": []any{"error"},
		"properties": obj{
			"error": obj{"type": "string", "enum": []any{"invalid_request", "invalid_client", "invalid_grant",
				"invalid_target", "unsupported_grant_type", "temporarily_unavailable"}},
			"error_description": str("What is wrong, in words."),
		},
	}
}
