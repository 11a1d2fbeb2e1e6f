package api

import "socialrouter/caddymodule/store"

// Store is the part of the account store the /v1 API uses, composed of
// the store's concerns. It is declared here, where it is used, so that
// the API depends on these and not on the whole store.Store.
type Store interface {
	store.Accounts     // the balance
	store.Keys         // the caller's key and its spend (billing.Store)
	store.Money        // the hold and the settle of each call
	store.Runs         // GET /v1/extractions/{id} and the usage
	store.Idempotency  // Idempotency-Key, sync and async calls alike
	store.Async        // the async runs in flight
	store.Ledger       // GET /v1/transactions
	store.WriteChecker // refusing calls while the store cannot write
	store.Pinger       // the readiness check
}
