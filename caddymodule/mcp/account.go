package mcp

import (
	"context"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"socialrouter/caddymodule/registry"
)

// accountTools read the signed-in account: its runs, balance and usage.
func accountTools(_ *registry.Registry, doc *openapiDoc) ([]*tool, error) {
	readOnly := &sdk.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}
	var out []*tool
	for _, t := range []struct {
		name, title, desc string
		call              func(ctx context.Context, b Backend, c Caller, req *sdk.CallToolRequest) *sdk.CallToolResult
	}{{
		"get_run", "Get a run",
		"A run of the signed-in account (extract or search) by its id ext_…, as the extract tool answered it. " +
			"An asynchronous run (a call above the synchronous limit) is running, with its attempts so far, until it is " +
			"completed, failed or cancelled. A run id of another account is answered as not_found.",
		func(ctx context.Context, b Backend, c Caller, req *sdk.CallToolRequest) *sdk.CallToolResult {
			id, e := stringArgs(req, true, "id")
			if e != nil {
				return errorResult(e)
			}
			return answer(b.Run(ctx, c, id[0]))
		},
	}, {
		"get_balance", "Balance",
		"The credits left on the signed-in account (1 credit = 1 USD).",
		func(ctx context.Context, b Backend, c Caller, req *sdk.CallToolRequest) *sdk.CallToolResult {
			if _, e := args(req); e != nil {
				return errorResult(e)
			}
			return answer(b.Balance(ctx, c))
		},
	}, {
		"get_usage", "Usage summary",
		"Requests, records and credits of the signed-in account over the last days (default 30, at most 365), " +
			"by the offer that served each run and by platform.",
		func(ctx context.Context, b Backend, c Caller, req *sdk.CallToolRequest) *sdk.CallToolResult {
			m, e := args(req, "days")
			if e != nil {
				return errorResult(e)
			}
			raw, given := m["days"]
			// days is handed over as REST's query parameter text, so the
			// same check refuses the same values (invalid_days).
			return answer(b.Usage(ctx, c, strings.TrimSpace(string(raw)), given && string(raw) != "null"))
		},
	}} {
		inSchema, outSchema, err := doc.paramsOperation(t.name)
		if err != nil {
			return nil, err
		}
		out = append(out, &tool{
			group: GroupAccount,
			def: &sdk.Tool{
				Name: t.name, Title: t.title, Description: t.desc + " Needs sign-in.",
				InputSchema: inSchema, OutputSchema: outSchema, Annotations: readOnly,
			},
			call: signedIn(t.call),
		})
	}
	return out, nil
}
