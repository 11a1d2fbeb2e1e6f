// Package store defines the account plane's persistence: accounts with
// balances in integer micro-credits, API keys (only a SHA-256 digest of the
// secret), runs, the atomic Settle, daily usage rollups and per-key spend per
// credit-limit period. Implementations live in sub-packages (badger,
// postgres) and all pass the shared suite in storetest.
package store

import (
	"context"
	"errors"
	"time"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/runs"
)

// Errors every implementation returns (wrapped or bare; test with errors.Is).
var (
	ErrNotFound = errors.New("not found")
	ErrExists   = errors.New("already exists")
)

// Account owns a balance, keys and runs.
type Account struct {
	ID        string         `json:"id"`
	Balance   credits.Micros `json:"balance"`
	CreatedAt time.Time      `json:"created_at"`
}

// Credit-limit periods: UTC calendar hour, day, ISO week (Monday) and month.
const (
	PeriodHour  = "hour"
	PeriodDay   = "day"
	PeriodWeek  = "week"
	PeriodMonth = "month"
)

// CreditLimit caps what a key may spend in one UTC calendar period.
type CreditLimit struct {
	Period  string         `json:"period"`
	Credits credits.Micros `json:"credits"`
}

// Validate is the one check of a credit limit, applied by the admin API,
// the stores and the importer alike: one of the four periods and credits
// above 0 (a limit of 0 would refuse every call; revoke the key instead).
// A nil limit (no limit) is valid.
func (l *CreditLimit) Validate() error {
	if l == nil {
		return nil
	}
	if !ValidPeriod(l.Period) {
		return errors.New("credit_limit.period must be hour, day, week or month")
	}
	if l.Credits <= 0 {
		return errors.New("credit_limit.credits must be above 0")
	}
	return nil
}

// Key is an API key. The secret itself is never stored: only its SHA-256
// digest, and a display form (prefix + last four characters).
type Key struct {
	ID          string       `json:"id"`
	AccountID   string       `json:"account_id"`
	Name        string       `json:"name,omitempty"`
	Kind        string       `json:"kind,omitempty"` // "" an API key, KindOAuth a grant
	Hash        [32]byte     `json:"-"`
	Display     string       `json:"display"`
	CreatedAt   time.Time    `json:"created_at"`
	RevokedAt   *time.Time   `json:"revoked_at,omitempty"`
	CreditLimit *CreditLimit `json:"credit_limit,omitempty"`
}

// Settlement is the input of Settle.
type Settlement struct {
	// Run is the run to store. Settle truncates Run.Data to what the balance
	// pays for, and sets Run.CreditsUsed and Run.Pagination.Returned.
	Run *runs.Run
	// Price is the price of one record of the serving offer (0 for a failed
	// run, which is stored with no charge).
	Price credits.Micros
	// Offer is the offer that served (usage by_provider key); Platform the
	// usage by_platform key.
	Offer    string
	Platform string
	// Now is the settle time: the UTC day of the usage rollup and the
	// key-spend period buckets.
	Now time.Time
	// Lines, set when more than one offer served the run (the inputs of a
	// failed batch failed over to the next offer), are the offer and price
	// of each record of Run.Data, in order: each record is charged at its
	// own offer's price and counted in its offer's usage row. Price and
	// Offer are then those of the last offer that served (served_by),
	// whose row counts the request. Nil: every record is Offer's at Price.
	Lines []Line
	// Answer, when set, receives the run's API JSON once Settle has
	// committed: the document it stored, its scope members cut off (what
	// GET /v1/extractions/{id} answers), so a call answers the bytes it
	// stored instead of encoding the run again. It is a runs.DocBufs
	// buffer the caller owns (and puts back once written); left nil when
	// the settle fails or the stored document has another shape.
	Answer *[]byte
	// Cache is the freshness cache's entries of the live work that served
	// the run, stored with it: badger writes them in the settle's own
	// commit, so a live call makes one durable write instead of two (each
	// commit's syncs cost the most of a call's CPU on a small machine);
	// PostgreSQL stores them once the settle has committed. CacheMaxBytes
	// bounds the cache as Cache.CachePut's maxBytes. A failure to store
	// them never fails the settle: it is reported in SettleResult.CacheErr.
	Cache         []CacheEntry
	CacheMaxBytes int64
}

