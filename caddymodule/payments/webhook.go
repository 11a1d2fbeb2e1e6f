package payments

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/webhook"
	"go.uber.org/zap"

	"socialrouter/caddymodule/store"
)

// maxEventBytes bounds an event's body (Stripe's are a few KB).
const maxEventBytes = 1 << 20

// handlers are the events the gateway acts on; Stripe's others are
// acknowledged and ignored. Each returns nil once the event is applied
// (or was before): only then does the route answer 2xx.
var handlers = map[stripe.EventType]func(s *Service, ctx context.Context, ev stripe.Event) error{
	stripe.EventTypeCheckoutSessionCompleted:             (*Service).checkoutPaid,
	stripe.EventTypeCheckoutSessionAsyncPaymentSucceeded: (*Service).checkoutPaid,
	stripe.EventTypePaymentIntentSucceeded:               (*Service).rechargePaid,
	stripe.EventTypePaymentIntentPaymentFailed:           (*Service).rechargeFailedEvent,
	stripe.EventTypePaymentIntentRequiresAction:          (*Service).rechargeFailedEvent,
	stripe.EventTypeChargeRefunded:                       (*Service).refunded,
}

// ServeWebhook verifies an event's signature and age with the SDK and
// applies it. 400: not signed with the webhook secret, or too old (Stripe
// does not retry it, and must not); 500: the store failed (Stripe retries);
// 200: applied now or before, or an event the gateway does not act on.
func (s *Service) ServeWebhook(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeJSON(w, http.StatusMethodNotAllowed, "method_not_allowed", "POST only")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxEventBytes))
	if err != nil {
		writeJSON(w, http.StatusRequestEntityTooLarge, "request_too_large", "the event is too large")
		return
	}
	ev, err := webhook.ConstructEventWithOptions(body, r.Header.Get("Stripe-Signature"), s.cfg.WebhookSecret,
		webhook.ConstructEventOptions{Tolerance: s.cfg.Tolerance})
	if err != nil {
		s.logger.Warn("stripe event refused, nothing credited", zap.String("reason", refusal(err)), zap.Error(err), zap.String("remote", r.RemoteAddr))
		writeJSON(w, http.StatusBadRequest, "invalid_signature", refusal(err))
		return
	}
	h, ok := handlers[ev.Type]
	if !ok {
		writeJSON(w, http.StatusOK, "", "")
		return
	}
	if err := h(s, r.Context(), ev); err != nil {
		s.logger.Error("stripe event not applied; Stripe will retry it", zap.String("event", ev.ID), zap.String("type", string(ev.Type)), zap.Error(err))
		writeJSON(w, http.StatusInternalServerError, "internal_error", "the event could not be applied; retry")
		return
	}
	writeJSON(w, http.StatusOK, "", "")
}

// refusal says why a signed event was refused, for the log and the answer.
func refusal(err error) string {
	switch {
	case errors.Is(err, webhook.ErrNotSigned):
		return "no Stripe-Signature header"
	case errors.Is(err, webhook.ErrInvalidHeader):
		return "malformed Stripe-Signature header"
	case errors.Is(err, webhook.ErrTooOld):
		return "the signature's timestamp is outside the tolerance (stale or replayed)"
	case errors.Is(err, webhook.ErrNoValidSignature):
		return "no signature matches the webhook secret"
	}
	return "the event could not be verified: " + err.Error()
}

func writeJSON(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if code == "" {
		io.WriteString(w, `{"received":true}`)
		return
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]string{"code": code, "message": msg, "type": "payments"}})
	w.Write(b)
}

// checkoutPaid credits a paid Checkout Session, once per session whichever
// event reports it (completed for a card, async_payment_succeeded for a
// delayed method): the applied key is the session's id.
func (s *Service) checkoutPaid(ctx context.Context, ev stripe.Event) error {
	var cs stripe.CheckoutSession
	if err := json.Unmarshal(ev.Data.Raw, &cs); err != nil {
		return err
	}
	log := s.logger.With(zap.String("event", ev.ID), zap.String("session", cs.ID))
	if cs.PaymentStatus != stripe.CheckoutSessionPaymentStatusPaid {
		log.Info("checkout session not paid yet: credited when its payment succeeds", zap.String("payment_status", string(cs.PaymentStatus)))
		return nil
	}
	account := cs.ClientReferenceID
	if account == "" {
		account = cs.Metadata[metaAccount]
	}
	ref := cs.ID
	if cs.PaymentIntent != nil && cs.PaymentIntent.ID != "" {
		ref = cs.PaymentIntent.ID
	}
	amount := s.credits(cs.AmountTotal)
	key := "checkout:" + cs.ID
	if string(cs.Currency) != s.cfg.Currency {
		return s.orphan(ctx, log, store.OrphanPayment{EventID: key, AccountID: account, Reference: ref, Amount: 0,
			Reason: "paid in " + string(cs.Currency) + ", payments are configured in " + s.cfg.Currency})
	}
	if ok, err := s.accountExists(ctx, account); err != nil || !ok {
		if err != nil {
			return err
		}
		return s.orphan(ctx, log, store.OrphanPayment{EventID: key, AccountID: account, Reference: ref, Amount: amount, Reason: "unknown account"})
	}
	pi := s.paymentIntent(ctx, ref)
	e, applied, err := s.apply(ctx, log, store.LedgerEntry{AccountID: account, Kind: store.LedgerTopUp, Amount: amount, EventID: key,
		Reference: ref, ReceiptURL: receiptURL(pi), Reason: "card payment, Checkout " + cs.ID})
	if err != nil || !applied {
		return err
	}
	if cs.Metadata[metaSave] == "1" && cs.Customer != nil && cs.Customer.ID != "" {
		s.saveCard(ctx, log, account, cs.Customer.ID, pi)
	}
	s.balanceRaised(ctx, account, e.Balance)
	return nil
}

