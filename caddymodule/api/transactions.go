package api

import (
	"net/http"
	"strconv"
	"time"

	"go.uber.org/zap"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/store"
)

// Transaction is one ledger row as GET /v1/account/transactions and the
// dashboard's CSV show it.
type Transaction struct {
	ID         string          `json:"id"`
	Kind       string          `json:"kind"`
	Amount     credits.Micros  `json:"amount"`
	Balance    *credits.Micros `json:"balance,omitempty"`
	Reason     string          `json:"reason,omitempty"`
	Reference  string          `json:"reference,omitempty"`
	ReceiptURL string          `json:"receipt_url,omitempty"`
	CreatedAt  time.Time       `json:"created_at"`
}

// TransactionOf is the API form of a ledger row.
func TransactionOf(e store.LedgerEntry) Transaction {
	t := Transaction{ID: e.ID, Kind: e.Kind, Amount: e.Amount, Reason: e.Reason, Reference: e.Reference, ReceiptURL: e.ReceiptURL, CreatedAt: e.CreatedAt}
	if e.Kind != store.LedgerRunCharges {
		b := e.Balance
		t.Balance = &b
	}
	return t
}

// Ledger page sizes.
const (
	transactionsDefault = 25
	transactionsMax     = 100
)

// transactions serves GET /v1/account/transactions: the ledger, paged.
func (a *API) transactions(w http.ResponseWriter, r *http.Request) {
	key, apiErr := a.Authenticate(r)
	if apiErr != nil {
		apiErr.write(w)
		return
	}
	q := r.URL.Query()
	limit := transactionsDefault
	if q.Has("limit") {
		n, err := strconv.Atoi(q.Get("limit"))
		if err != nil || n < 1 || n > transactionsMax {
			newError(http.StatusBadRequest, "invalid_limit", typeValidation, "limit must be an integer from 1 to 100 (default 25)").write(w)
			return
		}
		limit = n
	}
	after, err := store.ParseLedgerCursor(q.Get("cursor"))
	if err != nil {
		newError(http.StatusBadRequest, "invalid_cursor", typeValidation, "cursor: "+err.Error()).write(w)
		return
	}
	rows, next, err := store.Page(r.Context(), a.Store, key.AccountID, after, limit)
	if err != nil {
		a.Logger.Error("reading the ledger", zap.Error(err))
		storeUnavailable().write(w)
		return
	}
	data := make([]Transaction, len(rows))
	for i, e := range rows {
		data[i] = TransactionOf(e)
	}
	doc := map[string]any{"data": data, "has_more": !next.At.IsZero()}
	if c := next.String(); c != "" {
		doc["next_cursor"] = c
	}
	writeJSON(w, http.StatusOK, doc)
}
