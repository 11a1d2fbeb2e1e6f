// Package runs is the run model: the record of one extraction or search
// call (Run, its Attempts and its RunError), its JSON form, the Run of
// the API, and its life (lifecycle.go: the states of a run, the allowed
// transitions and who makes them, the typed Status). The router produces
// attempts, the store persists runs and the API answers them; all three
// share these types.
package runs

import (
	"encoding/json"
	"time"

	"socialrouter/caddymodule/credits"
)

// KindSearch is the Kind of a search run (an extraction run has none).
const KindSearch = "search"

// Pagination of a run.
type Pagination struct {
	Total    int `json:"total"`
	Returned int `json:"returned"`
	// NextCursor is set on search runs only: a JSON string, or the literal
	// null when there is no next page (so it renders as null, not absent).
	NextCursor json.RawMessage `json:"next_cursor,omitempty"`
}

// Attempt is one offer attempt of a run, for tracing paid upstream work.
type Attempt struct {
	Offer      string `json:"offer"`
	Outcome    string `json:"outcome"`
	Status     int    `json:"status,omitempty"`
	DurationMS int64  `json:"duration_ms"`
	// Handles are upstream run or snapshot ids of the attempt's calls.
	Handles []string `json:"handles,omitempty"`
	Message string   `json:"message,omitempty"`
	Records int      `json:"records,omitempty"`
}

// RunError is the error of a failed run.
type RunError struct {
	Code    string `json:"code"`
	Type    string `json:"type"`
	Message string `json:"message"`
}

// Run is the stored result of one call; its JSON form is the Run (or Search
// run) of the API.
type Run struct {
	ID       string `json:"id"`
	Kind     string `json:"kind,omitempty"` // KindSearch for search runs
	Status   Status `json:"status"`         // set by Life.Settle (lifecycle.go)
	Platform string `json:"platform,omitempty"`
	Service  string `json:"service,omitempty"`
	// Source and Type are set on search runs.
	Source      string            `json:"source,omitempty"`
	Type        string            `json:"type,omitempty"`
	URL         string            `json:"url"`
	Queries     []string          `json:"queries,omitempty"`
	ServedBy    string            `json:"served_by,omitempty"`
	Provider    string            `json:"provider,omitempty"`
	CreditsUsed credits.Micros    `json:"credits_used"`
	Data        []json.RawMessage `json:"data"`
	Pagination  Pagination        `json:"pagination"`
	CreatedAt   time.Time         `json:"created_at"`
	CompletedAt time.Time         `json:"completed_at"`
	Error       *RunError         `json:"error,omitempty"`
	Attempts    []Attempt         `json:"attempts,omitempty"`
	// CappedBy says what money limited the records asked of the upstream
	// below the call's limit: store.CappedBalance or
	// store.CappedCreditLimit; empty when money did not cap the call.
	CappedBy string `json:"capped_by,omitempty"`
	// RecordsExpired is set once run_retention deleted the run's records:
	// Data is then empty while CreditsUsed, Pagination and the rest, the
	// billing facts, stay as settled. ExpiredAt is when they were deleted.
	RecordsExpired bool       `json:"records_expired,omitempty"`
	ExpiredAt      *time.Time `json:"expired_at,omitempty"`
	// Livemode is false for a run of a test key (test mode: no upstream,
	// no live money), true for every other.
	Livemode bool `json:"livemode"`
	// CachedRecords counts the records of Data served from the freshness
	// cache or from another call's live work (billed at the cached
	// price); CachedSince, when the cache took part, is when the oldest
	// record served was fetched (the answer's Age).
	CachedRecords int       `json:"cached_records,omitempty"`
	CachedSince   time.Time `json:"-"`

	// AccountID and KeyID scope the run; they are stored but never rendered.
	AccountID string `json:"-"`
	KeyID     string `json:"-"`
}
