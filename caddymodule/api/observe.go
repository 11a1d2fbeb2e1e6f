package api

import (
	"context"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"

	"socialrouter/caddymodule/metrics"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/testmode"
)

// runIDHeader carries the run id on every run answer (completed or
// failed), so support can find the call's log line.
const runIDHeader = "X-Run-Id"

// call is the writer of a run call (extract or search): it records what
// the call answered, for its metric and its log line: the status, the
// error code (Error.write reports it) and the run (settle reports it
// through the request context).
type call struct {
	http.ResponseWriter
	status int
	code   string
	run    *runs.Run
	key    *store.Key // the authenticated key, for a call refused before its run
	// testKey: the bearer key is test-shaped (<prefix>_test_…), the mode of
	// a call refused before its key is known.
	testKey bool
}

func (c *call) WriteHeader(status int) {
	if c.status == 0 {
		c.status = status
	}
	c.ResponseWriter.WriteHeader(status)
}

func (c *call) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	return c.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (c *call) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// callKey holds the *call of a run call in its request context.
type callKey struct{}

// noteRun sets the run id header and keeps the run for the call's log
// line; settle calls it before the answer is written. Outside an HTTP run
// call (Extract or Search called directly) it does nothing.
func noteRun(ctx context.Context, run *runs.Run) {
	if c, ok := ctx.Value(callKey{}).(*call); ok {
		c.Header().Set(runIDHeader, run.ID)
		c.run = run
	}
}

// noteKey keeps the call's authenticated key for its log line, so a call
// refused after authentication (body, money, concurrency) still names its
// account and key. Outside an HTTP run call it does nothing.
func noteKey(ctx context.Context, key store.Key) {
	if c, ok := ctx.Value(callKey{}).(*call); ok {
		c.key = &key
	}
}

// observed wraps the handler of a run route: once answered, the call is
// counted (metrics.Call) and logged in one line. label names the service
// of the request.
func (a *API) observed(label func(*http.Request) string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c := &call{ResponseWriter: w, testKey: a.testShaped(r)}
		start := time.Now()
		h(c, r.WithContext(context.WithValue(r.Context(), callKey{}, c)))
		a.endCall(c, label(r), time.Since(start))
	}
}

// extractLabel is the metric label of an extraction call: the declared
// service key, or "unknown" for a path that names no service (never the
// raw path, so the label set stays bounded).
func (a *API) extractLabel(r *http.Request) string {
	if svc, ok := a.Registry.Service(r.PathValue("platform"), r.PathValue("service")); ok {
		return svc.Key
	}
	return "unknown"
}

// searchLabel is the metric label of every search call.
func searchLabel(*http.Request) string { return "search" }

// testShaped reports whether r's bearer key has the form of a test key.
func (a *API) testShaped(r *http.Request) bool {
	_, secret, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	return strings.HasPrefix(strings.TrimSpace(secret), a.KeyPrefix+"_test_")
}

// mode is the call's key mode: its run's or key's account, else the form
// of the key it presented.
func (c *call) mode() string {
	switch {
	case c.run != nil:
		return testmode.ModeOf(c.run.AccountID)
	case c.key != nil:
		return testmode.ModeOf(c.key.AccountID)
	case c.testKey:
		return testmode.Test
	}
	return testmode.Live
}

// endCall counts the call and writes its one log line: never the secret
// key or the inputs, only ids, counts and the outcome.
func (a *API) endCall(c *call, service string, d time.Duration) {
	mode := c.mode()
	metrics.Call(service, mode, c.status, c.code)
	fields := []zap.Field{zap.String("service", service), zap.String("mode", mode), zap.Int("status", c.status), zap.Duration("duration", d)}
	if c.code != "" {
		fields = append(fields, zap.String("code", c.code))
	}
	if run := c.run; run != nil {
		offer := ""
		if n := len(run.Attempts); n > 0 {
			offer = run.Attempts[n-1].Offer
		}
		fields = append(fields,
			zap.String("run_id", run.ID), zap.String("account_id", run.AccountID), zap.String("key_id", run.KeyID),
			zap.String("offer", offer), zap.String("outcome", string(run.Status)),
			zap.Int("records", run.Pagination.Returned), zap.String("credits", run.CreditsUsed.String()),
			zap.Int("attempts", len(run.Attempts)))
	} else if k := c.key; k != nil {
		fields = append(fields, zap.String("account_id", k.AccountID), zap.String("key_id", k.ID))
	}
	a.Logger.Info("call", fields...)
}
