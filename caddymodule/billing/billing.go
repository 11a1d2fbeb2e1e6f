// Package billing is the money of one call, authorize then capture: before
// each offer attempt it holds price × the most records the attempt may
// return (Store.Reserve), so the upstream is never asked for records
// nobody can pay; the run's Settle captures what was served and releases
// the rest. It implements router.Budget and decides the refusal of a call
// no offer of which can be paid one record: insufficient credits or the
// key's credit limit (errkind), with the figures that explain it. It
// knows nothing of HTTP handlers: the caller answers the kind it reports.
package billing

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/errkind"
	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/router"
	"socialrouter/caddymodule/store"
)

// Store is the part of the account store the money of a call uses: its
// hold, and the balance and key spend that explain a refusal. It is
// declared here, where it is used, so that billing depends on these four
// methods and not on the whole store.Store.
type Store interface {
	Reserve(ctx context.Context, h store.Hold) (store.HoldResult, error)
	Release(ctx context.Context, id string) error
	GetAccount(ctx context.Context, id string) (store.Account, error)
	KeySpend(ctx context.Context, keyID, period string, at time.Time) (credits.Micros, error)
}

// Call holds the money of one call. Create it with New, pass it as the
// router.Request's Budget, tell it Settled once the run's Settle
// committed, and Release it when the call ends.
type Call struct {
	st   Store
	hold store.Hold
	key  store.Key

	mu      sync.Mutex
	capped  []refusal      // what capped each offer's last Reserve, where money did
	kept    credits.Micros // the price of the records kept from earlier offers (Keep)
	refused []refusal      // offers not one record of which could be paid
	settled bool           // Settle committed: it captured the hold
}

// refusal is one offer and what capped its hold (for refused: an
// unpayable offer). A slice of them, not a map: a call reserves for one
// offer or a few, and a held call keeps its Call for minutes.
type refusal struct {
	offer *registry.Offer
	by    string
}

// New returns the money of the call that will be stored as run runID,
// made with key at now.
func New(st Store, runID string, key store.Key, now time.Time) *Call {
	return &Call{
		st:   st,
		hold: store.Hold{ID: runID, AccountID: key.AccountID, KeyID: key.ID, Now: now},
		key:  key,
	}
}

// ID is the call's run id, which names its hold.
func (c *Call) ID() string { return c.hold.ID }

// Reserve re-sizes the call's hold for offer o (router.Budget): the most
// of records its price lets the balance and the key's limit pay for. A
// hold of fewer than least records is dropped at once: a later search
// page whose upstream must produce the earlier pages again is not called
// unless the money covers them all and one record of this page.
func (c *Call) Reserve(ctx context.Context, o *registry.Offer, records, least int) (int, string, error) {
	c.mu.Lock()
	kept := c.kept
	c.mu.Unlock()
	if kept > 0 {
		return c.reserveKept(ctx, o, records, least, kept)
	}
	h := c.hold
	h.Price, h.Records = o.Price, records
	res, err := c.st.Reserve(ctx, h)
	if err != nil {
		return 0, "", err
	}
	least = max(1, least)
	if res.Records > 0 && res.Records < least {
		if err := c.st.Release(ctx, h.ID); err != nil {
			return 0, "", err
		}
		res = store.HoldResult{CappedBy: res.CappedBy, Period: res.Period}
	}
	return c.note(o, res, least)
}

// note records the hold of offer o and, when it covers nothing, why.
func (c *Call) note(o *registry.Offer, res store.HoldResult, least int) (int, string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setCapped(o, res.CappedBy)
	if res.Records > 0 {
		return res.Records, "", nil
	}
	c.refused = append(c.refused, refusal{offer: o, by: res.CappedBy})
	what := "one record"
	if least > 1 {
		what = fmt.Sprintf("the %d records this page needs from the upstream (the earlier pages included, which are not charged again)", least)
	}
	if res.CappedBy == store.CappedCreditLimit {
		return 0, fmt.Sprintf("skipped: this %s's credit limit per %s has no room for %s at %s credits", c.credential(), res.Period, what, o.Price), nil
	}
	return 0, fmt.Sprintf("skipped: the available balance does not pay for %s at %s credits", what, o.Price), nil
}

// Keep adds the records the call keeps of offer o while its failed
// batches' inputs move on (router.Budget): later Reserves hold their price
// on top of their own offer's records.
func (c *Call) Keep(o *registry.Offer, records int) {
	c.mu.Lock()
	c.kept += credits.Micros(records) * o.Price
	c.mu.Unlock()
}

// reserveKept is Reserve once records are kept: one hold (the run's, which
// Settle captures) must pay for the kept records and the new offer's. The
// store holds whole records of one price, so it is asked for the new
// offer's records plus ⌈kept ÷ price⌉ more; the hold then covers kept
// and the new records, over by less than one record of the new offer,
// which the settle releases. A free offer holds the kept records alone.
// The hold is never dropped below the kept records: they are served.
func (c *Call) reserveKept(ctx context.Context, o *registry.Offer, records, least int, kept credits.Micros) (int, string, error) {
	h := c.hold
	extra := 0
	if o.Price > 0 {
		extra = int((kept + o.Price - 1) / o.Price)
		h.Price, h.Records = o.Price, records+extra
	} else {
		h.Price, h.Records = kept, 1
	}
	res, err := c.st.Reserve(ctx, h)
	if err != nil {
		return 0, "", err
	}
	covered := 0
	switch {
	case o.Price > 0:
		covered = max(0, res.Records-extra)
	case res.Records == 1:
		covered = records
	}
	if covered < max(1, least) {
		covered = 0
	}
	res.Records, res.Amount = covered, credits.Micros(covered)*o.Price
	return c.note(o, res, least)
}

