package api

import (
	"context"
	"fmt"
	"net/http"
	"socialrouter/caddymodule/limits"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/store"
)

// balance serves GET /v1/account/balance.
func (a *API) balance(w http.ResponseWriter, r *http.Request) {
	key, apiErr := a.Authenticate(r)
	if apiErr != nil {
		apiErr.write(w)
		return
	}
	doc, apiErr := a.Balance(r.Context(), key)
	if apiErr != nil {
		apiErr.write(w)
		return
	}
	writeJSON(w, http.StatusOK, doc)
}

// Balance is the document GET /v1/account/balance answers for the key.
func (a *API) Balance(ctx context.Context, key store.Key) (map[string]any, *Error) {
	acct, err := a.Store.GetAccount(ctx, key.AccountID)
	if err != nil {
		a.Logger.Error("reading account", zap.Error(err))
		return nil, storeUnavailable()
	}
	return map[string]any{"balance": acct.Balance, "currency": "USD"}, nil
}

// usageTotals is one value of by_provider / by_platform.
type usageTotals struct {
	Requests int64          `json:"requests"`
	Records  int64          `json:"records"`
	Credits  credits.Micros `json:"credits"`
	// CachedRecords and CachedCredits are the part of Records and Credits
	// served from the freshness cache (docs/cache.md), when there is one.
	CachedRecords int64          `json:"cached_records,omitempty"`
	CachedCredits credits.Micros `json:"cached_credits,omitempty"`
}

// usage serves GET /v1/account/usage?days=N from the daily rollups.
func (a *API) usage(w http.ResponseWriter, r *http.Request) {
	key, apiErr := a.Authenticate(r)
	if apiErr != nil {
		apiErr.write(w)
		return
	}
	q := r.URL.Query()
	doc, apiErr := a.Usage(r.Context(), key, q.Get("days"), q.Has("days"))
	if apiErr != nil {
		apiErr.write(w)
		return
	}
	writeJSON(w, http.StatusOK, doc)
}

// Usage is the document GET /v1/account/usage answers for the key, days
// being the query parameter's text (given false: not sent, 30).
func (a *API) Usage(ctx context.Context, key store.Key, daysText string, given bool) (map[string]any, *Error) {
	days := limits.UsageDaysDefault
	if given {
		n, err := strconv.Atoi(daysText)
		if err != nil || n < 1 || n > limits.UsageDaysMax {
			return nil, newError(http.StatusBadRequest, "invalid_days", typeValidation,
				fmt.Sprintf("days must be an integer from 1 to %d (default %d), got %q", limits.UsageDaysMax, limits.UsageDaysDefault, daysText))
		}
		days = n
	}
	now := time.Now().UTC()
	since := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC).AddDate(0, 0, -(days - 1))
	rows, err := a.Store.Usage(ctx, key.AccountID, since)
	if err != nil {
		a.Logger.Error("reading usage", zap.Error(err))
		return nil, storeUnavailable()
	}
	var total usageTotals
	byProvider := map[string]*usageTotals{}
	byPlatform := map[string]*usageTotals{}
	add := func(m map[string]*usageTotals, k string, row store.UsageRow, cached bool) {
		if k == "" {
			return
		}
		t := m[k]
		if t == nil {
			t = &usageTotals{}
			m[k] = t
		}
		t.add(row, cached)
	}
	for _, row := range rows {
		// Records served from the cache are counted under their offer,
		// and apart as its cached part.
		offer, cached := strings.CutSuffix(row.Offer, registry.CachedSuffix)
		total.add(row, cached)
		add(byProvider, offer, row, cached)
		add(byPlatform, row.Platform, row, cached)
	}
	doc := map[string]any{
		"period":         fmt.Sprintf("%dd", days),
		"total_requests": total.Requests,
		"total_records":  total.Records,
		"total_credits":  total.Credits,
		"by_provider":    byProvider,
		"by_platform":    byPlatform,
	}
	if total.CachedRecords > 0 {
		doc["total_cached_records"] = total.CachedRecords
		doc["total_cached_credits"] = total.CachedCredits
	}
	return doc, nil
}

// add counts a usage row, and as cached when it is the cached part.
func (t *usageTotals) add(row store.UsageRow, cached bool) {
	t.Requests += row.Requests
	t.Records += row.Records
	t.Credits += row.Credits
	if cached {
		t.CachedRecords += row.Records
		t.CachedCredits += row.Credits
	}
}
