package caddymodule

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
	"go.uber.org/zap"

	"socialrouter/caddymodule/billing"
	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/router"
	"socialrouter/caddymodule/store"
	"socialrouter/internal/bufpool"
)

// newRunID returns "ext_" + a time-sortable ULID.
func newRunID(now time.Time) string {
	return "ext_" + strings.ToLower(ulid.MustNew(ulid.Timestamp(now), rand.Reader).String())
}

// extract serves POST /v1/extract/{platform}/{service}, in the order of
// DESIGN.md section 4: route, authenticate, validate, pre-check billing,
// route to offers, settle, answer.
func (h *Handler) extract(w http.ResponseWriter, r *http.Request, platform, service string) {
	reg := h.app.reg
	svc, apiErr := lookupService(reg, platform, []string{service})
	if apiErr != nil {
		apiErr.write(w)
		return
	}
	c, m, ok := h.authenticatedBody(w, r)
	if !ok {
		return
	}
	body, apiErr := parseExtract(svc, m)
	if apiErr != nil {
		apiErr.write(w)
		return
	}
	offers := svc.LiveOffers()
	if body.Pin != nil {
		offers = []*registry.Offer{body.Pin}
	}
	release, apiErr := h.precheck(r.Context(), c, offers)
	if apiErr != nil {
		apiErr.write(w)
		return
	}
	defer release()

	now := time.Now().UTC()
	run := &store.Run{
		ID:        newRunID(now),
		Platform:  svc.Platform,
		Service:   svc.Name,
		URL:       body.Inputs[0],
		CreatedAt: now,
		AccountID: c.key.AccountID,
		KeyID:     c.key.ID,
		Data:      []json.RawMessage{},
	}
	if svc.InputKind == registry.KindQuery {
		run.Queries = body.Raw
		run.URL = body.Raw[0]
	}
	bill := billing.New(h.app.store, run.ID, c.key, now)
	defer bill.Release(context.WithoutCancel(r.Context())) // a no-op once Settle captured
	res, err := h.app.router.Run(r.Context(), router.Request{
		Service: svc, Inputs: body.Inputs, Options: body.Options, Limit: body.Limit, Pin: body.Pin, Now: now, Budget: bill,
	})
	if h.refusedForMoney(w, r, bill, run, res, err) {
		return
	}
	h.finish(w, r, run, res, err, svc.Platform)
}

// finish settles a routed run (success or failure) and answers.
func (h *Handler) finish(w http.ResponseWriter, r *http.Request, run *store.Run, res *router.Result, err error, platform string) {
	run.CompletedAt = time.Now().UTC()
	// Settle even if the client went away: the upstream work is done and the
	// run must not be lost.
	ctx := context.WithoutCancel(r.Context())
	if err != nil {
		var f *router.Failure
		if !errors.As(err, &f) {
			f = &router.Failure{Status: http.StatusBadGateway, Code: "provider_error", Type: typeProvider, Message: err.Error()}
		}
		run.Status = "failed"
		run.Error = &store.RunError{Code: f.Code, Type: f.Type, Message: f.Message}
		run.Attempts = f.Attempts
		offer := ""
		if f.Offer != nil {
			offer = f.Offer.ID
			run.ServedBy = f.Offer.ID
			if run.Kind == "search" {
				run.Provider = f.Offer.Source.ID
			}
		}
		if _, serr := h.app.store.Settle(ctx, store.Settlement{Run: run, Offer: offer, Platform: platform, Now: run.CompletedAt}); serr != nil {
			h.logger.Error("storing failed run", zap.String("run_id", run.ID), zap.Error(serr))
		}
		e := newError(f.Status, f.Code, f.Type, f.Message).with("run_id", run.ID).with("attempts", nonNilAttempts(f.Attempts))
		e.retryAfter = f.RetryAfter
		e.write(w)
		return
	}
	run.Status = "completed"
	run.ServedBy = res.Offer.ID
	if run.Kind == "search" {
		run.Provider = res.Offer.Source.ID
		run.ServedBy = ""
	}
	run.Attempts = res.Attempts
	run.Data = res.Records
	if run.Data == nil {
		run.Data = []json.RawMessage{}
	}
	run.Pagination.Total = res.Total
	sr, serr := h.app.store.Settle(ctx, store.Settlement{
		Run: run, Price: res.Offer.Price, Offer: res.Offer.ID, Platform: platform, Now: run.CompletedAt,
	})
	if serr != nil {
		h.logger.Error("settling run", zap.String("run_id", run.ID), zap.Error(serr))
		newError(http.StatusServiceUnavailable, "store_unavailable", "internal",
			"the run could not be recorded, so nothing was charged; retry shortly").with("run_id", run.ID).write(w)
		return
	}
	h.logger.Debug("run settled", zap.String("run_id", run.ID), zap.String("offer", res.Offer.ID),
		zap.Int("records", sr.Records), zap.Stringer("charged", sr.Charged))
	writeRun(w, run)
}

