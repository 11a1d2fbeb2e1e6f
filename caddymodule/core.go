package caddymodule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/router"
	"socialrouter/caddymodule/store"
)

// The cores of the billed and account routes: everything after the caller
// is authenticated and the body read, answering a value or the error REST
// answers. The REST handlers (extract.go, search.go, account.go) and the
// MCP tools (mcp.go) both call them, so a tool call is validated, routed,
// settled and billed exactly as POST /v1/extract/… is.

// extractRun validates an extract body against svc, pre-checks billing,
// routes the call to the offers and settles the run.
func (h *Handler) extractRun(ctx context.Context, c *caller, svc *registry.Service, m map[string]json.RawMessage) (*store.Run, *apiError) {
	body, apiErr := parseExtract(svc, m)
	if apiErr != nil {
		return nil, apiErr
	}
	offers := svc.LiveOffers()
	if body.Pin != nil {
		offers = []*registry.Offer{body.Pin}
	}
	release, apiErr := h.precheck(ctx, c, offers)
	if apiErr != nil {
		return nil, apiErr
	}
	defer release()

	now := time.Now().UTC()
	run := &store.Run{
		ID:        newRunID(now),
		Platform:  svc.Platform,
		Service:   svc.Name,
		URL:       body.Inputs[0],
		CreatedAt: now,
		AccountID: c.key.AccountID,
		KeyID:     c.key.ID,
		Data:      []json.RawMessage{},
	}
	if svc.InputKind == registry.KindQuery {
		run.Queries = body.Raw
		run.URL = body.Raw[0]
	}
	res, err := h.app.router.Run(ctx, router.Request{
		Service: svc, Inputs: body.Inputs, Options: body.Options, Limit: body.Limit, Pin: body.Pin, Now: now,
	})
	return h.settle(ctx, run, res, err, svc.Platform)
}

