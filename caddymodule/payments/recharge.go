package payments

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v82"
	"go.uber.org/zap"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/store"
)

// MaxFailures is how many automatic recharges may fail in a row before
// automatic recharge turns itself off.
const MaxFailures = 3

// rechargeLease is how long a recharge in flight blocks the next when its
// outcome never arrives (no event): then another may start.
const rechargeLease = time.Hour

// errSkip ends a settings update that has nothing to change.
var errSkip = errors.New("nothing to do")

// Settled is called after every settle with the balance it left: it sends
// balance.low when the balance falls under the customer's threshold, and
// starts an automatic recharge when it falls under the recharge threshold.
// It never blocks the settle: an account without thresholds costs a
// cached read; the rest runs in the background.
func (s *Service) Settled(accountID string, balance credits.Micros) {
	if v, ok := s.cache.Load(accountID); ok && s.now().Before(v.(cachedSettings).exp) {
		s.check(accountID, balance, v.(cachedSettings).bs)
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if bs, err := s.settings(ctx, accountID); err == nil {
			s.check(accountID, balance, bs)
		}
	}()
}

// check acts on the balance a settle left, given the account's settings.
func (s *Service) check(accountID string, balance credits.Micros, bs store.BillingSettings) {
	low := bs.LowThreshold > 0 && balance < bs.LowThreshold && !bs.LowNotified
	recharge := s.Enabled() && bs.AutoRecharge && balance < bs.RechargeThreshold &&
		(bs.RechargeID == "" || s.now().After(bs.RechargeUntil)) // one in flight, or its lease ran out
	if !low && !recharge {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if low {
			s.notifyLow(ctx, accountID, balance)
		}
		if recharge {
			s.recharge(ctx, accountID)
		}
	}()
}

// notifyLow marks the account notified (once across nodes) and sends
// balance.low.
func (s *Service) notifyLow(ctx context.Context, accountID string, balance credits.Micros) {
	var threshold credits.Micros
	_, err := s.Update(ctx, accountID, func(bs *store.BillingSettings) error {
		if bs.LowNotified || bs.LowThreshold == 0 || balance >= bs.LowThreshold {
			return errSkip
		}
		bs.LowNotified, threshold = true, bs.LowThreshold
		return nil
	})
	if err != nil {
		return
	}
	s.notify(ctx, accountID, EventBalanceLow, map[string]any{
		"id": "low_" + rand.Text(), "account": accountID, "balance": balance, "threshold": threshold,
	})
}

// balanceRaised re-arms balance.low once credits lift the balance back
// over the threshold.
func (s *Service) balanceRaised(ctx context.Context, accountID string, balance credits.Micros) {
	_, _ = s.Update(ctx, accountID, func(bs *store.BillingSettings) error {
		if !bs.LowNotified || balance < bs.LowThreshold {
			return errSkip
		}
		bs.LowNotified = false
		return nil
	})
}

// recharge claims the account's one recharge (across nodes: the claim is
// an atomic settings update) and creates an off-session PaymentIntent
// with the card on file. Its credit comes from payment_intent.succeeded.
func (s *Service) recharge(ctx context.Context, accountID string) {
	a, err := s.cfg.Store.GetAccount(ctx, accountID)
	if err != nil {
		return
	}
	now := s.now()
	id := "rch_" + strings.ToLower(rand.Text())
	bs, err := s.Update(ctx, accountID, func(bs *store.BillingSettings) error {
		switch {
		case !bs.AutoRecharge || bs.PaymentMethod == "" || bs.Customer == "" || a.Balance >= bs.RechargeThreshold:
			return errSkip
		case bs.RechargeID != "" && now.Before(bs.RechargeUntil):
			return errSkip // one in flight
		case !bs.FailedAt.IsZero() && now.Before(bs.FailedAt.Add(s.cfg.RechargeRetry)):
			return errSkip // the last one failed a moment ago
		}
		bs.RechargeID, bs.RechargeUntil = id, now.Add(rechargeLease)
		return nil
	})
	if err != nil {
		return
	}
	minor := min(max(s.minor(bs.RechargeAmount), s.cfg.MinTopUp), s.cfg.MaxTopUp)
	log := s.logger.With(zapAccount(accountID), zap.String("recharge", id))
	log.Info("automatic recharge started", zapMicros("balance", a.Balance), zapMicros("credits", s.credits(minor)))
	p := &stripe.PaymentIntentCreateParams{
		Amount:        stripe.Int64(minor),
		Currency:      stripe.String(s.cfg.Currency),
		Customer:      stripe.String(bs.Customer),
		PaymentMethod: stripe.String(bs.PaymentMethod),
		OffSession:    stripe.Bool(true),
		Confirm:       stripe.Bool(true),
		Metadata:      map[string]string{metaAccount: accountID, metaKind: store.LedgerRecharge, metaRecharge: id},
	}
	p.SetIdempotencyKey(id)
	pi, err := s.sc.V1PaymentIntents.Create(ctx, p)
	switch {
	case err != nil:
		s.failed(ctx, log, accountID, id, failureReason(err))
	case pi.Status == stripe.PaymentIntentStatusSucceeded || pi.Status == stripe.PaymentIntentStatusProcessing:
		log.Info("automatic recharge accepted: credited when payment_intent.succeeded arrives", zap.String("payment_intent", pi.ID))
	default:
		s.failed(ctx, log, accountID, id, "the payment needs the customer (status "+string(pi.Status)+"): pay once from the Billing page")
	}
}

// failureReason is what the customer is told about a refused recharge.
func failureReason(err error) string {
	var se *stripe.Error
	if errors.As(err, &se) && se.Msg != "" {
		return "the card was refused: " + se.Msg
	}
	return "the payment provider could not be reached: " + err.Error()
}

