package admin

import (
	"net/http"
	"strconv"

	"socialrouter/caddymodule/store"
)

// ledger is the store's ledger, found by assertion (every store the app
// opens has one).
func (h *Handler) ledger() (store.Ledger, error) {
	l, ok := h.Store.(store.Ledger)
	if !ok {
		return nil, apiErr(http.StatusNotImplemented, "this store keeps no ledger")
	}
	return l, nil
}

// transactions serves GET /sdr/accounts/{id}/transactions?limit=&cursor=:
// an account's ledger, newest first, as the customer reads it.
func (h *Handler) transactions(w http.ResponseWriter, r *http.Request) error {
	l, err := h.ledger()
	if err != nil {
		return err
	}
	limit := 100
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
	rows, next, err := store.Page(r.Context(), l, id, after, limit)
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
	l, err := h.ledger()
	if err != nil {
		return err
	}
	os, err := l.Orphans(r.Context(), 1000)
	if err != nil {
		return storeErr(err, "orphan payments")
	}
	if os == nil {
		os = []store.OrphanPayment{}
	}
	return writeJSON(w, http.StatusOK, map[string]any{"data": os})
}