func nonNilAttempts(a []store.Attempt) []store.Attempt {
	if a == nil {
		return []store.Attempt{}
	}
	return a
}

// authenticatedBody authenticates the caller and reads the JSON object
// body, answering the error itself when either fails.
func (h *Handler) authenticatedBody(w http.ResponseWriter, r *http.Request) (*caller, map[string]json.RawMessage, bool) {
	c, apiErr := h.authenticate(r)
	if apiErr == nil {
		var m map[string]json.RawMessage
		if m, apiErr = readObject(w, r); apiErr == nil {
			return c, m, true
		}
	}
	apiErr.write(w)
	return nil, nil, false
}

// precheck runs the billing checks before any upstream call: the balance
// pays for at least one record at the cheapest candidate offer, the key's
// credit limit is not reached, and the account is under its concurrency
// cap. It returns the release of the in-flight slot.
func (h *Handler) precheck(ctx context.Context, c *caller, offers []*registry.Offer) (func(), *apiError) {
	acct, err := h.app.store.GetAccount(ctx, c.key.AccountID)
	if err != nil {
		h.logger.Error("reading account", zap.Error(err))
		return nil, newError(http.StatusServiceUnavailable, "store_unavailable", "internal", "the account store is unavailable; retry shortly")
	}
	cheapest := credits.Micros(0)
	for i, o := range offers {
		if i == 0 || o.Price < cheapest {
			cheapest = o.Price
		}
	}
	if acct.Balance < cheapest {
		return nil, newError(http.StatusPaymentRequired, "insufficient_credits", typeBilling,
			fmt.Sprintf("balance %s credits does not pay for one record at %s credits; add credits to the account", acct.Balance, cheapest)).
			with("balance", acct.Balance).with("price_per_record", cheapest)
	}
	if lim := c.key.CreditLimit; lim != nil {
		now := time.Now().UTC()
		spent, err := h.app.store.KeySpend(ctx, c.key.ID, lim.Period, now)
		if err != nil {
			h.logger.Error("reading key spend", zap.Error(err))
			return nil, newError(http.StatusServiceUnavailable, "store_unavailable", "internal", "the account store is unavailable; retry shortly")
		}
		if spent >= lim.Credits {
			end := store.PeriodEnd(lim.Period, now)
			e := newError(http.StatusTooManyRequests, "credit_limit_exceeded", typeRateLimit,
				fmt.Sprintf("credit limit exceeded: this key spent %s of its %s credits per %s; the limit resets at %s",
					spent, lim.Credits, lim.Period, end.Format(time.RFC3339))).
				with("period", lim.Period).with("limit", lim.Credits).with("spent", spent).with("resets_at", end.Format(time.RFC3339))
			e.retryAfter = end.Sub(now)
			return nil, e
		}
	}
	release, ok := h.app.acquireRun(c.key.AccountID)
	if !ok {
		e := newError(http.StatusTooManyRequests, "too_many_concurrent_runs", typeRateLimit,
			fmt.Sprintf("this account already has %d runs in flight; wait for one to finish", h.app.MaxConcurrentRuns))
		e.retryAfter = time.Second
		return nil, e
	}
	return release, nil
}

// runBufs holds the buffers runs are answered from (stored runs read by
// GET /v1/extractions/{id}, runs encoded by writeRun): a fresh buffer per
// look-up made the garbage collector that route's largest cost.
var runBufs bufpool.Pool

// getRun serves GET /v1/extractions/{id}, scoped to the caller's account.
func (h *Handler) getRun(w http.ResponseWriter, r *http.Request, id string) {
	c, apiErr := h.authenticate(r)
	if apiErr != nil {
		apiErr.write(w)
		return
	}
	notFound := func() {
		newError(http.StatusNotFound, "not_found", typeNotFound, fmt.Sprintf("no run %q in this account", id)).write(w)
	}
	if !strings.HasPrefix(id, "ext_") {
		notFound()
		return
	}
	buf := runBufs.Get(0)
	defer runBufs.Put(buf)
	b, err := h.app.store.GetRunJSON(r.Context(), (*buf)[:0], c.key.AccountID, id)
	*buf = b
	if errors.Is(err, store.ErrNotFound) {
		notFound()
		return
	}
	if err != nil {
		h.logger.Error("reading run", zap.Error(err))
		newError(http.StatusServiceUnavailable, "store_unavailable", "internal", "the account store is unavailable; retry shortly").write(w)
		return
	}
	// The stored document is the answer: served as stored, not decoded and
	// encoded again.
	writeRaw(w, http.StatusOK, b)
}
