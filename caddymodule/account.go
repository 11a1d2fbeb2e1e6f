package caddymodule

import (
	"net/http"

	"socialrouter/caddymodule/credits"
)

// balance serves GET /v1/account/balance.
func (h *Handler) balance(w http.ResponseWriter, r *http.Request) {
	c, apiErr := h.authenticate(r)
	if apiErr != nil {
		apiErr.write(w)
		return
	}
	bal, apiErr := h.balanceOf(r.Context(), c)
	if apiErr != nil {
		apiErr.write(w)
		return
	}
	writeJSON(w, http.StatusOK, bal)
}

// usageTotals is one value of by_provider / by_platform.
type usageTotals struct {
	Requests int64          `json:"requests"`
	Records  int64          `json:"records"`
	Credits  credits.Micros `json:"credits"`
}

// usage serves GET /v1/account/usage?days=N from the daily rollups.
func (h *Handler) usage(w http.ResponseWriter, r *http.Request) {
	c, apiErr := h.authenticate(r)
	if apiErr != nil {
		apiErr.write(w)
		return
	}
	q := r.URL.Query()
	sum, apiErr := h.usageSummary(r.Context(), c, q.Get("days"), q.Has("days"))
	if apiErr != nil {
		apiErr.write(w)
		return
	}
	writeJSON(w, http.StatusOK, sum)
}
