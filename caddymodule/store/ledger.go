package store

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"

	"socialrouter/caddymodule/credits"
)

// Kinds of ledger rows: every movement of an account's (live) balance is
// one. LedgerRunCharges rows are not stored: they are the day's settled
// charges, read from the usage rollup Settle already keeps in its
// transaction, so the settle path writes nothing more for the ledger.
const (
	LedgerOpening    = "opening"       // the balance an account was created (or imported) with
	LedgerAdjustment = "adjustment"    // an operator's credit or debit, with its reason
	LedgerTopUp      = "top_up"        // a card payment the customer made (Checkout)
	LedgerRecharge   = "auto_recharge" // an automatic recharge with the card on file
	LedgerRefund     = "refund"        // a refunded payment: its credits debited
	LedgerRunCharges = "run_charges"   // a UTC day's charges of runs, aggregated (derived)
)

// ErrDuplicateEvent is returned by Move when the movement's EventID was
// applied before: nothing changed.
var ErrDuplicateEvent = errors.New("the event was applied before")

// LedgerEntry is one movement of an account's credits. Amount is signed:
// a credit is above zero, a debit below.
type LedgerEntry struct {
	ID        string         `json:"id"`
	AccountID string         `json:"account_id"`
	Kind      string         `json:"kind"`
	Amount    credits.Micros `json:"amount"`
	// Balance is the balance right after the movement (0 on derived
	// run-charge rows, which aggregate many settles).
	Balance credits.Micros `json:"balance"`
	Reason  string         `json:"reason,omitempty"`
	// EventID is the payment provider's event the movement comes from:
	// unique across the store, so an event is applied at most once.
	EventID string `json:"event_id,omitempty"`
	// Reference is the provider's object (checkout session, payment
	// intent, charge) the movement belongs to.
	Reference  string    `json:"reference,omitempty"`
	ReceiptURL string    `json:"receipt_url,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
	// Clamp (refunds): a debit larger than the balance debits the balance
	// to zero instead of failing with ErrInsufficient.
	Clamp bool `json:"-"`
	// Cumulative (refunds): Amount is the total the rows of this Kind and
	// Reference must come to; the row moves what is missing, and an event
	// that arrives after a larger total (out of order) moves nothing.
	Cumulative bool `json:"-"`
}

// LedgerCursor is the position of the last row of a page of
// Transactions: the next page starts strictly after it.
type LedgerCursor struct {
	At time.Time
	ID string
}

// Before reports whether e comes after the cursor in newest-first order.
func (c LedgerCursor) Before(e LedgerEntry) bool {
	if c.At.IsZero() {
		return true
	}
	if !e.CreatedAt.Equal(c.At) {
		return e.CreatedAt.Before(c.At)
	}
	return e.ID < c.ID
}

// RunChargesDayID is the id of the derived run-charge row of a UTC day.
func RunChargesDayID(day time.Time) string { return "day_" + day.UTC().Format(time.DateOnly) }

// OrphanPayment is a paid provider event that could not be credited: its
// account is unknown or closed. Kept for the operator, never dropped.
type OrphanPayment struct {
	EventID   string         `json:"event_id"`
	AccountID string         `json:"account_id"`
	Reference string         `json:"reference"`
	Amount    credits.Micros `json:"amount"`
	Reason    string         `json:"reason"`
	CreatedAt time.Time      `json:"created_at"`
}

// BillingSettings are an account's payment preferences and the state of
// its automatic recharge. The zero value is "nothing set".
type BillingSettings struct {
	// Customer and PaymentMethod are the provider's customer and the card
	// on file saved by a Checkout with automatic recharge opted in.
	Customer      string `json:"customer,omitempty"`
	PaymentMethod string `json:"payment_method,omitempty"`
	// AutoRecharge: when a settle leaves the balance under
	// RechargeThreshold, RechargeAmount credits are bought off-session.
	AutoRecharge      bool           `json:"auto_recharge,omitempty"`
	RechargeThreshold credits.Micros `json:"recharge_threshold,omitempty"`
	RechargeAmount    credits.Micros `json:"recharge_amount,omitempty"`
	// RechargeID is the recharge in flight (its PaymentIntent's
	// idempotency key) until RechargeUntil: one per account, all nodes.
	RechargeID    string    `json:"recharge_id,omitempty"`
	RechargeUntil time.Time `json:"recharge_until,omitzero"`
	// Failures counts recharges failed in a row; LastFailure says why.
	Failures    int       `json:"failures,omitempty"`
	LastFailure string    `json:"last_failure,omitempty"`
	FailedAt    time.Time `json:"failed_at,omitzero"`
	// LowThreshold: a balance.low event and a banner when the balance
	// falls under it (0: off); LowNotified until it rises above again.
	LowThreshold credits.Micros `json:"low_threshold,omitempty"`
	LowNotified  bool           `json:"low_notified,omitempty"`
}

// Ledger is the persistence of money in: movements of credits with their
// ledger rows, the provider events already applied, payments that found
// no account, and each account's billing settings. Implementations keep
// balance = Σ of the account's ledger rows (with the derived run-charge
// rows) at every commit.
type Ledger interface {
	// Move, in one transaction, changes the balance by e.Amount (never
	// below zero: ErrInsufficient; ErrOverflow), writes the ledger row and,
	// when e.EventID is set, records the event: a second Move of the same
	// EventID changes nothing and returns ErrDuplicateEvent. ErrNotFound
	// for an unknown account. It returns the row as written.
	Move(ctx context.Context, e LedgerEntry) (LedgerEntry, error)
	// Transactions returns an account's ledger rows newest first (by
	// CreatedAt, then ID): the stored rows and one run-charge row per UTC
	// day with charges (ID "day_YYYY-MM-DD", CreatedAt the day's start),
	// those after the cursor (the zero cursor: from the newest), at most
	// limit.
	Transactions(ctx context.Context, accountID string, after LedgerCursor, limit int) ([]LedgerEntry, error)
	// ReferenceAccount returns the account of the ledger rows of a provider
	// object (a refund names the payment it refunds); ErrNotFound if none.
	ReferenceAccount(ctx context.Context, reference string) (string, error)
	// RecordOrphan stores a payment no account could take
	// (ErrDuplicateEvent if its event was recorded or applied before).
	RecordOrphan(ctx context.Context, o OrphanPayment) error
	// Orphans lists the recorded orphan payments, newest first.
	Orphans(ctx context.Context, limit int) ([]OrphanPayment, error)
	// BillingSettings returns an account's settings (the zero value when
	// none were set; ErrNotFound for an unknown account).
	BillingSettings(ctx context.Context, accountID string) (BillingSettings, error)
	// UpdateBillingSettings applies fn to the settings atomically (across
	// nodes) and stores the result; fn may run more than once and returns
	// an error to change nothing.
	UpdateBillingSettings(ctx context.Context, accountID string, fn func(*BillingSettings) error) (BillingSettings, error)
}

// Prepared checks a movement and fills what the store assigns: an id
// ("txn_" and a time-sortable ULID) and the time (UTC, microseconds).
func (e LedgerEntry) Prepared(now time.Time) (LedgerEntry, error) {
	if e.AccountID == "" || e.Kind == "" || e.Kind == LedgerRunCharges {
		return e, errors.New("a movement needs an account and a stored kind")
	}
	if e.CreatedAt.IsZero() {
		e.CreatedAt = now
	}
	e.CreatedAt = e.CreatedAt.UTC().Truncate(time.Microsecond)
	if e.ID == "" {
		e.ID = "txn_" + strings.ToLower(ulid.MustNew(ulid.Timestamp(e.CreatedAt), rand.Reader).String())
	}
	return e, nil
}

// Delta is what a movement changes the balance by, given the balance and,
// for a Cumulative one, the sum so far of its kind and reference; ok false:
// nothing to move (a cumulative total already reached, or passed by an
// event that arrived earlier).
func (e LedgerEntry) Delta(balance, sofar credits.Micros) (amount credits.Micros, ok bool, err error) {
	amount = e.Amount
	if e.Cumulative {
		amount = e.Amount - sofar
		if amount == 0 || (amount > 0) != (e.Amount > 0) {
			return 0, false, nil
		}
	}
	switch {
	case amount > 0 && balance > math.MaxInt64-amount:
		return 0, false, ErrOverflow
	case balance+amount < 0 && e.Clamp:
		amount = -balance
	case balance+amount < 0:
		return 0, false, ErrInsufficient
	}
	return amount, true, nil
}

// String encodes the cursor for an API (opaque to clients).
func (c LedgerCursor) String() string {
	if c.At.IsZero() {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.At.UnixMicro(), 10) + "." + c.ID))
}

// ParseLedgerCursor decodes LedgerCursor.String; "" is the zero cursor.
func ParseLedgerCursor(s string) (LedgerCursor, error) {
	if s == "" {
		return LedgerCursor{}, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	at, id, ok := strings.Cut(string(b), ".")
	n, perr := strconv.ParseInt(at, 10, 64)
	if err != nil || !ok || perr != nil || id == "" {
		return LedgerCursor{}, errors.New("not a cursor this API returned")
	}
	return LedgerCursor{At: time.UnixMicro(n).UTC(), ID: id}, nil
}

// Page reads one page of an account's ledger: the rows and the cursor of
// the next page (zero on the last).
func Page(ctx context.Context, l Ledger, accountID string, after LedgerCursor, limit int) ([]LedgerEntry, LedgerCursor, error) {
	rows, err := l.Transactions(ctx, accountID, after, limit+1)
	if err != nil || len(rows) <= limit {
		return rows, LedgerCursor{}, err
	}
	rows = rows[:limit]
	last := rows[limit-1]
	return rows, LedgerCursor{At: last.CreatedAt, ID: last.ID}, nil
}
