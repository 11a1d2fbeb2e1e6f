package api

import (
	"context"
	"fmt"
	"net/http"
	"socialrouter/caddymodule/limits"
	"strconv"
	"time"

	"go.uber.org/zap"

	"socialrouter/caddymodule/credits"
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
