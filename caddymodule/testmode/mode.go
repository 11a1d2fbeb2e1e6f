// Package testmode is the test mode of the API: keys <prefix>_test_… whose
// calls go through everything a live call does except the upstream. Their
// records come from each offer's declared example payload (Clients), their
// money from a test balance, and their runs, usage and webhooks live apart
// from the live ones.
//
// Isolation is by account: a test key belongs to its account's test twin,
// the account id with Suffix, which no admin-created account can have (an
// account id never holds "~"). Every store query is scoped to an account,
// so test runs, usage, holds, key spend, idempotency keys and webhook
// endpoints are the twin's and a live key cannot reach them, nor the
// reverse, with no mode column anywhere. The twin's balance is the test
// balance; the live balance is another account's and never moves.
package testmode

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/store"
)

// Key modes, as the admin API and `caddy sdr key` name them and as keys
// spell them (<prefix>_live_…, <prefix>_test_…).
const (
	Live = "live"
	Test = "test"
)

// Suffix makes a live account id its test twin's.
const Suffix = "~test"

// StartBalance is the test balance an account starts with, and the one a
// reset restores: 100 credits.
const StartBalance credits.Micros = 100 * credits.PerCredit

// AccountID is the id of the test twin of the live account id.
func AccountID(live string) string { return live + Suffix }

// IsTest reports whether accountID is a test twin.
func IsTest(accountID string) bool { return strings.HasSuffix(accountID, Suffix) }

// LiveAccountID is the live account a test twin belongs to (id itself when
// it is live).
func LiveAccountID(id string) string { return strings.TrimSuffix(id, Suffix) }

// ModeOf is the mode of the calls of an account (Live or Test).
func ModeOf(accountID string) string {
	if IsTest(accountID) {
		return Test
	}
	return Live
}

// AccountFor is the account a key of mode on the live account belongs to.
func AccountFor(live, mode string) string {
	if mode == Test {
		return AccountID(live)
	}
	return live
}

// ValidMode reports whether m names a mode ("" is live, the default).
func ValidMode(m string) bool { return m == "" || m == Live || m == Test }

// Accounts is what the test balance needs of the store.
type Accounts interface {
	CreateAccount(ctx context.Context, id string, balance credits.Micros, now time.Time) (store.Account, error)
	GetAccount(ctx context.Context, id string) (store.Account, error)
	AddCredits(ctx context.Context, id string, amount credits.Micros) (store.Account, error)
}

// Ensure returns the test twin of the live account, creating it with
// StartBalance the first time (a test key's creation, the dashboard's
// first look at test mode). The live account must exist.
func Ensure(ctx context.Context, st Accounts, live string, now time.Time) (store.Account, error) {
	if IsTest(live) {
		return store.Account{}, fmt.Errorf("%s is a test account", live)
	}
	if _, err := st.GetAccount(ctx, live); err != nil {
		return store.Account{}, err
	}
	id := AccountID(live)
	a, err := st.GetAccount(ctx, id)
	if err == nil {
		return a, nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return store.Account{}, err
	}
	a, err = st.CreateAccount(ctx, id, StartBalance, now)
	if errors.Is(err, store.ErrExists) { // created meanwhile
		return st.GetAccount(ctx, id)
	}
	return a, err
}

// Reset sets the test balance of the live account back to StartBalance
// (creating the twin if needed). Holds of test calls in flight stay.
func Reset(ctx context.Context, st Accounts, live string, now time.Time) (store.Account, error) {
	a, err := Ensure(ctx, st, live, now)
	if err != nil {
		return a, err
	}
	if a.Balance == StartBalance {
		return a, nil
	}
	a, err = st.AddCredits(ctx, a.ID, StartBalance-a.Balance)
	if errors.Is(err, store.ErrInsufficient) { // spent meanwhile: try once more from the new balance
		cur, gerr := st.GetAccount(ctx, AccountID(live))
		if gerr != nil {
			return cur, gerr
		}
		return st.AddCredits(ctx, cur.ID, StartBalance-cur.Balance)
	}
	return a, err
}