// failed ends recharge id as failed (once: only while it is the one in
// flight), counts it, turns automatic recharge off after MaxFailures in a
// row, and tells the account's endpoints.
func (s *Service) failed(ctx context.Context, log *zap.Logger, accountID, id, reason string) {
	bs, err := s.Update(ctx, accountID, func(bs *store.BillingSettings) error {
		if bs.RechargeID != id {
			return errSkip
		}
		bs.RechargeID, bs.RechargeUntil = "", time.Time{}
		bs.Failures++
		bs.LastFailure, bs.FailedAt = reason, s.now().UTC()
		if bs.Failures >= MaxFailures {
			bs.AutoRecharge = false
		}
		return nil
	})
	if err != nil {
		return
	}
	log.Warn("automatic recharge failed", zap.String("reason", reason), zap.Int("failures_in_a_row", bs.Failures), zap.Bool("auto_recharge", bs.AutoRecharge))
	s.notify(ctx, accountID, EventRechargeFailed, map[string]any{
		"id": id, "account": accountID, "reason": reason, "failures_in_a_row": bs.Failures, "auto_recharge": bs.AutoRecharge,
	})
}

// rechargePaid credits a succeeded automatic recharge, once per
// PaymentIntent, and ends it.
func (s *Service) rechargePaid(ctx context.Context, ev stripe.Event) error {
	var pi stripe.PaymentIntent
	if err := json.Unmarshal(ev.Data.Raw, &pi); err != nil {
		return err
	}
	if pi.Metadata[metaKind] != store.LedgerRecharge {
		return nil // a Checkout's payment: credited by its session's event
	}
	account, id := pi.Metadata[metaAccount], pi.Metadata[metaRecharge]
	log := s.logger.With(zap.String("event", ev.ID), zap.String("payment_intent", pi.ID), zapAccount(account))
	amount := s.credits(pi.AmountReceived)
	key := "payment_intent:" + pi.ID
	if ok, err := s.accountExists(ctx, account); err != nil || !ok {
		if err != nil {
			return err
		}
		return s.orphan(ctx, log, store.OrphanPayment{EventID: key, AccountID: account, Reference: pi.ID, Amount: amount, Reason: "unknown account"})
	}
	e, applied, err := s.apply(ctx, log, store.LedgerEntry{AccountID: account, Kind: store.LedgerRecharge, Amount: amount, EventID: key,
		Reference: pi.ID, ReceiptURL: receiptURL(s.paymentIntent(ctx, pi.ID)), Reason: "automatic recharge " + id})
	if err != nil || !applied {
		return err
	}
	_, _ = s.Update(ctx, account, func(bs *store.BillingSettings) error {
		if bs.RechargeID == id {
			bs.RechargeID, bs.RechargeUntil = "", time.Time{}
		}
		bs.Failures, bs.LastFailure, bs.FailedAt = 0, "", time.Time{}
		return nil
	})
	s.balanceRaised(ctx, account, e.Balance)
	return nil
}

// rechargeFailedEvent ends a recharge the provider reports failed or in
// need of the customer (3-D Secure) after it was created.
func (s *Service) rechargeFailedEvent(ctx context.Context, ev stripe.Event) error {
	var pi stripe.PaymentIntent
	if err := json.Unmarshal(ev.Data.Raw, &pi); err != nil {
		return err
	}
	if pi.Metadata[metaKind] != store.LedgerRecharge {
		return nil
	}
	account, id := pi.Metadata[metaAccount], pi.Metadata[metaRecharge]
	reason := "the payment needs the customer: pay once from the Billing page"
	if pi.LastPaymentError != nil && pi.LastPaymentError.Msg != "" {
		reason = "the card was refused: " + pi.LastPaymentError.Msg
	}
	s.failed(ctx, s.logger.With(zap.String("event", ev.ID), zapAccount(account), zap.String("recharge", id)), account, id, reason)
	return nil
}

// saveCard keeps the card of a Checkout the customer opted into automatic
// recharge with, and turns automatic recharge on when its amount is set.
func (s *Service) saveCard(ctx context.Context, log *zap.Logger, accountID, customer string, pi *stripe.PaymentIntent) {
	pm := ""
	if pi != nil && pi.PaymentMethod != nil {
		pm = pi.PaymentMethod.ID
	}
	if pm == "" {
		// The customer's most recent card (Checkout attached it).
		it := s.sc.V1PaymentMethods.List(ctx, &stripe.PaymentMethodListParams{Customer: stripe.String(customer), Type: stripe.String("card")})
		for m, err := range it {
			if err != nil {
				log.Warn("listing the customer's cards", zap.Error(err))
			} else {
				pm = m.ID
			}
			break
		}
	}
	if pm == "" {
		log.Warn("no card to keep on file: automatic recharge stays off")
		return
	}
	bs, err := s.Update(ctx, accountID, func(bs *store.BillingSettings) error {
		bs.Customer, bs.PaymentMethod = customer, pm
		bs.AutoRecharge = bs.RechargeAmount > 0 && bs.RechargeThreshold > 0
		bs.Failures, bs.LastFailure, bs.FailedAt = 0, "", time.Time{}
		return nil
	})
	if err == nil {
		log.Info("card kept on file", zap.String("customer", customer), zap.Bool("auto_recharge", bs.AutoRecharge))
	}
}

// notify sends an account event to its webhook endpoints.
func (s *Service) notify(ctx context.Context, accountID, event string, data map[string]any) {
	if s.cfg.Notify == nil {
		return
	}
	b, err := json.Marshal(data)
	if err == nil {
		err = s.cfg.Notify(ctx, accountID, event, b)
	}
	if err != nil {
		s.logger.Warn("notifying the account's endpoints", zap.String("event", event), zapAccount(accountID), zap.Error(err))
	}
}
