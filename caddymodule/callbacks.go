package caddymodule

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/caddyserver/caddy/v2"

	"socialrouter/caddymodule/callbacks"
	"socialrouter/caddymodule/sources"
	"socialrouter/caddymodule/store"
)

// Upstream callbacks (docs/upstreams.md): a source whose block sets
// callback_base has its runs started with the upstream's callback
// parameters, pointing at {callback_base}/_sdr/callbacks/…, which the
// handler serves (package callbacks) and the shared hub turns into the
// wake of the waiting batch.

// callbackConfig is source id's callback setting for its client, or nil
// when it has no callback_base.
func (a *App) callbackConfig(id string, cfg *SourceConfig) (*sources.CallbackConfig, error) {
	if cfg.CallbackBase == "" {
		if cfg.CallbackSecret != "" || cfg.CallbackFallback != 0 {
			return nil, fmt.Errorf("callback_secret and callback_fallback need callback_base")
		}
		return nil, nil
	}
	u, err := url.Parse(cfg.CallbackBase)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("callback_base %q is not an http(s) base URL", cfg.CallbackBase)
	}
	secret, err := cfg.callbackSecret()
	if err != nil {
		return nil, err
	}
	var waits sources.Waits
	if a.shared != nil && a.shared.hub != nil {
		waits = a.shared.hub
	}
	return &sources.CallbackConfig{Source: id, Base: cfg.CallbackBase, Secret: secret,
		Fallback: time.Duration(cfg.CallbackFallback), Waits: waits}, nil
}

// callbackSecret resolves the callback secret as token() does its token.
func (c *SourceConfig) callbackSecret() ([]byte, error) {
	s := caddy.NewReplacer().ReplaceAll(c.CallbackSecret, "")
	if len(s) < sources.MinCallbackSecret {
		return nil, fmt.Errorf("callback_base needs a callback_secret of at least %d bytes (the same on every node)", sources.MinCallbackSecret)
	}
	return []byte(s), nil
}

// serveCallback is the callbacks route: 404 for a source without
// callbacks, else package callbacks' handler over runWaker.
func (a *App) serveCallback(w http.ResponseWriter, r *http.Request) {
	wk := runWaker{hub: a.shared.hub}
	if a.async.worker != nil {
		wk.parked = a.async.worker
	}
	h := callbacks.Handler{Sources: a.callbackSource, Waker: wk, Log: a.logger.Named("callbacks")}
	h.ServeHTTP(w, r)
}

// callbackWait is api.Config.CallbackWait: source id's callback_fallback
// when it has callback_base, else 0.
func (a *App) callbackWait(id string) time.Duration {
	cfg := a.Sources[id]
	if cfg == nil || cfg.CallbackBase == "" {
		return 0
	}
	return cmp.Or(time.Duration(cfg.CallbackFallback), sources.DefaultCallbackFallback)
}

// runWaker wakes the batch a callback names: its goroutine when one waits
// for it on this node (the hub), else its run if parked, on whichever node
// (the async worker makes it due in the store; its owner's poller then
// checks and resumes it).
type runWaker struct {
	hub    *callbacks.Hub
	parked interface {
		Wake(ctx context.Context, runID string) error
	}
}

func (w runWaker) Wake(ctx context.Context, source, runID string, batch int, h sources.Handle, finished sources.JobState) error {
	err := w.hub.Wake(ctx, source, runID, batch, h, finished)
	if !errors.Is(err, callbacks.ErrNoWaiter) || w.parked == nil {
		return err
	}
	switch perr := w.parked.Wake(ctx, runID); {
	case errors.Is(perr, store.ErrNotFound):
		return err // no async run of that id: a sync call's batch that ended or waits elsewhere
	case perr != nil:
		return fmt.Errorf("waking parked run %s: %w", runID, perr)
	}
	return nil
}

// callbackSource finds source id's protocol and callback secret in the
// services serving now and this config.
func (a *App) callbackSource(id string) (callbacks.Source, bool) {
	cfg := a.Sources[id]
	if cfg == nil || cfg.CallbackBase == "" {
		return callbacks.Source{}, false
	}
	src, ok := a.current().reg.Source(id)
	if !ok {
		return callbacks.Source{}, false
	}
	secret, err := cfg.callbackSecret()
	if err != nil {
		return callbacks.Source{}, false
	}
	return callbacks.Source{Protocol: src.Protocol, Secret: secret}, true
}
