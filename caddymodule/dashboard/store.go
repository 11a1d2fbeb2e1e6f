package dashboard

import (
	"context"
	"time"

	"socialrouter/caddymodule/admin"
	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/testmode"
)

// Store is the part of the account store the dashboard uses, grouped by
// concern. It is declared here, where it is used, so that the dashboard
// depends on these methods and not on the whole store.Store; the app
// passes the real store.
type Store interface {
	members
	sessions
	activity
	keys
	accountViews
	store.Throttle // sign-in, invitation and password attempt limits
	store.Ledger   // the Billing page: the ledger and billing settings
}

// members is who signs in: invitations accepted, members, passwords.
type members interface {
	AcceptInvite(ctx context.Context, tokenHash [32]byte, m store.Member, now time.Time) (store.Member, error)
	FindInvite(ctx context.Context, tokenHash [32]byte, now time.Time) (store.Invite, error)
	MemberByEmail(ctx context.Context, email string) (store.Member, error)
	GetMember(ctx context.Context, id string) (store.Member, error)
	SetPassword(ctx context.Context, memberID, hash string) error
}

// sessions are the signed-in members' sessions.
type sessions interface {
	CreateSession(ctx context.Context, s store.Session) error
	GetSession(ctx context.Context, id string, now time.Time) (store.Session, error)
	TouchSession(ctx context.Context, id string, at time.Time) error
	ListSessions(ctx context.Context, memberID string, now time.Time) ([]store.Session, error)
	DeleteSession(ctx context.Context, id string) error
}

// activity is the account's activity log.
type activity interface {
	AddActivity(ctx context.Context, a store.Activity) error
	ListActivity(ctx context.Context, accountID string, limit int) ([]store.Activity, error)
}

// keys are the account's API keys and their limits, as the admin API
// manages them, and their spend.
type keys interface {
	admin.Keys
	KeySpend(ctx context.Context, keyID, period string, at time.Time) (credits.Micros, error)
}

// accountViews are what the pages show of the account: its balance,
// usage and runs, those in flight included.
type accountViews interface {
	// The test twin of test mode: created when the switch is first
	// turned on, its balance reset (testmode.go).
	testmode.Accounts

	GetAccount(ctx context.Context, id string) (store.Account, error)
	Usage(ctx context.Context, accountID string, since time.Time) ([]store.UsageRow, error)
	ListRuns(ctx context.Context, accountID string, f store.RunFilter) ([]store.RunSummary, error)
	GetRun(ctx context.Context, accountID, runID string) (runs.Run, error)
	GetRunJSON(ctx context.Context, dst []byte, accountID, runID string) ([]byte, error)
	// The async runs still in flight, listed before they settle.
	ListAsyncRuns(ctx context.Context, accountID string, limit int) ([]store.AsyncRun, error)
	GetAsyncRun(ctx context.Context, accountID, id string) (store.AsyncRun, error)
}
