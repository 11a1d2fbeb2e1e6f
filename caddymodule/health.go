package caddymodule

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"socialrouter/caddymodule/metrics"
)

// readyTimeout bounds the store ping of a readiness check, so a load
// balancer's probe gets its answer well within its own timeout.
const readyTimeout = 2 * time.Second

// storeDown remembers the last readiness verdict on the store, so an outage
// logs once when it starts and once when it ends, not on every probe.
var storeDown atomic.Bool

// health serves GET /v1/health/live (the process serves HTTP) and
// GET /v1/health/ready (the registry is loaded and the store answers a ping
// within readyTimeout; 503 not_ready otherwise). Both are public.
func (h *Handler) health(w http.ResponseWriter, r *http.Request, probe string) {
	switch probe {
	case "live":
		writeJSON(w, http.StatusOK, map[string]any{"status": "live"})
	case "ready":
		checks := map[string]string{"registry": "ok", "store": "ok"}
		if h.app.reg == nil || len(h.app.reg.Services) == 0 {
			checks["registry"] = "not_loaded"
		}
		if err := h.pingStore(r.Context()); err != nil {
			checks["store"] = "unavailable"
		}
		if checks["registry"] != "ok" || checks["store"] != "ok" {
			newError(http.StatusServiceUnavailable, "not_ready", "internal",
				"this node is not ready to serve calls; see checks").with("checks", checks).write(w)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"status": "ready", "checks": checks})
	default:
		newError(http.StatusNotFound, "not_found", typeNotFound,
			"no health probe "+probe+"; use /v1/health/live or /v1/health/ready").write(w)
	}
}

// pingStore asks the store whether it answers, logging when the verdict
// changes.
func (h *Handler) pingStore(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	var err error
	if p, ok := h.app.store.(metrics.Pinger); ok {
		err = p.Ping(ctx)
	} else {
		err = errNoPing
	}
	switch down := err != nil; {
	case down && !storeDown.Swap(true):
		h.logger.Warn("store unavailable: reporting not ready", zap.Error(err))
	case !down && storeDown.Swap(false):
		h.logger.Info("store available again: reporting ready")
	}
	return err
}

// errNoPing is the readiness verdict on a store that cannot be pinged.
var errNoPing = errors.New("the store cannot be pinged")
