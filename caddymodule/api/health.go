package api

import (
	"context"
	"net/http"
	"time"

	"go.uber.org/zap"

	"socialrouter/caddymodule/metrics"
)

// readyTimeout bounds the store ping of a readiness check, so a load
// balancer's probe gets its answer well within its own timeout.
const readyTimeout = 2 * time.Second

// health serves GET /v1/health/live (the process serves HTTP) and
// GET /v1/health/ready (the registry is loaded, the store answers a ping
// within readyTimeout and can write; 503 not_ready otherwise). Both are public.
func (a *API) health(w http.ResponseWriter, r *http.Request) {
	switch probe := r.PathValue("probe"); probe {
	case "live":
		writeJSON(w, http.StatusOK, map[string]any{"status": "live"})
	case "ready":
		checks := map[string]string{"registry": "ok", "store": "ok"}
		if a.Registry == nil || len(a.Registry.Services) == 0 {
			checks["registry"] = "not_loaded"
		}
		if err := a.pingStore(r.Context()); err != nil {
			checks["store"] = "unavailable"
		} else if reason := metrics.Unwritable(a.Store.Writable()); reason != "" {
			checks["store"] = reason // disk_full or write_failed: calls would be refused
		}
		if checks["registry"] != "ok" || checks["store"] != "ok" {
			newError(http.StatusServiceUnavailable, "not_ready", typeInternal,
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
// changes: an outage logs once when it starts and once when it ends, not on
// every probe.
func (a *API) pingStore(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	err := a.Store.Ping(ctx)
	switch down := err != nil; {
	case down && !a.storeDown.Swap(true):
		a.Logger.Warn("store unavailable: reporting not ready", zap.Error(err))
	case !down && a.storeDown.Swap(false):
		a.Logger.Info("store available again: reporting ready")
	}
	return err
}
