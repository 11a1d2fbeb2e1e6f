// Package router runs one call of a service: it walks the service's offers
// in failover order (or the pinned one alone), splits the inputs into
// batches of each offer's max_inputs run concurrently, enforces the attempt
// deadline and the soft (no-activity) timeout, classifies upstream failures,
// normalizes the items and applies the limit. Per-offer circuit breakers,
// shared across config reloads, keep failing upstreams out of the walk and
// give each source its computed status.
//
// The router knows nothing of HTTP handlers, billing or storage: the caller
// validates the request before and settles the run after.
package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"socialrouter/caddymodule/errkind"
	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/sources"
)

// Defaults of Config.
const (
	defaultAttemptTimeout     = 120 * time.Second
	defaultSoftTimeout        = 30 * time.Second
	defaultMaxParallelBatches = 4
	defaultBreakerFailures    = 5
	defaultBreakerCooldown    = 30 * time.Second
	// defaultRetryAfter is the Retry-After of an all-rate-limited failure
	// when no upstream sent one.
	defaultRetryAfter = 30 * time.Second
)

// isoLayout is the $now format, the same as the iso8601 helper of normalize
// programs, so extracted_at values look alike whichever way they are set.
const isoLayout = "2006-01-02T15:04:05.000Z"

// Config tunes the router. Zero fields take their defaults.
type Config struct {
	// AttemptTimeout bounds one offer attempt, all its batches included
	// (SPEC "Limits": 120 s). Default 120s.
	AttemptTimeout time.Duration
	// SoftTimeout ends an attempt as soft_timeout when the upstream shows no
	// activity (bytes received, a poll answered) for this long, so a stalled
	// upstream fails over well before the attempt deadline. Default 30s.
	SoftTimeout time.Duration
	// MaxParallelBatches bounds the concurrent upstream calls of one
	// attempt, so a call with many inputs does not flood an upstream.
	// Default 4.
	MaxParallelBatches int
	// BreakerFailures is the number of consecutive retryable failures that
	// open an offer's breaker. Default 5.
	BreakerFailures int
	// BreakerCooldown is how long an open breaker turns calls away before
	// letting one trial call through (half-open). Default 30s.
	BreakerCooldown time.Duration
	// Now is the clock of breakers and of $now; injected by tests. Deadlines
	// and the soft timeout always use the real clock. Default time.Now.
	Now func() time.Time
	// Observer, if set, is told of every attempt's end (metrics).
	Observer Observer
}

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
	if c.AttemptTimeout <= 0 {
		c.AttemptTimeout = defaultAttemptTimeout
	}
	if c.SoftTimeout <= 0 {
		c.SoftTimeout = defaultSoftTimeout
	}
	if c.MaxParallelBatches <= 0 {
		c.MaxParallelBatches = defaultMaxParallelBatches
	}
	if c.BreakerFailures <= 0 {
		c.BreakerFailures = defaultBreakerFailures
	}
	if c.BreakerCooldown <= 0 {
		c.BreakerCooldown = defaultBreakerCooldown
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Router runs calls against the source clients. It is safe for concurrent
// use and immutable once built; a config reload builds a new one around the
// same Breakers.
type Router struct {
	cfg      Config
	clients  map[string]sources.Client
	breakers *Breakers
	logger   *zap.Logger
}

// New builds a Router. clients are keyed by source id; an offer whose source
// has no client fails its attempt (and the walk moves on). b is shared with
// earlier Routers so breaker state survives reloads; nil gets a private set.
// New applies cfg's breaker thresholds to b.
func New(cfg Config, clients map[string]sources.Client, b *Breakers, logger *zap.Logger) *Router {
	cfg = cfg.withDefaults()
	if b == nil {
		b = NewBreakers()
	}
	if logger == nil {
		logger = zap.NewNop()
	}
	b.configure(cfg.BreakerFailures, cfg.BreakerCooldown, cfg.Now)
	cl := make(map[string]sources.Client, len(clients))
	for k, v := range clients {
		cl[k] = v
	}
	return &Router{cfg: cfg, clients: cl, breakers: b, logger: logger}
}

// Breakers returns the breakers the router reports to, for status views.
func (r *Router) Breakers() *Breakers { return r.breakers }

// Request is one validated call.
type Request struct {
	Service *registry.Service
	// Inputs are validated and normalized, in the caller's order.
	Inputs []string
	// Options are validated with defaults filled; each offer sees only the
	// ones it implements.
	Options map[string]any
	// Limit caps the records (per call or per input, by the service's
	// limit_scope); 0 or less means no limit. Each upstream call is capped
	// too (maxItems) so upstreams do not collect and charge for more: Limit
	// for per_call, Limit × the batch's inputs for per_input.
	Limit int
	// Pin, if set, is the only offer tried (the caller's provider): no
	// failover, and tried even when its breaker is open.
	Pin *registry.Offer
	// Unpin says how the caller of a pinned call lets the router fail over
	// instead, for a failure's advice; empty: "drop provider" (the extract
	// body's pin). Search pins with fallback: false and says so.
	Unpin string
	// Now is the time of the call ($now of the programs); zero means
	// Config.Now().
	Now time.Time
	// Offers, if set, is the failover chain to walk instead of the
	// service's live offers (search with fallback: the requested offer
	// first, then the others).
	Offers []*registry.Offer
	// LimitScope, if set, overrides the service's limit_scope (search
	// limits are per query whatever the service declares).
	LimitScope string
	// Skip is the number of records (per input or per call, by scope)
	// already returned by earlier pages: the upstream is asked for
	// Skip+Limit and the first Skip are dropped.
	Skip int
	// Budget, if set, holds the call's money before each offer attempt
	// and caps the records the attempt asks for (see Budget).
	Budget Budget
	// OnHandle, if set, is called as soon as an upstream has started paid
	// work for a batch of an attempt of offer o (s.Handle is what the
	// attempt's handles record), before the work ends: a durable caller
	// stores s, so a restarted gateway can resume the work (Resume) or
	// abort it instead of starting it again. It may be called concurrently
	// by the attempt's batches; it may block for a store write, not for
	// longer.
	OnHandle func(o *registry.Offer, s Started)

	// resumed, set by Resume, is the upstream work of the attempt being
	// resumed: its batches wait for that work instead of starting it.
	resumed *Resumed
}

// scope is the limit scope in force for the request.
func (req *Request) scope() string {
	if req.LimitScope != "" {
		return req.LimitScope
	}
	return req.Service.LimitScope
}

// window is how many records the upstream must produce: the pages already
// seen plus this one (0: no limit).
func (req *Request) window() int {
	if req.Limit <= 0 {
		return 0
	}
	return req.Skip + req.Limit
}

// Result is a successful call.
type Result struct {
	// Offer is the offer that served.
	Offer *registry.Offer
	// Records are normalized, in input order, with the limit applied.
	Records []json.RawMessage
	// Total is the number of records produced before the limit.
	Total int
	// Attempts trace the walk, the serving attempt last.
	Attempts []runs.Attempt
	// More reports that some input (or the call) filled its whole window,
	// so a next page may exist.
	More bool
	// Served, set when more than one offer served the call (a failed
	// batch's inputs failed over, chunks.go), lists them in serving order,
	// Offer last; From[i] is the index in Served of the offer of
	// Records[i], billed at that offer's price. Nil: Offer served all.
	Served []*registry.Offer
	From   []int
}

// Run walks the offers until one serves the call. A failure is always a
// *Failure carrying the kind of failure and the attempts made.
func (r *Router) Run(ctx context.Context, req Request) (*Result, error) {
	if req.Service == nil {
		return nil, &Failure{Kind: errkind.Internal,
			Message: "routing a call: no service given"}
	}
	now := req.Now
	if now.IsZero() {
		now = r.cfg.Now()
	}
	w := &walk{r: r, req: req, nowISO: now.UTC().Format(isoLayout)}

	if req.Pin != nil {
		w.pinned = true
		trial := r.breakers.force(req.Pin)
		return w.finish(w.try(ctx, req.Pin, trial, ""))
	}

	offers := req.Offers
	if offers == nil {
		offers = req.Service.LiveOffers()
	}
	if len(offers) == 0 {
		return nil, &Failure{Kind: errkind.ServiceNotAvailable,
			Message: fmt.Sprintf("%s has no live offer yet; see the catalogue for callable services.", req.Service.Key)}
	}
	return w.over(ctx, offers)
}

// over walks offers in failover order until one serves the call (or the
// walk ends otherwise). Run walks a call's whole chain; Resume goes on
// with the offers after a resumed attempt, in the same walk, so the
// batches that attempt served stay kept (chunks.go).
func (w *walk) over(ctx context.Context, offers []*registry.Offer) (*Result, error) {
	r := w.r
	allRefused := true
	for _, o := range offers {
		if !r.breakers.refuses(o) {
			allRefused = false
			break
		}
	}
	if !allRefused {
		for _, o := range offers {
			ok, trial := r.breakers.acquire(o)
			if !ok {
				w.skip(o)
				continue
			}
			if res, fail, done := w.try(ctx, o, trial, ""); done {
				return w.finish(res, fail, done)
			}
		}
		if len(w.tried) > 0 {
			return w.finish(nil, nil, false)
		}
		if w.unpayable > 0 {
			return nil, w.refusal()
		}
	}
	// Every offer is refused: failing without trying would keep the
	// service down until a cooldown ends, so try the first offer refused
	// by its breaker anyway. An offer whose source an operator marked down
	// is never called: that is what the override is for.
	for _, o := range offers {
		if r.breakers.operatorOff(o) {
			continue
		}
		trial := r.breakers.force(o)
		return w.finish(w.try(ctx, o, trial, "every offer's circuit breaker was open; tried this one anyway"))
	}
	return nil, w.sourcesDown(offers)
}

// sourcesDown is the failure of a walk whose every offer is on a source an
// operator marked down (or coming_soon): nothing was called, nothing is
// charged.
func (w *walk) sourcesDown(offers []*registry.Offer) *Failure {
	for _, o := range offers {
		w.skip(o)
	}
	return &Failure{Kind: errkind.ProviderError, Offer: offers[len(offers)-1], Attempts: w.attempts,
		Message: fmt.Sprintf("every offer of %s is on a source an operator marked down or coming_soon; nothing was called or charged. Retry later.", w.req.Service.Key)}
}

// walk is the state of one Run.
type walk struct {
	r        *Router
	req      Request
	nowISO   string
	pinned   bool
	attempts []runs.Attempt
	tried    []*attempt
	skipped  int
	// unpayable counts offers skipped because the Budget covered nothing.
	unpayable int
	// keep holds the records of batches served while others failed over
	// (chunks.go); nil until an attempt serves only some of its batches.
	keep *kept
	// gone: the caller went away (or its deadline passed).
	gone bool
}

// skip records an offer the walk passed over.
func (w *walk) skip(o *registry.Offer) {
	msg := "skipped: circuit breaker open after repeated failures"
	if s, _ := w.r.breakers.Override(o.Source.ID); offRoute(s) {
		msg = "skipped: source marked " + s + " by an operator"
	}
	w.skipped++
	w.attempts = append(w.attempts, runs.Attempt{Offer: o.ID, Outcome: OutcomeCircuitOpen, Message: msg})
	w.r.observe(o, OutcomeCircuitOpen, 0, true)
	w.r.logger.Debug("offer skipped", zap.String("service", w.req.Service.Key), zap.String("offer", o.ID))
}

// try runs one attempt and reports it to the offer's breaker. done is true
// when the walk ends here: with res on success, or with fail when the
// client went away or the upstream rejected the input.
func (w *walk) try(ctx context.Context, o *registry.Offer, trial bool, note string) (res *Result, fail *Failure, done bool) {
	req, fail := w.reserve(ctx, o, trial)
	if fail != nil || req == nil {
		return nil, fail, fail != nil
	}
	a := w.r.attempt(ctx, o, req, w.nowISO)
	return w.record(o, a, trial, note)
}

// record reports an attempt to the offer's breaker, the observer and the
// log, and decides whether the walk ends with it. It is apart from try so
// that the frame a held call keeps while it waits stays small.
func (w *walk) record(o *registry.Offer, a *attempt, trial bool, note string) (res *Result, fail *Failure, done bool) {
	if note != "" {
		a.rec.Message = joinMsg(note, a.rec.Message)
	}
	if w.r.breakers.report(o, a.verdict, trial) {
		w.r.logger.Info("circuit breaker opened", zap.String("offer", o.ID),
			zap.Int("failures", w.r.cfg.BreakerFailures), zap.Duration("cooldown", w.r.cfg.BreakerCooldown))
	}
	w.attempts = append(w.attempts, a.rec)
	w.tried = append(w.tried, a)
	w.r.observe(o, a.rec.Outcome, a.rec.DurationMS, false)
	switch {
	case a.ok && w.keep == nil && len(a.failed) == 0:
		w.logAttempt(zap.DebugLevel, "offer attempt served", o, a)
		return &Result{Offer: o, Records: a.records, Total: a.total, Attempts: w.attempts, More: a.more}, nil, true
	case a.ok:
		// Some batches served (now or before): keep them, go on with
		// the inputs of the failed ones.
		if w.absorb(o, a) {
			return w.keptResult(), nil, true
		}
		return nil, nil, false
	case a.canceled != nil:
		w.gone = true
		return nil, w.canceled(o, a.canceled), true
	case !a.retryable:
		w.logAttempt(zap.InfoLevel, "offer attempt rejected the input", o, a)
		return nil, w.rejected(o, a), true
	}
	w.logAttempt(zap.InfoLevel, "offer attempt failed", o, a)
	return nil, nil, false
}

// logAttempt logs an attempt at lvl; the fields are built only when that
// level is enabled (a served attempt logs at debug, off in production, and
// building its fields cost an allocation on every call).
func (w *walk) logAttempt(lvl zapcore.Level, msg string, o *registry.Offer, a *attempt) {
	ce := w.r.logger.Check(lvl, msg)
	if ce == nil {
		return
	}
	fields := []zap.Field{zap.String("service", w.req.Service.Key), zap.String("offer", o.ID),
		zap.String("outcome", a.rec.Outcome), zap.Int("status", a.rec.Status),
		zap.Int64("duration_ms", a.rec.DurationMS), zap.Int("inputs", len(w.req.Inputs))}
	if a.ok {
		fields = append(fields, zap.Int("records", a.total))
	}
	ce.Write(fields...)
}

// finish ends the walk after the last try: a result, the records kept of
// partly served attempts, a failure, or (the attempt failed retryably) the
// classified failure of all attempts.
func (w *walk) finish(res *Result, fail *Failure, done bool) (*Result, error) {
	switch {
	case res != nil:
		return res, nil
	case w.keep != nil && !w.gone:
		// Batches served before are paid upstream: serve them; the
		// attempts say which inputs no offer served.
		return w.keptResult(), nil
	case fail != nil:
		return nil, fail
	case len(w.tried) == 0:
		return nil, w.refusal()
	}
	return nil, w.classify()
}

// Outcomes the router adds to the sources' ones in attempt records.
const (
	// OutcomeOK is a served attempt.
	OutcomeOK = "ok"
	// OutcomeErrorRecords is an attempt whose every item was an error record.
	OutcomeErrorRecords = "error_records"
	// OutcomeCircuitOpen is an offer the walk skipped.
	OutcomeCircuitOpen = "circuit_open"
	// OutcomeCanceled is an attempt cut short because the caller went away.
	OutcomeCanceled = "canceled"
	// OutcomeNoClient is an offer whose source has no configured client.
	OutcomeNoClient = "no_client"
	// OutcomeRequestError is an offer whose request program failed on the
	// call's inputs and options.
	OutcomeRequestError = "request_program_error"
)

// errors used as context causes, to tell why an attempt's context ended.
var (
	errAttemptTimeout = errors.New("attempt deadline reached")
	errSoftTimeout    = errors.New("no upstream activity within the soft timeout")
	errBatchFailed    = errors.New("another batch of the attempt failed")
)
