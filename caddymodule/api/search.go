package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"socialrouter/caddymodule/limits"
	"strings"

	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/router"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
)

// searchFields are the top-level keys of a search body.
var searchFields = []string{"queries", "provider", "limit", "fallback", "options", "cursor"}

// searchCursor is the content of an opaque next_cursor: the page it leads
// to is the same search with Offset records per query already seen.
type searchCursor struct {
	Provider string   `json:"p"`
	Queries  []string `json:"q"`
	Offset   int      `json:"o"`
}

func encodeCursor(c searchCursor) string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (searchCursor, bool) {
	var c searchCursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || json.Unmarshal(b, &c) != nil || c.Offset < 0 || c.Provider == "" {
		return c, false
	}
	return c, true
}

// search serves POST /v1/search.
func (a *API) search(w http.ResponseWriter, r *http.Request) {
	key, body, ok := a.authenticatedBody(w, r)
	if !ok {
		return
	}
	async := a.prefersAsync(r.Header)
	c, apiErr := a.prepareSearch(body, limitMax(async))
	if c != nil {
		c.cc = parseCacheControl(r.Header)
	}
	if apiErr != nil {
		apiErr.write(w)
		return
	}
	a.serveCall(w, r, key, c, body, async)
}

// Search is one search call for an authenticated key with a decoded JSON
// object body: validate, take an in-flight slot, route (with fallback
// unless refused) with the call's money held before each attempt, settle, and return the settled run with its next cursor. A
// failed run is settled and returned as the Error, as in Extract.
func (a *API) Search(ctx context.Context, key store.Key, m map[string]json.RawMessage) (*runs.Run, *Error) {
	return a.SearchWith(ctx, key, m, CacheControl{})
}

// prepareSearch validates a search body; maxLimit above the sync limit
// (an async search) raises the per-query cap to it.
func (a *API) prepareSearch(m map[string]json.RawMessage, maxLimit int) (*prepared, *Error) {
	reg := a.Registry
	limitCap := limits.SearchLimitMax // the silent cap of a synchronous search, per query
	if maxLimit > limits.ExtractLimitMax {
		limitCap = max(limitCap, maxLimit)
	}
	if apiErr := checkFields(m, searchFields); apiErr != nil {
		return nil, apiErr
	}
	var queries []string
	if raw, ok := m["queries"]; ok {
		queries, _ = jsonStrings(raw)
	}
	if len(queries) == 0 {
		return nil, newError(http.StatusBadRequest, "missing_queries", typeValidation,
			`queries must be a non-empty array of strings, e.g. {"queries": ["coffee in Lisbon"], "provider": "source_a/maps/place.search"}`)
	}
	slugs := reg.SearchSlugs()
	var slug string
	if raw, ok := m["provider"]; ok && string(raw) != "null" {
		var isString bool
		if slug, isString = jsonString(raw); !isString {
			return nil, newError(http.StatusBadRequest, "invalid_field", typeValidation,
				"provider must be a string: a slug <source>/<platform>/<type>; valid slugs: "+strings.Join(slugs, ", ")).
				with("valid_providers", slugs)
		}
	}
	if slug == "" {
		return nil, newError(http.StatusBadRequest, "missing_provider", typeValidation,
			"provider is required: a slug <source>/<platform>/<type>; valid slugs: "+strings.Join(slugs, ", ")).
			with("valid_providers", slugs)
	}
	svc, offer, apiErr := resolveSlug(reg, slug, slugs)
	if apiErr != nil {
		return nil, apiErr
	}

	limit := limits.LimitDefault
	if raw, ok := m["limit"]; ok {
		var f float64
		if err := json.Unmarshal(raw, &f); err != nil || f != float64(int(f)) || f < 1 {
			return nil, newError(http.StatusBadRequest, "invalid_limit", typeValidation,
				fmt.Sprintf("limit must be a positive integer (records per query; default %d, capped at %d)", limits.LimitDefault, limitCap))
		}
		limit = min(int(f), limitCap)
	}
	fallback := true
	if raw, ok := m["fallback"]; ok {
		if err := json.Unmarshal(raw, &fallback); err != nil {
			return nil, newError(http.StatusBadRequest, "invalid_field", typeValidation, "fallback must be true or false")
		}
	}
	offset := 0
	if raw, ok := m["cursor"]; ok && string(raw) != "null" {
		var s string
		_ = json.Unmarshal(raw, &s)
		cur, ok := decodeCursor(s)
		if !ok || cur.Provider != slug || strings.Join(cur.Queries, "\x00") != strings.Join(queries, "\x00") {
			return nil, newError(http.StatusBadRequest, "invalid_cursor", typeValidation,
				"cursor does not belong to this search: send it with the same provider and queries as the search that returned it")
		}
		offset = cur.Offset
	}

	inputs, apiErr := matchInputs(svc, queries)
	if apiErr != nil {
		return nil, apiErr
	}
	if len(inputs) > offer.MaxInputs && !fallback {
		return nil, newError(http.StatusBadRequest, "too_many_inputs", typeValidation,
			fmt.Sprintf("%d queries sent; %s takes at most %d per call", len(inputs), slug, offer.MaxInputs))
	}

	// Options are per-offer input overrides: unknown keys (and values of the
	// wrong type) are dropped, not refused.
	opts := map[string]any{}
	if raw, ok := m["options"]; ok && string(raw) != "null" {
		var in map[string]json.RawMessage
		if json.Unmarshal(raw, &in) != nil {
			return nil, newError(http.StatusBadRequest, "invalid_option", typeValidation, "options must be a JSON object")
		}
		for k, v := range in {
			if vals, problems := svc.ValidateOptions(map[string]json.RawMessage{k: v}); len(problems) == 0 {
				opts[k] = vals[k]
			}
		}
	}
	for _, o := range svc.Options {
		if _, set := opts[o.Name]; !set && o.HasDefault {
			opts[o.Name] = o.Default
		}
	}

	chain := []*registry.Offer{offer}
	if fallback {
		for _, o := range svc.LiveOffers() {
			if o != offer {
				chain = append(chain, o)
			}
		}
	}
	req := router.Request{
		Service: svc, Inputs: inputs, Options: opts, Limit: limit,
		LimitScope: registry.ScopePerInput, Skip: offset,
	}
	if fallback {
		req.Offers = chain
	} else {
		req.Pin, req.Unpin = offer, `send "fallback": true`
	}
	return &prepared{
		svc: svc, req: req, kind: KindSearch, platform: svc.Platform,
		fill: func(run *runs.Run) {
			run.Kind, run.Source, run.Type, run.Queries = runs.KindSearch, svc.Platform, svc.Name, queries
		},
		finish: func(run *runs.Run, res *router.Result, err error) {
			run.Pagination.NextCursor = json.RawMessage("null")
			if err == nil && res.More {
				b, _ := json.Marshal(encodeCursor(searchCursor{Provider: slug, Queries: queries, Offset: offset + limit}))
				run.Pagination.NextCursor = b
			}
		},
	}, nil
}

