package api

import (
	"context"

	"go.uber.org/zap"

	"socialrouter/caddymodule/billing"
	"socialrouter/caddymodule/router"
	"socialrouter/caddymodule/runs"
)

// refusedForMoney is the answer of a call the router refused because no
// offer could be paid one record (402 insufficient_credits or 429
// credit_limit_exceeded, before any upstream call; no run is stored), nil
// otherwise; then it notes on the run what money capped, if anything.
func (a *API) refusedForMoney(ctx context.Context, bill *billing.Call, run *runs.Run, res *router.Result, err error) *Error {
	if res != nil {
		run.CappedBy = bill.CappedBy(res.Offer)
		return nil
	}
	ans, aerr := bill.Refused(ctx, err)
	if aerr != nil {
		a.Logger.Error("answering a refused call", zap.Error(aerr))
		return storeUnavailable()
	}
	if ans == nil {
		return nil
	}
	return failureError(ans)
}
