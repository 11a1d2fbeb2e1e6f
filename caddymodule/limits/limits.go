// Package limits holds every limit and default of the public API that more
// than one place states: request validation (api), the OpenAPI document
// (registry) and the Caddyfile defaults (the app) read them from here, so
// what is enforced and what is published cannot drift apart.
package limits

const (
	// LimitDefault is the records a call returns when it sends no limit.
	LimitDefault = 100
	// ExtractLimitMax is the largest limit of a synchronous extract call
	// (SPEC: sized so one offer attempt fits in its 120-second deadline).
	ExtractLimitMax = 250
	// AsyncLimitMax is the largest limit of an asynchronous call (Prefer:
	// respond-async), whose records are paged at
	// GET /v1/extractions/{id}/records rather than answered at once.
	AsyncLimitMax = 5000
	// SearchLimitMax caps the per-query limit of POST /v1/search.
	SearchLimitMax = 1000
	// BodyMax is the largest request body, in bytes (413 request_too_large).
	BodyMax = 1 << 20
	// UsageDaysDefault and UsageDaysMax bound GET /v1/account/usage?days.
	UsageDaysDefault = 30
	UsageDaysMax     = 365
	// ConcurrentRunsDefault is the runs one account may have in flight
	// (429 too_many_concurrent_runs); the Caddyfile's max_concurrent_runs.
	ConcurrentRunsDefault = 16
)
