package mcp

import (
	"context"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"socialrouter/caddymodule/registry"
)

// ToolName is the tool of an extract service: platform and service, dots
// as underscores ("pro_net_profile_info").
func ToolName(s *registry.Service) string {
	return s.Platform + "_" + strings.ReplaceAll(s.Name, ".", "_")
}

// extractTools are one tool per callable extract service, and search. Their
// calls are billed like the REST calls they stand for.
func extractTools(reg *registry.Registry, doc *openapiDoc) ([]*tool, error) {
	spends := &sdk.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(true)}
	var out []*tool
	for _, s := range reg.Services {
		if !s.Callable() {
			continue
		}
		// The OpenAPI operation of the service (see registry/openapi.go).
		in, res, err := doc.runOperation("run_" + ToolName(s))
		if err != nil {
			return nil, err
		}
		if s.Cache != nil {
			withMaxAge(in)
		}
		platform, name := s.Platform, s.Name
		out = append(out, &tool{
			group: GroupExtract,
			def: &sdk.Tool{
				Name:         ToolName(s),
				Title:        summary(s),
				Description:  extractDescription(s),
				InputSchema:  in,
				OutputSchema: res,
				Annotations:  spends,
			},
			call: signedIn(func(ctx context.Context, b Backend, c Caller, req *sdk.CallToolRequest) *sdk.CallToolResult {
				return answer(b.Extract(ctx, c, platform, name, rawArgs(req)))
			}),
		})
	}

	in, res, err := doc.runOperation("search")
	if err != nil {
		return nil, err
	}
	withMaxAge(in) // as POST /v1/search takes Cache-Control: a search type declared cacheable honours it
	slugs := "none is served now"
	if l := reg.SearchSlugs(); len(l) > 0 {
		slugs = strings.Join(l, ", ")
	}
	out = append(out, &tool{
		group: GroupExtract,
		def: &sdk.Tool{
			Name:  "search",
			Title: "Search by provider",
			Description: "Runs a search type selected by a provider slug <source>/<platform>/<type> (valid slugs: " + slugs + "), " +
				"with queries; a next page is asked with the cursor of the previous answer. Billed per returned record, " +
				"exactly as POST /v1/search; the run stays readable with get_run. " + asyncNote + " Needs sign-in.",
			InputSchema:  in,
			OutputSchema: res,
			Annotations:  spends,
		},
		call: signedIn(func(ctx context.Context, b Backend, c Caller, req *sdk.CallToolRequest) *sdk.CallToolResult {
			return answer(b.Search(ctx, c, rawArgs(req)))
		}),
	})
	return out, nil
}

// withMaxAge adds the max_age argument to the input schema of a tool of
// a service whose records may be served from the freshness cache, and of
// search: what REST callers say with Cache-Control.
func withMaxAge(in obj) {
	if props, ok := in["properties"].(obj); ok {
		props["max_age"] = obj{"type": "integer", "minimum": -1,
			"description": "Seconds a record may be old to be served from the freshness cache (billed at the cached price); -1 for live work; absent: the service's default."}
	}
}

// asyncNote tells a caller what a call asking more than a synchronous
// call serves answers.
const asyncNote = "A limit above what one synchronous call serves (250 records; a search's 1000 per query) runs " +
	"asynchronously: the answer is the run with status running at once; follow it with get_run until it is completed."

// summary is the first sentence of the declared description.
func summary(s *registry.Service) string {
	d, _, _ := strings.Cut(strings.TrimSpace(s.Description), "\n")
	if i := strings.Index(d, ". "); i >= 0 {
		d = d[:i]
	}
	if d = strings.TrimSuffix(strings.TrimSpace(d), "."); d == "" {
		return s.Key
	}
	return d
}

// extractDescription is the declared description with what a caller needs
// to call well: the accepted inputs and the offers with their prices.
func extractDescription(s *registry.Service) string {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(s.Description))
	fmt.Fprintf(&b, "\n\nInputs: `%s` (array) or `%s` (one); each must match an accepted format, else invalid_input_format before anything is charged:", s.InputField(), s.SingleInputField())
	for _, a := range s.Accepts {
		fmt.Fprintf(&b, "\n- %s, e.g. `%s`", a.Format, a.Example)
		if a.Note != "" {
			b.WriteString(" (" + a.Note + ")")
		}
	}
	b.WriteString("\n\nOffers in failover order:")
	for _, o := range s.LiveOffers() {
		fmt.Fprintf(&b, "\n- `%s`: %s credits per record, up to %d inputs per call", o.ID, o.Price, o.MaxInputs)
	}
	fmt.Fprintf(&b, "\n\nBilled per returned record, exactly as POST /v1/extract/%s/%s; the run stays readable with get_run. %s Needs sign-in.", s.Platform, s.Name, asyncNote)
	return b.String()
}