// CappedBy says what money capped the records asked of offer o (the
// serving offer): store.CappedBalance, store.CappedCreditLimit or "".
func (c *Call) CappedBy(o *registry.Offer) string {
	if o == nil {
		return ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.capped {
		if r.offer.ID == o.ID {
			return r.by
		}
	}
	return ""
}

// setCapped records what capped offer o's last Reserve; c.mu is held.
func (c *Call) setCapped(o *registry.Offer, by string) {
	for i := range c.capped {
		if c.capped[i].offer.ID == o.ID {
			c.capped[i].by = by
			return
		}
	}
	if by != "" {
		c.capped = append(c.capped, refusal{offer: o, by: by})
	}
}

// Settled tells c that the run's Settle committed, which deleted the hold
// in its transaction: Release then has nothing to drop.
func (c *Call) Settled() {
	c.mu.Lock()
	c.settled = true
	c.mu.Unlock()
}

// Committed reports whether Settled was told: the run's Settle committed.
func (c *Call) Committed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.settled
}

// Release drops what the call still holds: after a failed or refused call,
// or a settle that did not commit. After Settled it returns at once: on
// PostgreSQL it would be a round trip deleting nothing.
func (c *Call) Release(ctx context.Context) error {
	c.mu.Lock()
	settled := c.settled
	c.mu.Unlock()
	if settled {
		return nil
	}
	return c.st.Release(ctx, c.hold.ID)
}

// Refusal is the router failure of a call whose every offer was unpayable
// (router.Budget); Refused turns it into the answer.
func (c *Call) Refusal() error {
	return &router.Failure{Kind: errkind.InsufficientCredits, Message: "not one record of any offer can be paid"}
}

// Refused returns the failure to answer for a call the router refused
// because no offer of this call could be paid one record (nil for any
// other outcome): InsufficientCredits when the balance is short, else
// CreditLimitExceeded with RetryAfter to the end of the key's window.
// The messages and fields are those of the balance and limit checks.
func (c *Call) Refused(ctx context.Context, err error) (*router.Failure, error) {
	var f *router.Failure
	c.mu.Lock()
	if !errors.As(err, &f) || f.Kind != errkind.InsufficientCredits || len(c.refused) == 0 {
		c.mu.Unlock()
		return nil, nil
	}
	var cheapest credits.Micros
	byLimit := true
	for i, r := range c.refused {
		if i == 0 || r.offer.Price < cheapest {
			cheapest = r.offer.Price
		}
		byLimit = byLimit && r.by == store.CappedCreditLimit
	}
	c.mu.Unlock()
	if byLimit && c.key.CreditLimit != nil {
		return c.limitAnswer(ctx)
	}
	acct, err := c.st.GetAccount(ctx, c.hold.AccountID)
	if err != nil {
		return nil, fmt.Errorf("reading account %s: %w", c.hold.AccountID, err)
	}
	msg := fmt.Sprintf("balance %s credits does not pay for one record at %s credits; add credits to the account", acct.Balance, cheapest)
	if acct.Balance >= cheapest {
		msg = fmt.Sprintf("balance %s credits does not pay for one record at %s credits once the calls in flight are paid; add credits to the account or wait for them", acct.Balance, cheapest)
	}
	return &router.Failure{Kind: errkind.InsufficientCredits, Message: msg,
		Extra: map[string]any{"balance": acct.Balance, "price_per_record": cheapest}}, nil
}

// limitAnswer is the refusal of a key whose window has no room for a
// record.
func (c *Call) limitAnswer(ctx context.Context) (*router.Failure, error) {
	lim := c.key.CreditLimit
	now := c.hold.Now
	spent, err := c.st.KeySpend(ctx, c.key.ID, lim.Period, now)
	if err != nil {
		return nil, fmt.Errorf("reading spend of key %s: %w", c.key.ID, err)
	}
	end := store.PeriodEnd(lim.Period, now)
	held := ""
	if spent < lim.Credits {
		held = ", and what is left is held by its calls in flight or pays for no record"
	}
	return &router.Failure{
		Kind: errkind.CreditLimitExceeded,
		Message: fmt.Sprintf("credit limit exceeded: this %s spent %s of its %s credits per %s%s; the limit resets at %s",
			c.credential(), spent, lim.Credits, lim.Period, held, end.Format(time.RFC3339)),
		Extra:      map[string]any{"period": lim.Period, "limit": lim.Credits, "spent": spent, "resets_at": end.Format(time.RFC3339)},
		RetryAfter: end.Sub(now),
	}, nil
}

// credential names what the call's limit belongs to, in the caller's
// terms: an API key, or an application's sign-in (an OAuth grant, whose
// limit was set on the consent page).
func (c *Call) credential() string {
	if c.key.Kind == store.KindOAuth {
		return "application's sign-in"
	}
	return "key"
}

// Interface guard
var _ router.Budget = (*Call)(nil)
