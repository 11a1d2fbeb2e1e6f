package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"socialrouter/caddymodule/registry"
)

// Tool groups, one file each: what a client may want as a subset.
const (
	GroupCatalogue = "catalogue" // list_services, get_service: no sign-in
	GroupExtract   = "extract"   // one tool per extract service, and search
	GroupAccount   = "account"   // get_run, get_balance, get_usage
)

// tool is one generated tool: its definition and what a call does with the
// backend current at call time.
type tool struct {
	group string
	def   *sdk.Tool
	call  func(ctx context.Context, b Backend, req *sdk.CallToolRequest) *sdk.CallToolResult
}

// Tools lists the tool definitions of a registry in name order (for
// documentation and snapshots).
func Tools(reg *registry.Registry) ([]*sdk.Tool, error) {
	ts, err := buildTools(reg)
	if err != nil {
		return nil, err
	}
	out := make([]*sdk.Tool, len(ts))
	for i, t := range ts {
		out[i] = t.def
	}
	return out, nil
}

// buildTools generates every tool of a registry, sorted by name.
func buildTools(reg *registry.Registry) ([]*tool, error) {
	doc, err := parseOpenAPI(reg.OpenAPIJSON())
	if err != nil {
		return nil, err
	}
	var all []*tool
	for _, group := range []func(*registry.Registry, *openapiDoc) ([]*tool, error){catalogueTools, extractTools, accountTools} {
		ts, err := group(reg, doc)
		if err != nil {
			return nil, err
		}
		all = append(all, ts...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].def.Name < all[j].def.Name })
	for i := 1; i < len(all); i++ {
		if all[i].def.Name == all[i-1].def.Name {
			return nil, fmt.Errorf("two tools are named %s", all[i].def.Name)
		}
	}
	return all, nil
}

// result answers a document: as structured content, and as its JSON text
// for clients that read only the content.
func result(b []byte) *sdk.CallToolResult {
	return &sdk.CallToolResult{
		Content:           []sdk.Content{&sdk.TextContent{Text: string(b)}},
		StructuredContent: json.RawMessage(b),
	}
}

// errorResult answers an API error as a tool error: the REST error
// envelope as text and as structured content.
func errorResult(e *Error) *sdk.CallToolResult {
	return &sdk.CallToolResult{
		IsError:           true,
		Content:           []sdk.Content{&sdk.TextContent{Text: string(e.Envelope)}},
		StructuredContent: e.Envelope,
	}
}

// answer turns a backend answer into a tool result.
func answer(b []byte, e *Error) *sdk.CallToolResult {
	if e != nil {
		return errorResult(e)
	}
	return result(b)
}

// authenticate resolves the caller of a call from the Authorization header
// of the HTTP request that carried it.
func authenticate(ctx context.Context, b Backend, req *sdk.CallToolRequest) (Caller, *Error) {
	hdr := ""
	var token *auth.TokenInfo
	if req.Extra != nil {
		if req.Extra.Header != nil {
			hdr = req.Extra.Header.Get("Authorization")
		}
		token = req.Extra.TokenInfo
	}
	return b.Authenticate(ctx, hdr, token)
}

// signedIn wraps a call that needs an authenticated caller.
func signedIn(call func(ctx context.Context, b Backend, c Caller, req *sdk.CallToolRequest) *sdk.CallToolResult) func(context.Context, Backend, *sdk.CallToolRequest) *sdk.CallToolResult {
	return func(ctx context.Context, b Backend, req *sdk.CallToolRequest) *sdk.CallToolResult {
		c, e := authenticate(ctx, b, req)
		if e != nil {
			return errorResult(e)
		}
		return call(ctx, b, c, req)
	}
}

// rawArgs are the call's arguments as sent ("{}" when none).
func rawArgs(req *sdk.CallToolRequest) []byte {
	if req.Params == nil {
		return []byte("{}")
	}
	b := req.Params.Arguments
	if len(bytes.TrimSpace(b)) == 0 || string(bytes.TrimSpace(b)) == "null" {
		return []byte("{}")
	}
	return b
}

// args decodes the arguments of a fixed-shape tool: an object whose keys
// are among allowed, refused with the REST codes (invalid_json,
// unknown_field) otherwise.
func args(req *sdk.CallToolRequest, allowed ...string) (map[string]json.RawMessage, *Error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(rawArgs(req), &m); err != nil || m == nil {
		return nil, NewError("invalid_json", "validation", "the arguments must be a JSON object", nil)
	}
	var unknown []string
	for k := range m {
		if !contains(allowed, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		// allowed_fields is a list even when the tool takes none (never null).
		msg := fmt.Sprintf("unknown argument(s) %s; allowed: %s", strings.Join(unknown, ", "), strings.Join(allowed, ", "))
		if len(allowed) == 0 {
			msg = fmt.Sprintf("unknown argument(s) %s; this tool takes no arguments", strings.Join(unknown, ", "))
		}
		return nil, NewError("unknown_field", "validation", msg,
			map[string]any{"unknown_fields": unknown, "allowed_fields": append([]string{}, allowed...)})
	}
	return m, nil
}

// stringArg reads a string argument; "" when absent and not required.
func stringArg(m map[string]json.RawMessage, name string, required bool) (string, *Error) {
	raw, ok := m[name]
	if !ok || string(raw) == "null" {
		if required {
			return "", NewError("invalid_field", "validation", name+" is required: a string", nil)
		}
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", NewError("invalid_field", "validation", name+" must be a string", nil)
	}
	return s, nil
}

// stringArgs decodes the arguments of a tool whose arguments are all
// strings, names (args), and reads each (stringArg), in the order of names.
func stringArgs(req *sdk.CallToolRequest, required bool, names ...string) ([]string, *Error) {
	m, e := args(req, names...)
	if e != nil {
		return nil, e
	}
	out := make([]string, len(names))
	for i, name := range names {
		if out[i], e = stringArg(m, name, required); e != nil {
			return nil, e
		}
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func ptr[T any](v T) *T { return &v }
