package mcp

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"socialrouter/caddymodule/registry"
)

// catalogueTools are the discovery tools, callable without sign-in as
// GET /v1/services is.
func catalogueTools(_ *registry.Registry, doc *openapiDoc) ([]*tool, error) {
	_, listOut, err := doc.paramsOperation("list_services")
	if err != nil {
		return nil, err
	}
	// The platform filter is the parameter of GET /v1/services/{platform},
	// optional here.
	listIn, _, err := doc.paramsOperation("list_platform_services")
	if err != nil {
		return nil, err
	}
	delete(listIn, "required")
	getIn, getOut, err := doc.paramsOperation("get_service")
	if err != nil {
		return nil, err
	}
	readOnly := &sdk.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}
	return []*tool{{
		group: GroupCatalogue,
		def: &sdk.Tool{
			Name:  "list_services",
			Title: "List the services",
			Description: "Every callable extract service: its accepted inputs with examples, typed options and " +
				"offers with their price per record, in failover order. Give platform to list one platform's. " +
				"No sign-in needed.",
			InputSchema:  listIn,
			OutputSchema: listOut,
			Annotations:  readOnly,
		},
		call: func(_ context.Context, b Backend, req *sdk.CallToolRequest) *sdk.CallToolResult {
			platform, e := stringArgs(req, false, "platform")
			if e != nil {
				return errorResult(e)
			}
			return answer(b.Catalogue(platform[0], ""))
		},
	}, {
		group: GroupCatalogue,
		def: &sdk.Tool{
			Name:  "get_service",
			Title: "Describe one service",
			Description: "The catalogue entry of one service: accepted inputs, options and offers with prices. " +
				"An unknown service is answered with the closest name (did_you_mean). No sign-in needed.",
			InputSchema:  getIn,
			OutputSchema: getOut,
			Annotations:  readOnly,
		},
		call: func(_ context.Context, b Backend, req *sdk.CallToolRequest) *sdk.CallToolResult {
			v, e := stringArgs(req, true, "platform", "service")
			if e != nil {
				return errorResult(e)
			}
			return answer(b.Catalogue(v[0], v[1]))
		},
	}}, nil
}

// Anonymous reports whether a tool answers without sign-in: the catalogue
// tools. Every other tool needs an authenticated caller.
func Anonymous(tool string) bool { return tool == "list_services" || tool == "get_service" }
