package payments

import (
	"context"
	"errors"
	"fmt"

	"github.com/stripe/stripe-go/v82"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/store"
)

// Metadata keys the gateway puts on what it creates at Stripe, read back
// from the events.
const (
	metaAccount  = "sdr_account"
	metaKind     = "sdr_kind" // store.LedgerTopUp or store.LedgerRecharge
	metaRecharge = "sdr_recharge"
	metaSave     = "sdr_save_card" // "1": the customer opted into automatic recharge
)

// ErrOff refuses a top-up on a gateway without a payments block.
var ErrOff = errors.New("top-ups are off on this gateway")

// ErrAmount is a top-up outside the configured bounds.
var ErrAmount = errors.New("top-up amount out of bounds")

// CheckoutRequest is a customer's top-up.
type CheckoutRequest struct {
	AccountID string
	// Minor is the amount to pay, in minor units (cents).
	Minor int64
	// SaveCard opts into automatic recharge: the card is kept on file
	// (setup_future_usage off_session) and recharges start once paid.
	SaveCard bool
	// SuccessURL and CancelURL are where Checkout sends the browser back.
	SuccessURL, CancelURL string
}

// Checkout creates a Checkout Session for a top-up and returns the URL to
// send the browser to. Nothing is credited here: only the signed
// checkout.session.completed event credits (webhook.go).
func (s *Service) Checkout(ctx context.Context, req CheckoutRequest) (string, error) {
	if !s.Enabled() {
		return "", ErrOff
	}
	if req.Minor < s.cfg.MinTopUp || req.Minor > s.cfg.MaxTopUp {
		lo, hi := s.Bounds()
		return "", fmt.Errorf("%w: between %s and %s credits", ErrAmount, lo, hi)
	}
	bs, err := s.cfg.Store.BillingSettings(ctx, req.AccountID)
	if err != nil {
		return "", err
	}
	meta := map[string]string{metaAccount: req.AccountID, metaKind: store.LedgerTopUp}
	pid := &stripe.CheckoutSessionCreatePaymentIntentDataParams{Metadata: meta}
	p := &stripe.CheckoutSessionCreateParams{
		Mode:              stripe.String(string(stripe.CheckoutSessionModePayment)),
		ClientReferenceID: stripe.String(req.AccountID),
		SuccessURL:        stripe.String(req.SuccessURL),
		CancelURL:         stripe.String(req.CancelURL),
		Metadata:          meta,
		PaymentIntentData: pid,
		LineItems: []*stripe.CheckoutSessionCreateLineItemParams{{
			Quantity: stripe.Int64(1),
			PriceData: &stripe.CheckoutSessionCreateLineItemPriceDataParams{
				Currency:   stripe.String(s.cfg.Currency),
				UnitAmount: stripe.Int64(req.Minor),
				ProductData: &stripe.CheckoutSessionCreateLineItemPriceDataProductDataParams{
					Name: stripe.String(fmt.Sprintf("%s credits", s.credits(req.Minor))),
				},
			},
		}},
	}
	if bs.Customer != "" {
		p.Customer = stripe.String(bs.Customer)
	} else if req.SaveCard {
		p.CustomerCreation = stripe.String(string(stripe.CheckoutSessionCustomerCreationAlways))
	}
	if req.SaveCard {
		pid.SetupFutureUsage = stripe.String(string(stripe.PaymentIntentSetupFutureUsageOffSession))
		meta[metaSave] = "1"
	}
	sess, err := s.sc.V1CheckoutSessions.Create(ctx, p)
	if err != nil {
		return "", fmt.Errorf("creating the checkout session: %w", err)
	}
	s.logger.Info("checkout session created", zapAccount(req.AccountID), zapString("session", sess.ID), zapMicros("credits", s.credits(req.Minor)))
	return sess.URL, nil
}

// MinorFor converts a top-up in credits to minor units; ErrAmount when it
// is not a whole number of them or out of bounds.
func (s *Service) MinorFor(c credits.Micros) (int64, error) {
	m := s.minor(c)
	if s.credits(m) != c || m < s.cfg.MinTopUp || m > s.cfg.MaxTopUp {
		lo, hi := s.Bounds()
		return 0, fmt.Errorf("%w: between %s and %s credits, in steps of %s", ErrAmount, lo, hi, s.credits(1))
	}
	return m, nil
}
