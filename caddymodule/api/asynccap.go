package api

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"go.uber.org/zap"
)

// DefaultAsyncMaxPerAccount bounds an account's async runs in flight when
// no async_max_per_account is configured.
const DefaultAsyncMaxPerAccount = 100

// asyncRetry is the Retry-After of a submit refused at the cap: async
// runs take seconds to minutes to settle.
const asyncRetry = 10 * time.Second

// asyncRoom refuses, before any hold, a submit of an account that has its
// most async runs in flight already. A submit racing past this check is
// refused by the store's count at the insert (CreateAsyncRun).
func (a *API) asyncRoom(ctx context.Context, accountID string) *Error {
	n, err := a.Store.CountAsyncRuns(ctx, accountID)
	if err != nil {
		a.Logger.Error("counting async runs", zap.Error(err))
		return storeUnavailable()
	}
	if n >= a.asyncMax() {
		return tooManyAsyncRuns(a.asyncMax())
	}
	return nil
}

func (a *API) asyncMax() int {
	if a.AsyncMaxPerAccount > 0 {
		return a.AsyncMaxPerAccount
	}
	return DefaultAsyncMaxPerAccount
}

func tooManyAsyncRuns(max int) *Error {
	e := newError(http.StatusTooManyRequests, "too_many_async_runs", typeRateLimit,
		fmt.Sprintf("this account already has %d async runs in flight; wait for one to finish, or cancel one", max))
	e.RetryAfter = asyncRetry
	return e
}
