package registry

// mcpPath describes /mcp: not a REST resource but the Model Context
// Protocol's streamable HTTP endpoint (JSON-RPC 2.0), listed so the
// document names every endpoint of the site. Its tools are generated from
// this same document (package caddymodule/mcp).
func mcpPath() obj {
	// Discovery tools need no key; the rest answer a tool error without one.
	security := []any{obj{}, obj{"bearer": []any{}}}
	session := obj{
		"name": "Mcp-Session-Id", "in": "header", "required": true,
		"schema": obj{"type": "string"}, "description": "Session id the server answered the client's initialize with.",
	}
	text := func(desc string) obj {
		return obj{"description": desc, "content": obj{"text/plain": obj{"schema": obj{"type": "string"}}}}
	}
	return obj{
		"post": obj{
			"operationId": "mcp_post",
			"summary":     "Send an MCP message",
			"description": "Model Context Protocol over streamable HTTP (JSON-RPC 2.0). Tools: one per extract service " +
				"(`<platform>_<service>`, the arguments are the body of its extract operation, the answer its Run), plus " +
				"`search`, `list_services`, `get_service`, `get_run`, `get_balance`, `get_usage`, billed and refused exactly " +
				"as the REST operations are. `list_services` and `get_service` need no key; the other tools answer a tool " +
				"error `missing_api_key` without `Authorization: Bearer sdr_live_…`. Errors of tools are tool results with " +
				"`isError` and the `Error` envelope.",
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
				"400": text("Malformed MCP message or headers."),
				"403": text("A request that reached a loopback address with a non-loopback Host (DNS rebinding protection)."),
				"404": text("Unknown or expired session (`Mcp-Session-Id`): start a new one."),
				"429": respRef("TooManyRequests"),
			},
		},
		"get": obj{
			"operationId": "mcp_listen",
			"summary":     "Listen for server messages of a session",
			"description": "Server-sent events of a session, such as `notifications/tools/list_changed` after a reload changed the tools.",
			"tags":        []any{"mcp"},
			"security":    security,
			"parameters":  []any{session},
			"responses": obj{
				"200": obj{"description": "The event stream.", "content": obj{"text/event-stream": obj{"schema": obj{"type": "string"}}}},
				"400": text("No `Mcp-Session-Id`, or `Accept` lacks `text/event-stream`."),
				"404": text("Unknown or expired session."),
				"429": respRef("TooManyRequests"),
			},
		},
		"delete": obj{
			"operationId": "mcp_end",
			"summary":     "End a session",
			"tags":        []any{"mcp"},
			"security":    security,
			"parameters":  []any{session},
			"responses": obj{
				"204": obj{"description": "The session is closed."},
				"404": text("Unknown or expired session."),
				"429": respRef("TooManyRequests"),
			},
		},
	}
}