// Line is the offer and price of one record of a run that more than one
// offer served.
type Line struct {
	Offer string
	Price credits.Micros
	// Cached marks a record served from the freshness cache: the run's
	// cached_records counts the kept ones (a short balance keeps fewer).
	Cached bool
}

// SettleResult reports what Settle charged.
type SettleResult struct {
	Records int            // records kept (and charged)
	Charged credits.Micros // Records × Price
	Balance credits.Micros // balance after the debit
	// CacheErr is why Settlement.Cache was not stored (the settle itself
	// committed).
	CacheErr error
}

// UsageRow is one daily rollup of (account, UTC day, offer, platform).
type UsageRow struct {
	Day      time.Time      `json:"day"` // midnight UTC
	Offer    string         `json:"offer"`
	Platform string         `json:"platform"`
	Requests int64          `json:"requests"`
	Records  int64          `json:"records"`
	Credits  credits.Micros `json:"credits"`
}

// Store is the account plane's persistence: the composition of its
// concerns, each an interface of its own below or in the concern's file.
// Only the app's wiring (caddymodule/) and the offline tools hold a whole
// Store; every other package declares the few concerns it uses. Every
// method is safe for concurrent use. Every run query is scoped to an
// account.
type Store interface {
	Accounts     // accounts and their balances
	Keys         // API keys, their credit limits and spend
	Money        // holds and the atomic Settle
	Runs         // stored runs and the usage rollups
	Idempotency  // idempotency keys, of sync and async calls (async.go)
	Async        // asynchronous runs in flight (async.go)
	Webhooks     // webhook endpoints and their delivery queue (webhooks.go)
	Throttle     // the dashboard's attempt counters (throttle.go)
	Members      // the dashboard's members, sessions and activity (members.go)
	OAuth        // the OAuth server's clients, codes and tokens (oauth.go)
	Ledger       // money in: ledger rows, provider events, billing settings (ledger.go)
	Cache        // the freshness cache (cache.go)
	Expirer      // run retention (retention.go)
	Exporter     // the account listing of `caddy sdr export` (export.go)
	WriteChecker // whether writes can succeed now (writable.go)
	Pinger       // whether the store answers (ping.go)
	Capable      // the optional capabilities, listed once (capabilities.go)

	// Close releases the store.
	Close() error
}

// Accounts are the accounts and their balances.
type Accounts interface {
	// CreateAccount creates an account; ErrExists if the id is taken.
	CreateAccount(ctx context.Context, id string, balance credits.Micros, now time.Time) (Account, error)
	// GetAccount returns an account; ErrNotFound if absent.
	GetAccount(ctx context.Context, id string) (Account, error)
	// AddCredits adds amount (which may be negative, never below zero
	// balance: ErrInsufficient) and returns the account; the ledger gets an
	// adjustment row with no reason (Move records one with a reason).
	AddCredits(ctx context.Context, id string, amount credits.Micros) (Account, error)
}

// Keys are the accounts' API keys, their credit limits and their spend.
type Keys interface {
	// CreateKey stores a new key (ErrNotFound if its account is absent,
	// ErrExists if the id or the hash is taken).
	CreateKey(ctx context.Context, k Key) error
	// KeyByHash finds a key, revoked or not, by the digest of its secret.
	KeyByHash(ctx context.Context, hash [32]byte) (Key, error)
	// GetKey returns a key by id.
	GetKey(ctx context.Context, id string) (Key, error)
	// ListKeys returns an account's keys in creation order.
	ListKeys(ctx context.Context, accountID string) ([]Key, error)
	// SetKeyLimit sets (or with nil clears) a key's credit limit.
	SetKeyLimit(ctx context.Context, id string, limit *CreditLimit) (Key, error)
	// RevokeKey revokes a key at the given time; revoking twice keeps the
	// first time.
	RevokeKey(ctx context.Context, id string, at time.Time) (Key, error)
	// KeySpend returns what a key spent in the period bucket containing at.
	KeySpend(ctx context.Context, keyID, period string, at time.Time) (credits.Micros, error)
}

