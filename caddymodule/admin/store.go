package admin

import (
	"context"
	"time"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/store"
)

// Store is the part of the account store the admin routes use, grouped
// by concern. It is declared here, where it is used, so that admin
// depends on these methods and not on the whole store.Store; the app
// passes the real store.
type Store interface {
	accounts
	Keys
	invites
	store.Ledger  // the transactions route and adjustments with a reason
	store.Capable // GET /sdr/backup, when the store has a backup
}

// accounts are the accounts and their credits.
type accounts interface {
	CreateAccount(ctx context.Context, id string, balance credits.Micros, now time.Time) (store.Account, error)
	GetAccount(ctx context.Context, id string) (store.Account, error)
	AddCredits(ctx context.Context, id string, amount credits.Micros) (store.Account, error)
}

// Keys are the accounts' API keys and their credit limits: exported for
// the dashboard, which manages an account's keys as these routes do.
type Keys interface {
	CreateKey(ctx context.Context, k store.Key) error
	GetKey(ctx context.Context, id string) (store.Key, error)
	ListKeys(ctx context.Context, accountID string) ([]store.Key, error)
	SetKeyLimit(ctx context.Context, id string, limit *store.CreditLimit) (store.Key, error)
	RevokeKey(ctx context.Context, id string, at time.Time) (store.Key, error)
}

// invites are the member invitations an operator creates.
type invites interface {
	CreateInvite(ctx context.Context, inv store.Invite) error
}
