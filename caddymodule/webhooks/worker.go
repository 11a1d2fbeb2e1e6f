package webhooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"socialrouter/caddymodule/store"
)

// maxResponseRead is how much of a receiver's answer is read (and
// discarded, so the connection can be reused); the rest is not waited for.
const maxResponseRead = 64 << 10

// userAgent names the sender to receivers.
const userAgent = "SocialDataRouter-Webhooks/1"

// Start runs the worker in the background until Stop. Deliveries are
// claimed through the store, so several workers (config generations
// overlapping during a reload, or several nodes on PostgreSQL) never make
// the same attempt.
func (s *Service) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	actx, acancel := context.WithCancel(context.Background())
	s.cancel, s.cancelAttempts, s.done = cancel, acancel, make(chan struct{})
	go s.loop(ctx, actx, s.done)
}

// stopGrace is how long Stop lets the attempts in flight finish before it
// cuts them short.
const stopGrace = 2 * time.Second

// Stop ends the worker: it claims nothing more, lets the attempts in
// flight finish for up to stopGrace and records them, then cuts the rest
// short. An attempt cut short is not recorded (the receiver may or may not
// have it), and its delivery is claimed again when its lease ends.
func (s *Service) Stop() {
	s.mu.Lock()
	cancel, cancelAttempts, done := s.cancel, s.cancelAttempts, s.done
	s.cancel, s.cancelAttempts, s.done = nil, nil, nil
	s.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	select {
	case <-done:
	case <-time.After(stopGrace):
	}
	cancelAttempts()
	<-done
}

// poke wakes the worker for work just queued.
func (s *Service) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// loop runs RunDue when woken or every poll interval until ctx ends;
// the attempts run under actx, which Stop cancels only after its grace.
func (s *Service) loop(ctx, actx context.Context, done chan struct{}) {
	defer close(done)
	t := time.NewTimer(0)
	defer t.Stop()
	var pruned time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.wake:
		}
		if now := s.now(); now.Sub(pruned) >= pruneEvery {
			pruned = now
			if _, err := s.Prune(actx); err != nil && actx.Err() == nil {
				s.logger.Error("pruning webhook deliveries", zap.Error(err))
			}
		}
		n, err := s.RunDue(actx)
		if err != nil && actx.Err() == nil {
			s.logger.Error("webhook deliveries", zap.Error(err))
		}
		wait := s.poll
		if n == s.workers { // a full batch: there may be more due
			wait = 0
		}
		t.Reset(wait)
	}
}

// lease is how long a claimed delivery stays with its worker: well past
// the longest attempt.
func (s *Service) lease() time.Duration { return 4*s.timeout + time.Minute }

// RunDue claims the deliveries due now (a batch of Concurrency), attempts
// them at once and records each outcome; it returns how many it
// attempted. The worker calls it; tests call it after moving the clock.
func (s *Service) RunDue(ctx context.Context) (int, error) {
	ds, err := s.store.ClaimDeliveries(ctx, s.now(), s.lease(), s.workers)
	if err != nil {
		return 0, err
	}
	var wg sync.WaitGroup
	for _, d := range ds {
		wg.Go(func() { s.attempt(ctx, d) })
	}
	wg.Wait()
	return len(ds), nil
}

// pruneBatch bounds one store transaction of Prune.
const pruneBatch = 500

// Prune deletes the deliveries finished longer than the retention ago,
// in batches; it returns how many. The worker calls it hourly.
func (s *Service) Prune(ctx context.Context) (int, error) {
	before := s.now().Add(-s.keep)
	total := 0
	for {
		n, err := s.store.PruneDeliveries(ctx, before, pruneBatch)
		total += n
		if err != nil || n < pruneBatch {
			return total, err
		}
	}
}

