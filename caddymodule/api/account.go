package api

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"go.uber.org/zap"

	"socialrouter/caddymodule/credits"
)

// balance serves GET /v1/account/balance.
func (a *API) balance(w http.ResponseWriter, r *http.Request) {
	key, apiErr := a.Authenticate(r)
	if apiErr != nil {
		apiErr.write(w)
		return
	}
	acct, err := a.Store.GetAccount(r.Context(), key.AccountID)
	if err != nil {
		a.Logger.Error("reading account", zap.Error(err))
		storeUnavailable().write(w)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"balance": acct.Balance, "currency": "USD"})
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
	days := 30
	if q := r.URL.Query(); q.Has("days") {
		n, err := strconv.Atoi(q.Get("days"))
		if err != nil || n < 1 || n > 365 {
			newError(http.StatusBadRequest, "invalid_days", typeValidation,
				fmt.Sprintf("days must be an integer from 1 to 365 (default 30), got %q", q.Get("days"))).write(w)
			return
		}
		days = n
	}
	now := time.Now().UTC()
	since := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC).AddDate(0, 0, -(days - 1))
	rows, err := a.Store.Usage(r.Context(), key.AccountID, since)
	if err != nil {
		a.Logger.Error("reading usage", zap.Error(err))
		storeUnavailable().write(w)
		return
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
	writeJSON(w, http.StatusOK, map[string]any{
		"period":         fmt.Sprintf("%dd", days),
		"total_requests": total.Requests,
		"total_records":  total.Records,
		"total_credits":  total.Credits,
		"by_provider":    byProvider,
		"by_platform":    byPlatform,
	})
}