// resolveSlug maps <source>/<platform>/<type>[:<tag>] to a search type and
// the offer of that source (the tag, when given, names the offer).
func resolveSlug(reg *registry.Registry, slug string, slugs []string) (*registry.Service, *registry.Offer, *Error) {
	base, tag, tagged := strings.Cut(slug, ":")
	parts := strings.Split(base, "/")
	unknown := newError(http.StatusBadRequest, "unknown_provider", typeValidation,
		fmt.Sprintf("unknown provider %q; valid slugs: %s", slug, strings.Join(slugs, ", "))).with("valid_providers", slugs)
	if len(parts) != 3 {
		return nil, nil, unknown
	}
	src, platform, typ := parts[0], parts[1], parts[2]
	svc, ok := reg.Service(platform, typ)
	if !ok {
		return nil, nil, unknown
	}
	if !svc.Search {
		return nil, nil, newError(http.StatusBadRequest, "wrong_endpoint", typeValidation,
			fmt.Sprintf("%s/%s is an extraction type, not a search type: call POST /v1/extract/%s/%s instead", platform, typ, platform, typ)).
			with("endpoint", "/v1/extract/"+platform+"/"+typ)
	}
	var names []string
	for _, o := range svc.LiveOffers() {
		if o.Source.ID != src {
			continue
		}
		if !tagged || o.Name == tag {
			return svc, o, nil
		}
		names = append(names, base+":"+o.Name)
	}
	if len(names) > 0 {
		return nil, nil, newError(http.StatusBadRequest, "unknown_provider", typeValidation,
			fmt.Sprintf("unknown provider %q: the tag after \":\" names an offer of %s, and it has none named %q; use %s, or leave the tag out",
				slug, src, tag, strings.Join(names, " or "))).with("valid_providers", slugs)
	}
	return nil, nil, unknown
}
