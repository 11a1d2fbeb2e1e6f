package caddymodule

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"socialrouter/caddymodule/registry"
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
func (h *Handler) search(w http.ResponseWriter, r *http.Request) {
	c, m, ok := h.authenticatedBody(w, r)
	if !ok {
		return
	}
	run, apiErr := h.searchRun(r.Context(), c, m)
	if apiErr != nil {
		apiErr.write(w)
		return
	}
	writeRun(w, run)
}

// resolveSlug maps <source>/<platform>/<type>[:<tag>] to a search type and
// the offer of that source (the tag, when given, names the offer).
func resolveSlug(reg *registry.Registry, slug string, slugs []string) (*registry.Service, *registry.Offer, *apiError) {
	base, tag, _ := strings.Cut(slug, ":")
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
	for _, o := range svc.LiveOffers() {
		if o.Source.ID == src && (tag == "" || o.Name == tag) {
			return svc, o, nil
		}
	}
	return nil, nil, unknown
}
