package caddymodule

import (
	"net/http"
	"time"

	"go.uber.org/zap"

	"socialrouter/caddymodule/metrics"
	"socialrouter/caddymodule/router"
	"socialrouter/caddymodule/store"
)

// runIDHeader carries the run id on every run answer (completed or
// failed), so support can find the call's log line.
const runIDHeader = "X-Run-Id"

// callWriter records what a run call answered, for its metric and its log
// line: the status, the error code (apiError.write reports it) and the run
// (finish reports it).
type callWriter struct {
	http.ResponseWriter
	status int
	code   string
	run    *store.Run
}

func (cw *callWriter) WriteHeader(status int) {
	if cw.status == 0 {
		cw.status = status
	}
	cw.ResponseWriter.WriteHeader(status)
}

func (cw *callWriter) Write(b []byte) (int, error) {
	if cw.status == 0 {
		cw.status = http.StatusOK
	}
	return cw.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (cw *callWriter) Unwrap() http.ResponseWriter { return cw.ResponseWriter }

// recordCode notes the error code of the answer.
func (cw *callWriter) recordCode(code string) { cw.code = code }

// codeRecorder is what apiError.write tells the error code to.
type codeRecorder interface{ recordCode(code string) }

// noteRun sets the run id header and keeps the run for the call's log
// line; finish calls it before answering.
func noteRun(w http.ResponseWriter, run *store.Run) {
	w.Header().Set(runIDHeader, run.ID)
	if cw, ok := w.(*callWriter); ok {
		cw.run = run
	}
}

// startCall wraps w when the request is a run call (extract or search) and
// returns the function that counts and logs the call once answered.
func (h *Handler) startCall(w http.ResponseWriter, r *http.Request, seg []string) (http.ResponseWriter, func()) {
	service, ok := h.callService(r.Method, seg)
	if !ok {
		return w, func() {}
	}
	cw := &callWriter{ResponseWriter: w}
	start := time.Now()
	return cw, func() { h.endCall(cw, service, time.Since(start)) }
}

// callService is the metric label of a run call: the declared service key,
// "search", or "unknown" for a path that names no service (never the raw
// path, so the label set stays bounded).
func (h *Handler) callService(method string, seg []string) (string, bool) {
	if method != http.MethodPost {
		return "", false
	}
	var platform, name string
	switch {
	case len(seg) == 1 && seg[0] == "search":
		return "search", true
	case len(seg) == 3 && seg[0] == "extract":
		platform, name = seg[1], seg[2]
	case len(seg) == 2 && !reservedRoot[seg[0]]:
		platform, name = seg[0], seg[1]
	default:
		return "", false
	}
	if svc, ok := h.app.reg.Service(platform, name); ok {
		return svc.Key, true
	}
	return "unknown", true
}

// reservedRoot are the first path segments that are not platforms.
var reservedRoot = map[string]bool{"services": true, "providers": true, "extractions": true, "account": true, "health": true}

// endCall counts the call and writes its one log line: never the secret
// key or the inputs, only ids, counts and the outcome.
func (h *Handler) endCall(cw *callWriter, service string, d time.Duration) {
	metrics.Call(service, cw.status, cw.code)
	fields := []zap.Field{zap.String("service", service), zap.Int("status", cw.status), zap.Duration("duration", d)}
	if cw.code != "" {
		fields = append(fields, zap.String("code", cw.code))
	}
	if run := cw.run; run != nil {
		offer := ""
		if n := len(run.Attempts); n > 0 {
			offer = run.Attempts[n-1].Offer
		}
		fields = append(fields,
			zap.String("run_id", run.ID), zap.String("account_id", run.AccountID), zap.String("key_id", run.KeyID),
			zap.String("offer", offer), zap.String("outcome", run.Status),
			zap.Int("records", run.Pagination.Returned), zap.String("credits", run.CreditsUsed.String()),
			zap.Int("attempts", len(run.Attempts)))
	}
	h.logger.Info("call", fields...)
}

// offerSources maps every live offer to its source, for the metrics' zero
// series.
func (a *App) offerSources() map[string]string {
	m := map[string]string{}
	for _, s := range a.reg.Services {
		for _, o := range s.LiveOffers() {
			m[o.ID] = o.Source.ID
		}
	}
	return m
}

// OfferStates reports the breaker of every live offer (metrics.StatusSource).
func (a *App) OfferStates() []metrics.OfferState {
	var out []metrics.OfferState
	for id, src := range a.offerSources() {
		st := metrics.BreakerClosed
		switch breakers.State(id) {
		case router.BreakerOpen:
			st = metrics.BreakerOpen
		case router.BreakerHalfOpen:
			st = metrics.BreakerHalfOpen
		}
		out = append(out, metrics.OfferState{Offer: id, Source: src, State: st})
	}
	return out
}

// SourceStatuses reports every source's status as /v1/providers shows it
// (metrics.StatusSource).
func (a *App) SourceStatuses() []metrics.SourceState {
	out := make([]metrics.SourceState, 0, len(a.reg.Sources))
	for _, src := range a.reg.Sources {
		out = append(out, metrics.SourceState{Source: src.ID, Status: a.sourceStatus(src.ID)})
	}
	return out
}

// Interface guards
var _ metrics.StatusSource = (*App)(nil)