// searchRun validates a search body, pre-checks billing, routes the search
// and settles the run.
func (h *Handler) searchRun(ctx context.Context, c *caller, m map[string]json.RawMessage) (*store.Run, *apiError) {
	reg := h.app.reg
	if apiErr := checkFields(m, searchFields); apiErr != nil {
		return nil, apiErr
	}
	var queries []string
	if raw, ok := m["queries"]; !ok || json.Unmarshal(raw, &queries) != nil || len(queries) == 0 {
		return nil, newError(http.StatusBadRequest, "missing_queries", typeValidation,
			`queries must be a non-empty array of strings, e.g. {"queries": ["coffee in Lisbon"], "provider": "source_a/maps/place.search"}`)
	}
	slugs := reg.SearchSlugs()
	var slug string
	if raw, ok := m["provider"]; !ok || json.Unmarshal(raw, &slug) != nil || slug == "" {
		return nil, newError(http.StatusBadRequest, "missing_provider", typeValidation,
			"provider is required: a slug <source>/<platform>/<type>; valid slugs: "+strings.Join(slugs, ", ")).
			with("valid_providers", slugs)
	}
	svc, offer, apiErr := resolveSlug(reg, slug, slugs)
	if apiErr != nil {
		return nil, apiErr
	}

	limit := 100
	if raw, ok := m["limit"]; ok {
		var f float64
		if err := json.Unmarshal(raw, &f); err != nil || f != float64(int(f)) || f < 1 {
			return nil, newError(http.StatusBadRequest, "invalid_limit", typeValidation,
				"limit must be a positive integer (records per query; default 100, capped at 1000)")
		}
		limit = min(int(f), 1000)
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
	release, apiErr := h.precheck(ctx, c, chain)
	if apiErr != nil {
		return nil, apiErr
	}
	defer release()

	now := time.Now().UTC()
	run := &store.Run{
		ID: newRunID(now), Kind: "search", Source: svc.Platform, Type: svc.Name, URL: "",
		Queries: queries, CreatedAt: now, AccountID: c.key.AccountID, KeyID: c.key.ID, Data: []json.RawMessage{},
	}
	req := router.Request{
		Service: svc, Inputs: inputs, Options: opts, Limit: limit, Now: now,
		LimitScope: registry.ScopePerInput, Skip: offset,
	}
	if fallback {
		req.Offers = chain
	} else {
		req.Pin = offer
	}
	res, err := h.app.router.Run(ctx, req)
	run.Pagination.NextCursor = json.RawMessage("null")
	if err == nil && res.More {
		b, _ := json.Marshal(encodeCursor(searchCursor{Provider: slug, Queries: queries, Offset: offset + limit}))
		run.Pagination.NextCursor = b
	}
	return h.settle(ctx, run, res, err, svc.Platform)
}

// settle records a routed run (success or failure) and charges it: the
// completed run, or the error of a failed one (carrying its run id).
func (h *Handler) settle(ctx context.Context, run *store.Run, res *router.Result, err error, platform string) (*store.Run, *apiError) {
	run.CompletedAt = time.Now().UTC()
	// Settle even if the client went away: the upstream work is done and the
	// run must not be lost.
	ctx = context.WithoutCancel(ctx)
	if err != nil {
		var f *router.Failure
		if !errors.As(err, &f) {
			f = &router.Failure{Status: http.StatusBadGateway, Code: "provider_error", Type: typeProvider, Message: err.Error()}
		}
		run.Status = "failed"
		run.Error = &store.RunError{Code: f.Code, Type: f.Type, Message: f.Message}
		run.Attempts = f.Attempts
		offer := ""
		if f.Offer != nil {
			offer = f.Offer.ID
			run.ServedBy = f.Offer.ID
			if run.Kind == "search" {
				run.Provider = f.Offer.Source.ID
			}
		}
		if _, serr := h.app.store.Settle(ctx, store.Settlement{Run: run, Offer: offer, Platform: platform, Now: run.CompletedAt}); serr != nil {
			h.logger.Error("storing failed run", zap.String("run_id", run.ID), zap.Error(serr))
		}
		e := newError(f.Status, f.Code, f.Type, f.Message).with("run_id", run.ID).with("attempts", nonNilAttempts(f.Attempts))
		e.retryAfter = f.RetryAfter
		return nil, e
	}
	run.Status = "completed"
	run.ServedBy = res.Offer.ID
	if run.Kind == "search" {
		run.Provider = res.Offer.Source.ID
		run.ServedBy = ""
	}
	run.Attempts = res.Attempts
	run.Data = res.Records
	if run.Data == nil {
		run.Data = []json.RawMessage{}
	}
	run.Pagination.Total = res.Total
	sr, serr := h.app.store.Settle(ctx, store.Settlement{
		Run: run, Price: res.Offer.Price, Offer: res.Offer.ID, Platform: platform, Now: run.CompletedAt,
	})
	if serr != nil {
		h.logger.Error("settling run", zap.String("run_id", run.ID), zap.Error(serr))
		return nil, newError(http.StatusServiceUnavailable, "store_unavailable", "internal",
			"the run could not be recorded, so nothing was charged; retry shortly").with("run_id", run.ID)
	}
	h.logger.Debug("run settled", zap.String("run_id", run.ID), zap.String("offer", res.Offer.ID),
		zap.Int("records", sr.Records), zap.Stringer("charged", sr.Charged))
	return run, nil
}

// runJSON appends the stored document of a run of the caller's account to
// dst; a run of another account behaves as nonexistent.
func (h *Handler) runJSON(ctx context.Context, c *caller, id string, dst []byte) ([]byte, *apiError) {
	notFound := newError(http.StatusNotFound, "not_found", typeNotFound, fmt.Sprintf("no run %q in this account", id))
	if !strings.HasPrefix(id, "ext_") {
		return dst, notFound
	}
	b, err := h.app.store.GetRunJSON(ctx, dst, c.key.AccountID, id)
	if errors.Is(err, store.ErrNotFound) {
		return b, notFound
	}
	if err != nil {
		h.logger.Error("reading run", zap.Error(err))
		return b, newError(http.StatusServiceUnavailable, "store_unavailable", "internal", "the account store is unavailable; retry shortly")
	}
	return b, nil
}

// balanceOf is the balance document of the caller's account.
func (h *Handler) balanceOf(ctx context.Context, c *caller) (map[string]any, *apiError) {
	acct, err := h.app.store.GetAccount(ctx, c.key.AccountID)
	if err != nil {
		h.logger.Error("reading account", zap.Error(err))
		return nil, newError(http.StatusServiceUnavailable, "store_unavailable", "internal", "the account store is unavailable; retry shortly")
	}
	return map[string]any{"balance": acct.Balance, "currency": "USD"}, nil
}

// usageSummary is the usage document of the caller's account over the
// look-back param (days, 1 to 365; 30 when not given) from the daily
// rollups.
func (h *Handler) usageSummary(ctx context.Context, c *caller, param string, given bool) (map[string]any, *apiError) {
	days := 30
	if given {
		n, err := strconv.Atoi(param)
		if err != nil || n < 1 || n > 365 {
			return nil, newError(http.StatusBadRequest, "invalid_days", typeValidation,
				fmt.Sprintf("days must be an integer from 1 to 365 (default 30), got %q", param))
		}
		days = n
	}
	now := time.Now().UTC()
	since := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC).AddDate(0, 0, -(days - 1))
	rows, err := h.app.store.Usage(ctx, c.key.AccountID, since)
	if err != nil {
		h.logger.Error("reading usage", zap.Error(err))
		return nil, newError(http.StatusServiceUnavailable, "store_unavailable", "internal", "the account store is unavailable; retry shortly")
	}
	var total usageTotals
	byProvider := map[string]*usageTotals{}
	byPlatform := map[string]*usageTotals{}
	add := func(m map[string]*usageTotals, k string, req, rec int64, cr credits.Micros) {
		if k == "" {
			return
		}
		t := m[k]
		if t == nil {
			t = &usageTotals{}
			m[k] = t
		}
		t.Requests += req
		t.Records += rec
		t.Credits += cr
	}
	for _, row := range rows {
		total.Requests += row.Requests
		total.Records += row.Records
		total.Credits += row.Credits
		add(byProvider, row.Offer, row.Requests, row.Records, row.Credits)
		add(byPlatform, row.Platform, row.Requests, row.Records, row.Credits)
	}
	return map[string]any{
		"period":         fmt.Sprintf("%dd", days),
		"total_requests": total.Requests,
		"total_records":  total.Records,
		"total_credits":  total.Credits,
		"by_provider":    byProvider,
		"by_platform":    byPlatform,
	}, nil
}