// attempt makes one attempt of a claimed delivery and records it.
func (s *Service) attempt(ctx context.Context, d store.WebhookDelivery) {
	log := s.logger.With(zap.String("delivery", d.ID), zap.String("endpoint", d.EndpointID), zap.Int("attempt", d.Attempts+1))
	e, err := s.store.GetWebhook(ctx, d.EndpointID)
	if errors.Is(err, store.ErrNotFound) {
		// Deleted meanwhile (its deliveries go with it, but one queued
		// during the deletion may remain): finish it, or it would be
		// claimed again at every lease's end.
		o := store.DeliveryOutcome{ID: d.ID, Attempt: d.Attempts + 1, At: s.now().UTC(), Status: store.DeliveryFailed, Error: "the endpoint was deleted"}
		if err := s.store.FinishDelivery(context.WithoutCancel(ctx), o); err != nil && !errors.Is(err, store.ErrStaleClaim) {
			log.Error("finishing a delivery of a deleted endpoint", zap.Error(err))
		}
		return
	}
	if err != nil {
		log.Error("reading webhook endpoint", zap.Error(err))
		return // the lease runs out and another claim retries
	}
	now := s.now().UTC()
	o := store.DeliveryOutcome{ID: d.ID, Attempt: d.Attempts + 1, At: now}
	// An answer received is recorded even when Stop came meanwhile:
	// otherwise the receiver would get the delivery again after the lease.
	rec := context.WithoutCancel(ctx)
	if e.DisabledAt != nil {
		o.Status, o.Error = store.DeliveryFailed, "the endpoint is disabled ("+e.DisabledReason+")"
	} else {
		start := time.Now()
		o.StatusCode, err = s.send(ctx, e, d, now)
		if err != nil && ctx.Err() != nil {
			return // Stop cut the attempt short: not the receiver's failure
		}
		took := time.Since(start)
		switch {
		case err == nil && o.StatusCode >= 200 && o.StatusCode < 300:
			o.Status = store.DeliverySucceeded
			s.observe("succeeded", took)
		case o.StatusCode == http.StatusGone:
			s.observe("gone", took)
			// The receiver asks for no more deliveries (Standard Webhooks).
			o.Status, o.Error = store.DeliveryFailed, "HTTP 410 Gone: the endpoint is disabled"
			if err := s.store.DisableWebhook(rec, e.ID, now, "the receiver answered 410 Gone"); err != nil {
				log.Error("disabling webhook endpoint", zap.Error(err))
			}
		default:
			if err != nil {
				o.Error = err.Error()
			} else {
				o.Error = "HTTP " + strconv.Itoa(o.StatusCode)
			}
			if wait, ok := s.retryAfter(o.Attempt); ok {
				o.Status, o.NextAt = store.DeliveryPending, now.Add(wait)
				s.observe("retry", took)
			} else {
				o.Status = store.DeliveryFailed
				s.observe("failed", took)
			}
		}
	}
	if err := s.store.FinishDelivery(rec, o); err != nil {
		if errors.Is(err, store.ErrStaleClaim) {
			log.Warn("webhook attempt made after its lease ran out", zap.Error(err))
			return
		}
		log.Error("recording webhook attempt", zap.Error(err))
		return
	}
	log.Debug("webhook attempt", zap.String("status", o.Status), zap.Int("code", o.StatusCode), zap.String("error", o.Error))
}

// send posts the delivery once and returns the receiver's status code (0
// with an error when there was no HTTP answer).
func (s *Service) send(ctx context.Context, e store.WebhookEndpoint, d store.WebhookDelivery, now time.Time) (int, error) {
	secrets := []string{e.Secret}
	if e.PreviousSecret != "" && now.Before(e.PreviousUntil) {
		secrets = append(secrets, e.PreviousSecret)
	}
	sig, err := Sign(secrets, d.ID, now, d.Payload)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout+5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.URL, bytes.NewReader(d.Payload))
	if err != nil {
		return 0, fmt.Errorf("building request: %v", err)
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", userAgent)
	h["webhook-id"] = []string{d.ID}
	h["webhook-timestamp"] = []string{strconv.FormatInt(now.Unix(), 10)}
	h["webhook-signature"] = []string{sig}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, unwrapURLError(err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseRead))
	resp.Body.Close()
	return resp.StatusCode, nil
}

// unwrapURLError drops the "Post \"url\":" prefix of a client error: the
// log shows the URL already, and the message is what the customer reads.
func unwrapURLError(err error) error {
	if ue := (*url.Error)(nil); errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
