package sources

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Callbacks: where a source's upstream is reachable from the gateway's
// public edge (a source's callback_base), a call's upstream work is started
// with the upstream's documented callback parameters (the actor platform's
// ad-hoc webhooks, the dataset provider's notify and auth_header), and its
// waiter waits for the callback instead of polling, polling only after
// CallbackConfig.Fallback without one (a lost callback still completes).
// The callback's route (CallbackPrefix) is served by package callbacks,
// which checks the token of the URL (CallbackToken) and hands the news to a
// Waker; today's Waker is a process-local hub whose Waits the clients
// select on.

// CallbackPrefix is the path under which the gateway receives upstream
// callbacks: POST {callback_base}/_sdr/callbacks/{source}/{run}/{batch}/{token}.
// It is outside /v1: no API key reaches it, the token is its credential.
const CallbackPrefix = "/_sdr/callbacks/"

// DefaultCallbackFallback is how long a waiter waits for a callback before
// it polls as if it had none.
const DefaultCallbackFallback = 2 * time.Minute

// MinCallbackSecret is the shortest callback secret accepted, in bytes.
const MinCallbackSecret = 32

// JobState is how upstream work ended, as a callback reports it.
type JobState string

// The states of ended upstream work. An actor run reports all four; a
// snapshot's notify reports succeeded (ready) or failed.
const (
	JobSucceeded JobState = "succeeded"
	JobFailed    JobState = "failed"
	JobAborted   JobState = "aborted"
	JobTimedOut  JobState = "timed_out"
)

// CallbackConfig is a source's callback setting (Config.Callbacks).
type CallbackConfig struct {
	// Source is the source id, part of the callback's path and token.
	Source string
	// Base is the public base URL at which the upstream reaches the
	// gateway, e.g. https://api.example.com.
	Base string
	// Secret keys the callback tokens (CallbackToken) and the dataset
	// provider's auth_header (CallbackAuth); every node shares it.
	Secret []byte
	// Fallback is how long a waiter waits for the callback before it
	// polls; default DefaultCallbackFallback.
	Fallback time.Duration
	// Waits registers the waiters the callbacks wake.
	Waits Waits
}

// Waits registers waiters for callbacks. A batch registers before it
// starts its upstream work, so a callback that comes back before the
// start's answer still finds it.
type Waits interface {
	Register(source, runID string, batch int) Wait
}

// Wait is one batch's registration for its callback.
type Wait interface {
	// Bind names the upstream work the callback will report, once started.
	Bind(h Handle)
	// Woken is closed when the callback reported the end of the work.
	Woken() <-chan struct{}
	// Finished is how the work ended, once Woken is closed.
	Finished() JobState
	// Close ends the registration; later callbacks for it are replays.
	Close()
}

// CallbackToken is the token of the callback URL of batch of run on
// source: HMAC-SHA256 under secret, base64url. It is unguessable without the
// secret, different for every run and batch, and the same on every node.
func CallbackToken(secret []byte, source, runID string, batch int) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("sdr callback\x00" + source + "\x00" + runID + "\x00" + strconv.Itoa(batch)))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// CheckCallbackToken reports, in constant time, whether token is the
// callback token of batch of run on source.
func CheckCallbackToken(secret []byte, source, runID string, batch int, token string) bool {
	return hmac.Equal([]byte(token), []byte(CallbackToken(secret, source, runID, batch)))
}

// CallbackAuth is the Authorization header the dataset provider is asked
// to send with its notify (its documented auth_header): a bearer secret
// derived from the callback secret for source, checked besides the URL's
// token.
func CallbackAuth(secret []byte, source string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("sdr callback auth_header\x00" + source))
	return "Bearer " + hex.EncodeToString(m.Sum(nil))
}

// url is the callback URL of batch of run.
func (cb *CallbackConfig) url(runID string, batch int) string {
	return strings.TrimRight(cb.Base, "/") + CallbackPrefix + url.PathEscape(cb.Source) + "/" +
		url.PathEscape(runID) + "/" + strconv.Itoa(batch) + "/" + CallbackToken(cb.Secret, cb.Source, runID, batch)
}

// fallback is the wait before polling anyway.
func (cb *CallbackConfig) fallback() time.Duration {
	if cb.Fallback > 0 {
		return cb.Fallback
	}
	return DefaultCallbackFallback
}

// callback returns the wait of call c, registered, or nil when c's work is
// not waited for by callback (none configured, or the caller named no
// run). The caller closes it.
func (b *base) callback(c Call) Wait {
	cb := b.cfg.Callbacks
	if cb == nil || cb.Waits == nil || c.RunID == "" {
		return nil
	}
	return cb.Waits.Register(cb.Source, c.RunID, c.Batch)
}

// awaitCallback waits for w's callback, at most the fallback wait (which
// the caller is told of: silence within it is not a stall). It returns the
// state reported and true, or false when the wait ended without one (the
// caller then polls).
func (b *base) awaitCallback(ctx context.Context, c Call, w Wait) (JobState, bool) {
	if w == nil {
		return "", false
	}
	d := b.cfg.Callbacks.fallback()
	if dl, ok := ctx.Deadline(); ok {
		d = min(d, time.Until(dl))
	}
	c.waiting(d)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.Woken():
		if c.Activity != nil {
			c.Activity()
		}
		return w.Finished(), true
	case <-t.C:
		b.log.Debug("no callback within the fallback wait; polling")
	case <-ctx.Done():
	}
	return "", false
}

// actorWebhooks is the actor platform's ad-hoc webhooks parameter of a
// run start: a base64-encoded JSON array of webhook definitions, here one
// for every end of the run, posting the default payload to the callback
// URL (the platform documents no signature; the token in the URL is the
// credential its documentation advises).
func actorWebhooks(callbackURL string) string {
	defs := []map[string]any{{
		"eventTypes": []string{"ACTOR.RUN.SUCCEEDED", "ACTOR.RUN.FAILED", "ACTOR.RUN.ABORTED", "ACTOR.RUN.TIMED_OUT"},
		"requestUrl": callbackURL,
	}}
	b, _ := json.Marshal(defs)
	return base64.StdEncoding.EncodeToString(b)
}

// ActorRunState maps an actor run webhook's event type to how the run
// ended.
func ActorRunState(eventType string) (JobState, error) {
	switch eventType {
	case "ACTOR.RUN.SUCCEEDED":
		return JobSucceeded, nil
	case "ACTOR.RUN.FAILED":
		return JobFailed, nil
	case "ACTOR.RUN.ABORTED":
		return JobAborted, nil
	case "ACTOR.RUN.TIMED_OUT":
		return JobTimedOut, nil
	}
	return "", errors.New("event type " + strconv.Quote(eventType) + " is not the end of an actor run")
}

// SnapshotState maps a notify's snapshot status to how the collection
// ended.
func SnapshotState(status string) (JobState, error) {
	switch status {
	case "ready":
		return JobSucceeded, nil
	case "failed":
		return JobFailed, nil
	case "cancelled", "canceled":
		return JobAborted, nil
	}
	return "", errors.New("snapshot status " + strconv.Quote(status) + " is not the end of a collection")
}
