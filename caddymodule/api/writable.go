package api

import (
	"time"

	"socialrouter/caddymodule/errkind"
	"socialrouter/caddymodule/metrics"
)

// unwritableRetry is the Retry-After of a call refused because the store
// cannot write: the store checks again every second or so, but space
// rarely comes back sooner than an operator can act.
const unwritableRetry = 30 * time.Second

// writable refuses a call while the store cannot write (a full or failing
// disk): 503 store_unavailable with the reason and a Retry-After, before
// any upstream call, since a run whose settle cannot be stored would be
// upstream spend nobody pays for. The store recovers by itself.
func (a *API) writable() *Error {
	reason := metrics.Unwritable(a.Store.Writable())
	if reason == "" {
		return nil
	}
	e := kindError(errkind.StoreUnavailable,
		"the account store cannot record runs now ("+reason+"), so no upstream was called and nothing was charged; retry later").
		with("reason", reason)
	e.RetryAfter = unwritableRetry
	return e
}