// accountExists reports whether the account is in the store.
func (s *Service) accountExists(ctx context.Context, id string) (bool, error) {
	if id == "" {
		return false, nil
	}
	_, err := s.cfg.Store.GetAccount(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// orphan records a payment no account takes, for the operator.
func (s *Service) orphan(ctx context.Context, log *zap.Logger, o store.OrphanPayment) error {
	o.CreatedAt = s.now()
	err := s.cfg.Store.RecordOrphan(ctx, o)
	if errors.Is(err, store.ErrDuplicateEvent) {
		return nil
	}
	if err == nil {
		log.Warn("payment credited to no account: recorded for the operator (caddy sdr payments orphans)",
			zap.String("reason", o.Reason), zapAccount(o.AccountID), zapMicros("credits", o.Amount))
	}
	return err
}

// paymentIntent retrieves a PaymentIntent with its latest charge, for the
// receipt and the card; nil when it cannot (the credit does not wait).
func (s *Service) paymentIntent(ctx context.Context, id string) *stripe.PaymentIntent {
	if len(id) < 3 || id[:3] != "pi_" {
		return nil
	}
	p := &stripe.PaymentIntentRetrieveParams{}
	p.AddExpand("latest_charge")
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	pi, err := s.sc.V1PaymentIntents.Retrieve(ctx, id, p)
	if err != nil {
		s.logger.Warn("reading the payment intent for its receipt", zap.String("payment_intent", id), zap.Error(err))
		return nil
	}
	return pi
}

func receiptURL(pi *stripe.PaymentIntent) string {
	if pi == nil || pi.LatestCharge == nil {
		return ""
	}
	return pi.LatestCharge.ReceiptURL
}

// refunded debits what a charge's refunds came to: the event carries the
// total refunded so far, so the store moves only what is missing, and an
// earlier total arriving late moves nothing.
func (s *Service) refunded(ctx context.Context, ev stripe.Event) error {
	var ch stripe.Charge
	if err := json.Unmarshal(ev.Data.Raw, &ch); err != nil {
		return err
	}
	ref := ch.ID
	if ch.PaymentIntent != nil && ch.PaymentIntent.ID != "" {
		ref = ch.PaymentIntent.ID
	}
	log := s.logger.With(zap.String("event", ev.ID), zap.String("charge", ch.ID))
	amount := s.credits(ch.AmountRefunded)
	account, err := s.cfg.Store.ReferenceAccount(ctx, ref)
	if errors.Is(err, store.ErrNotFound) {
		return s.orphan(ctx, log, store.OrphanPayment{EventID: ev.ID, Reference: ref, Amount: -amount, Reason: "refund of a payment no account was credited for"})
	}
	if err != nil {
		return err
	}
	_, _, err = s.apply(ctx, log, store.LedgerEntry{AccountID: account, Kind: store.LedgerRefund, Amount: -amount, EventID: ev.ID,
		Reference: ref, ReceiptURL: ch.ReceiptURL, Reason: "refund of " + ref, Cumulative: true, Clamp: true})
	return err
}

// apply moves credits for a provider event and logs the outcome; applied
// is false when the event was applied before (nothing changed).
func (s *Service) apply(ctx context.Context, log *zap.Logger, e store.LedgerEntry) (store.LedgerEntry, bool, error) {
	moved, err := s.cfg.Store.Move(ctx, e)
	if errors.Is(err, store.ErrDuplicateEvent) {
		log.Info("payment event applied before: nothing changed", zap.String("kind", e.Kind), zapAccount(e.AccountID))
		return moved, false, nil
	}
	if err != nil {
		return moved, false, err
	}
	log.Info("credits moved", zap.String("kind", e.Kind), zapAccount(e.AccountID), zapMicros("credits", moved.Amount), zapMicros("balance", moved.Balance))
	return moved, true, nil
}
