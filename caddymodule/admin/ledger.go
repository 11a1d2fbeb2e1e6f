package admin

import (
	"net/http"
	"strconv"

	"socialrouter/caddymodule/store"
)

// transactions serves GET /sdr/accounts/{id}/transactions?limit=&cursor=:
// an account's ledger, newest first, as the customer reads it.
func (h *Handler) transactions(w http.ResponseWriter, r *http.Request) error {
	limit := 100
	var err error
	if v := r.URL.Query().Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > 1000 {
			return apiErr(http.StatusBadRequest, "limit must be an integer from 1 to 1000")
		}
	}
	after, err := store.ParseLedgerCursor(r.URL.Query().Get("cursor"))
	if err != nil {
		return apiErr(http.StatusBadRequest, "cursor: %v", err)
	}
	id := r.PathValue("id")
	rows, next, err := store.Page(r.Context(), h.Store, id, after, limit)
	if err != nil {
		return storeErr(err, "account "+id)
	}
	if rows == nil {
		rows = []store.LedgerEntry{}
	}
	doc := map[string]any{"data": rows, "has_more": !next.At.IsZero()}
	if c := next.String(); c != "" {
		doc["next_cursor"] = c
	}
	return writeJSON(w, http.StatusOK, doc)
}

// orphans serves GET /sdr/payments/orphans: payments that reached no
// account (unknown account, another currency, a refund of a payment no
// account was credited for), for the operator to settle by hand.
func (h *Handler) orphans(w http.ResponseWriter, r *http.Request) error {
	os, err := h.Store.Orphans(r.Context(), 1000)
	if err != nil {
		return storeErr(err, "orphan payments")
	}
	if os == nil {
		os = []store.OrphanPayment{}
	}
	return writeJSON(w, http.StatusOK, map[string]any{"data": os})
}
