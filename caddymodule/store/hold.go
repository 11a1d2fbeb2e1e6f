package store

import (
	"time"

	"socialrouter/caddymodule/credits"
)

// Hold asks Reserve to set money aside for one call before its upstream
// is called: authorize, then capture at Settle. It is the gateway's answer
// to upstream work nobody pays for: the upstream is never asked for more
// records than the call's hold covers.
//
// Holds do not outlive a crash: the badger store keeps them in memory (a
// restart releases them), the PostgreSQL store lets them expire after its
// hold timeout, longer than the longest call, so no node's crash keeps
// another node's customers from their money.
type Hold struct {
	// ID is the call's run id: Settle captures the hold of its run.
	ID        string
	AccountID string
	// KeyID is the calling key; its credit limit, if it has one, bounds
	// the hold too. Empty: the account alone.
	KeyID string
	// Price is one record of the offer about to be called; Records the
	// most records the attempt may return.
	Price   credits.Micros
	Records int
	// Now places the key's spend in its credit-limit windows.
	Now time.Time
}

// HoldResult is what Reserve set aside.
type HoldResult struct {
	// Records is how many records the hold pays for, 0..Hold.Records.
	Records int
	// Amount is Records × Price, now held.
	Amount credits.Micros
	// CappedBy is CappedBalance or CappedCreditLimit when money made
	// Records lower than asked, the tighter of the two when both did.
	CappedBy string
	// Period is the credit-limit window that capped the hold, when
	// CappedBy is CappedCreditLimit (for Retry-After).
	Period string
}

// What money capped a hold (HoldResult.CappedBy, Run.CappedBy).
const (
	CappedBalance     = "balance"
	CappedCreditLimit = "credit_limit"
)

// HoldRoom is the shared arithmetic of Reserve: given the account's
// available money and the key's room in the window of its limit (limit nil:
// no limit), how many of want records at price fit, and what capped them.
func HoldRoom(available credits.Micros, limit *CreditLimit, keyRoom credits.Micros, price credits.Micros, want int) HoldResult {
	if want <= 0 {
		return HoldResult{}
	}
	if price <= 0 {
		return HoldResult{Records: want}
	}
	n, by, period := want, "", ""
	fit := func(money credits.Micros, what, per string) {
		if money < 0 {
			money = 0
		}
		if k := money / price; k < credits.Micros(n) {
			n, by, period = int(k), what, per
		}
	}
	fit(available, CappedBalance, "")
	if limit != nil {
		fit(keyRoom, CappedCreditLimit, limit.Period)
	}
	return HoldResult{Records: n, Amount: credits.Micros(n) * price, CappedBy: by, Period: period}
}