// Money is what moves credits for a call: the holds taken before upstream
// work and the Settle that captures them.
type Money interface {
	// Reserve, in one atomic step, sets the hold of call h.ID to
	// h.Price × n, replacing the hold it had (so a failover re-sizes it):
	// n is the most records, at most h.Records, that both the account's
	// available balance (balance − its other holds) and the key's room in
	// each window of its credit limit (limit − spent − its other holds)
	// pay for. n = 0 leaves no hold. Settle captures the hold of its run
	// id; Release drops it; holds do not outlive a crash (see Hold).
	Reserve(ctx context.Context, h Hold) (HoldResult, error)
	// Release drops the hold of a call, if it has one.
	Release(ctx context.Context, id string) error

	// Settle, in ONE transaction: debits min(len(Run.Data), balance/Price,
	// hold/Price) records × Price from the run's account (never below zero;
	// with Lines, the first records whose prices the balance and the hold
	// pay for, each at its price),
	// hold being the run id's hold when it has one (the capture: never more
	// than reserved), releases that hold (also for a failed run), truncates
	// Run.Data to match, writes the run, adds to the daily usage rollup of
	// (account, day, offer, platform) and to the key's spend in the current
	// bucket of each period. A failed run (Price 0, no data) is written and
	// counted as a request with no charge.
	Settle(ctx context.Context, s Settlement) (SettleResult, error)
}

// Runs are the stored runs of an account and its daily usage rollups.
type Runs interface {
	// GetRun returns a run of the account; ErrNotFound for an unknown id or
	// another account's run.
	GetRun(ctx context.Context, accountID, runID string) (runs.Run, error)
	// GetRunJSON appends to dst a run of the account in its API form, the
	// answer of GET /v1/extractions/{id}: the JSON of the Run GetRun
	// returns (so without the account and key ids). Implementations serve
	// it from the stored bytes without decoding and encoding the records
	// again; dst lets the caller reuse one buffer across calls, since the
	// answer is tens of KB. ErrNotFound as GetRun.
	GetRunJSON(ctx context.Context, dst []byte, accountID, runID string) ([]byte, error)
	// ListRuns returns an account's runs matching f, newest first.
	ListRuns(ctx context.Context, accountID string, f RunFilter) ([]RunSummary, error)

	// Usage returns the account's rollup rows with Day >= since.
	Usage(ctx context.Context, accountID string, since time.Time) ([]UsageRow, error)
}

// ErrInsufficient is returned by AddCredits when a negative amount would
// take the balance below zero.
var ErrInsufficient = errors.New("insufficient balance")

// ErrOverflow is returned by AddCredits when the balance would pass the
// largest the store holds (math.MaxInt64 micro-credits, ~9.2 trillion
// credits): nothing is added.
var ErrOverflow = errors.New("the balance would exceed the largest the store holds")

// PeriodStart returns the start (UTC) of the calendar period containing t:
// the hour, the day, the ISO week (Monday 00:00) or the month.
func PeriodStart(period string, t time.Time) time.Time {
	t = t.UTC()
	switch period {
	case PeriodHour:
		return t.Truncate(time.Hour)
	case PeriodDay:
		return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	case PeriodWeek:
		d := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
		wd := (int(d.Weekday()) + 6) % 7 // Monday = 0
		return d.AddDate(0, 0, -wd)
	case PeriodMonth:
		return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	}
	return time.Time{}
}

// PeriodEnd returns the end (exclusive) of the period containing t.
func PeriodEnd(period string, t time.Time) time.Time {
	s := PeriodStart(period, t)
	switch period {
	case PeriodHour:
		return s.Add(time.Hour)
	case PeriodDay:
		return s.AddDate(0, 0, 1)
	case PeriodWeek:
		return s.AddDate(0, 0, 7)
	case PeriodMonth:
		return s.AddDate(0, 1, 0)
	}
	return s
}

// ValidPeriod reports whether p is one of the four credit-limit periods.
func ValidPeriod(p string) bool {
	return p == PeriodHour || p == PeriodDay || p == PeriodWeek || p == PeriodMonth
}

// Periods lists the credit-limit periods; Settle keeps spend for each.
var Periods = []string{PeriodHour, PeriodDay, PeriodWeek, PeriodMonth}
