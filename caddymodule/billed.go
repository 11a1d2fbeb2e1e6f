package caddymodule

import (
	"net/http"

	"go.uber.org/zap"

	"socialrouter/caddymodule/billing"
	"socialrouter/caddymodule/router"
	"socialrouter/caddymodule/store"
)

// refusedForMoney answers a call the router refused because no offer could
// be paid one record (402 insufficient_credits or 429
// credit_limit_exceeded, before any upstream call; no run is stored) and
// reports true; otherwise it notes on the run what money capped, if
// anything, and reports false.
func (h *Handler) refusedForMoney(w http.ResponseWriter, r *http.Request, bill *billing.Call, run *store.Run, res *router.Result, err error) bool {
	if res != nil {
		run.CappedBy = bill.CappedBy(res.Offer)
		return false
	}
	a, aerr := bill.Refused(r.Context(), err)
	if aerr != nil {
		h.logger.Error("answering a refused call", zap.Error(aerr))
		newError(http.StatusServiceUnavailable, "store_unavailable", "internal", "the account store is unavailable; retry shortly").write(w)
		return true
	}
	if a == nil {
		return false
	}
	(&apiError{status: a.Status, code: a.Code, typ: a.Type, message: a.Message, extra: a.Extra, retryAfter: a.RetryAfter}).write(w)
	return true
}
