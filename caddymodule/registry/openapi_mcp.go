package registry

// mcpPath describes /mcp: not a REST resource but the Model Context
// Protocol's streamable HTTP endpoint (JSON-RPC 2.0), listed so the
// document names every endpoint of the site. Its tools are generated from
// this same document (package caddymodule/mcp). The 401 and 400 answers
// are those of package caddymodule/oauth's Guard, which stands in front of
// the SDK.
func mcpPath() obj {
	// Discovery tools need no sign-in; the others need an API key or an
	// OAuth access token.
	security := []any{obj{}, obj{"bearer": []any{}}, obj{"oauth2": []any{"mcp"}}}
	session := obj{
		"name": "Mcp-Session-Id", "in": "header", "required": true,
		"schema": obj{"type": "string"}, "description": "Session id the server answered the client's initialize with.",
	}
	text := func(desc string) obj {
		return obj{"description": desc, "content": obj{"text/plain": obj{"schema": obj{"type": "string"}}}}
	}
	challenge := func(desc string) obj {
		return obj{
			"description": desc,
			"headers": obj{"WWW-Authenticate": obj{
				"description": "`Bearer resource_metadata=\"ORIGIN/.well-known/oauth-protected-resource/mcp\"`, with " +
					"`, error=\"invalid_token\"` (or `invalid_request` on a 400) when a token was sent: the start of the " +
					"client's OAuth sign-in (RFC 9728).",
				"required": true,
				"schema":   obj{"type": "string"},
			}},
			"content": jsonContent(ref("Error")),
		}
	}
	tokenRefused := "`invalid_token` (type `authentication`): the bearer token is neither a live API key (`sdr_live_…`, " +
		"unknown or revoked) nor a live OAuth access token of this resource (unknown, expired, or of a revoked grant): " +
		"refresh it, create a new key or sign in again. " +
		"`missing_token`: an `Authorization` scheme other than `Bearer` (no `error` in the challenge, RFC 6750 §3.1)."
	unavailable := obj{
		"description": "`store_unavailable` (type `unavailable`): an access token could not be checked because the account " +
			"store did not answer; nothing was called. Retry shortly.",
		"content": jsonContent(ref("Error")),
	}
	originRefused := obj{
		"description": "`origin_not_allowed` (type `authentication`, JSON): the request's `Origin` header names neither " +
			"this site nor an origin allowed by the `mcp_origins` option; a client that is not a browser sends no `Origin`. " +
			"Or (plain text, from the MCP SDK): a request that reached a loopback address with a non-loopback Host " +
			"(DNS rebinding protection).",
		"content": obj{
			"text/plain":       obj{"schema": obj{"type": "string"}},
			"application/json": obj{"schema": ref("Error")},
		},
	}
	badBearer := "`invalid_request` (type `authentication`, JSON, with the challenge): `Authorization: Bearer` names no token."
	return obj{
		"post": obj{
			"operationId": "mcp_post",
			"summary":     "Send an MCP message",
			"description": "Model Context Protocol over streamable HTTP (JSON-RPC 2.0). Tools: one per extract service " +
				"(`<platform>_<service>`, the arguments are the body of its extract operation, the answer its Run), plus " +
				"`search`, `list_services`, `get_service`, `get_run`, `get_balance`, `get_usage`, billed and refused exactly " +
				"as the REST operations are.\n\n" +
				"Sign-in: an API key (`Authorization: Bearer sdr_live_…`) or an OAuth 2.1 access token (`sdr_oat_…`, " +
				"scheme `oauth2`). `initialize`, `tools/list`, `list_services` and `get_service` need neither. An " +
				"anonymous `tools/call` of any other tool, a bearer token that is neither a live API key nor a live access " +
				"token of this resource (unknown, expired or revoked; checked on every request, `initialize` included), " +
				"or an `Authorization` scheme other than `Bearer`, " +
				"is answered HTTP 401 with `WWW-Authenticate: Bearer resource_metadata=\"ORIGIN/.well-known/oauth-protected-resource/mcp\"` " +
				"(plus `error=\"invalid_token\"` when a token was sent) and the `Error` envelope (`missing_token` or " +
				"`invalid_token`): the client signs in from there (see the `oauth` operations). `Bearer` with no token is " +
				"HTTP 400 `invalid_request`. A browser request whose `Origin` is neither this site nor an origin the operator " +
				"allowed (`mcp_origins`) is HTTP 403 `origin_not_allowed`. " +
				"Errors of tools are tool results with `isError` and the `Error` envelope.",
			"tags":     []any{"mcp"},
			"security": security,
			"requestBody": obj{"required": true, "content": jsonContent(obj{
				"type": "object", "description": "A JSON-RPC 2.0 request, notification or response of the Model Context Protocol.",
			})},
			"responses": obj{
				"200": obj{
					"description": "The JSON-RPC answer, as JSON or as a stream of server-sent events.",
					"content": obj{
						"application/json":  obj{"schema": obj{"type": "object"}},
						"text/event-stream": obj{"schema": obj{"type": "string"}},
					},
				},
				"202": obj{"description": "A notification or response was accepted."},
				"400": obj{
					"description": "Malformed MCP message or headers (plain text, from the MCP SDK); or, as JSON: " + badBearer +
						" `invalid_body` (type `validation`): the body could not be read.",
					"content": obj{
						"text/plain":       obj{"schema": obj{"type": "string"}},
						"application/json": obj{"schema": ref("Error")},
					},
				},
				"401": challenge("Sign-in needed: `missing_token` (type `authentication`): an anonymous `tools/call` of a tool " +
					"that needs sign-in. " + tokenRefused),
				"403": originRefused,
				"404": text("Unknown or expired session (`Mcp-Session-Id`): start a new one."),
				"429": respRef("TooManyRequests"),
				"503": unavailable,
			},
		},
		"get": obj{
			"operationId": "mcp_listen",
			"summary":     "Listen for server messages of a session",
			"description": "Server-sent events of a session, such as `notifications/tools/list_changed` after a reload changed the tools. " +
				"A bearer token sent is held to the same checks as on POST (401 `invalid_token` / `missing_token`, 400 `invalid_request`).",
			"tags":       []any{"mcp"},
			"security":   security,
			"parameters": []any{session},
			"responses": obj{
				"200": obj{"description": "The event stream.", "content": obj{"text/event-stream": obj{"schema": obj{"type": "string"}}}},
				"400": obj{
					"description": "No `Mcp-Session-Id`, or `Accept` lacks `text/event-stream` (plain text); or " + badBearer,
					"content": obj{
						"text/plain":       obj{"schema": obj{"type": "string"}},
						"application/json": obj{"schema": ref("Error")},
					},
				},
				"401": challenge(tokenRefused),
				"403": originRefused,
				"404": text("Unknown or expired session."),
				"429": respRef("TooManyRequests"),
				"503": unavailable,
			},
		},
		"delete": obj{
			"operationId": "mcp_end",
			"summary":     "End a session",
			"description": "A bearer token sent is held to the same checks as on POST (401 `invalid_token` / `missing_token`, 400 `invalid_request`).",
			"tags":        []any{"mcp"},
			"security":    security,
			"parameters":  []any{session},
			"responses": obj{
				"204": obj{"description": "The session is closed."},
				"400": obj{"description": badBearer, "content": jsonContent(ref("Error"))},
				"401": challenge(tokenRefused),
				"403": originRefused,
				"404": text("Unknown or expired session."),
				"429": respRef("TooManyRequests"),
				"503": unavailable,
			},
		},
	}
}
