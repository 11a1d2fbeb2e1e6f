// Package router runs one call of a service: it walks the service's offers
// in failover order (or the pinned one alone), splits the inputs into
// batches of each offer's max_inputs run concurrently, enforces the attempt
// deadline and the soft (no-activity) timeout, classifies upstream failures,
// normalizes the items and applies the limit. Per-offer circuit breakers,
// shared across config reloads, keep failing upstreams out of the walk and
// give each source its computed status.
//
// The router knows nothing of HTTP handlers, billing or storage: the caller
// validates the request before and settles the run after. Money is asked
// through Request.Budget; progress and cancel through Request.Proceed and
// OnAttempt; upstream work started is told through OnHandle.
//
// The files follow a call's phases, each read top to bottom:
//
//   - router.go: the entry points, Run and Resume, and Request.Chain, the
//     offers a call may try;
//   - walk.go: the walk over those offers (skip, try, record, finish), and
//     the records it keeps of partly served attempts (chunks);
//   - attempt.go: one offer attempt: its inputs split into batches, run
//     concurrently, then assembled, limited, or failed;
//   - batch.go: one batch: its request built, its items matched to their
//     inputs, normalized and checked against the record schema;
//   - job.go: one upstream job: started (and retried) or resumed, or
//     aborted when nobody will wait for it;
//   - watchdog.go: the soft timeout, armed by each attempt;
//   - budget.go, breaker.go, failure.go, observer.go: the money asked
//     before each attempt, the breakers, the failures' classification and
//     the metrics hook.
//
// One attempt's path to the upstream and back crosses 4 files and goes
// down through each once (Request's accessors aside): walk.try calls
// Router.attempt (attempt.go), which arms the soft-timeout watchdog
// (watchdog.go: newWatchdog, which makes each batch's pulse) and runs each
// batch: Router.batch and call (batch.go) build the request and hand it
// to Router.job (job.go: do, or resumeJob), which
// calls the source's client (sources: Do or Resume) and returns its
// answer; call records a failure, or collect normalizes the items into the
// attempt's batchSet, and Router.batch returns to the attempt, whose
// conclude and assemble (attempt.go) make its outcome for walk.record
// once the watchdog is disarmed. The batch's pulse (watchdog.go) is a
// callback beside the path: call and the client call it to tell the
// watchdog of upstream activity.
package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"

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
	// Proceed, if set, is asked before each offer attempt's money is held
	// whether the call goes on: an error (the caller cancelled the call
	// meanwhile) ends the walk there, with nothing held for the offer and
	// nothing called; the call fails with the error as its cause.
	Proceed func(ctx context.Context, o *registry.Offer) error
	// OnAttempt, if set, is told of each offer attempt as it begins: its
	// money held, before its upstream is called (a durable caller writes
	// its progress). An error (the call was cancelled or handed to another
	// worker meanwhile) ends the walk as Proceed's does, the offer not
	// called. Progress and cancel travel here, not through the Budget,
	// which is money alone.
	OnAttempt func(ctx context.Context, b Begun) error
	// OnHandle, if set, is called as soon as an upstream has started paid
	// work for a batch of an attempt of offer o (s.Handle is what the
	// attempt's handles record), before the work ends: a durable caller
	// stores s, so a restarted gateway can resume the work (Resume) or
	// abort it instead of starting it again. It may be called concurrently
	// by the attempt's batches; it may block for a store write, not for
	// longer.
	OnHandle func(o *registry.Offer, s Started)
	// RunID, if set, names the run the call serves: a source with
	// callbacks is asked to call back to a URL naming it and the batch
	// (sources.Call.RunID); without it every upstream is polled.
	RunID string

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
	// batch's inputs failed over, Chunks in walk.go), lists them in serving order,
	// Offer last; From[i] is the index in Served of the offer of
	// Records[i], billed at that offer's price. Nil: Offer served all.
	Served []*registry.Offer
	From   []int
}

// Chain is the offers a call may try, in failover order: the pinned
// offer alone, else Offers, else the service's live offers. Run, Resume
// and an async submit's hold ahead (api) read it, so all three try the
// same offers.
func (req *Request) Chain() []*registry.Offer {
	switch {
	case req.Pin != nil:
		return []*registry.Offer{req.Pin}
	case req.Offers != nil:
		return req.Offers
	}
	return req.Service.LiveOffers()
}

// Run walks the offers until one serves the call. A failure is always a
// *Failure carrying the kind of failure and the attempts made.
func (r *Router) Run(ctx context.Context, req Request) (*Result, error) {
	if req.Service == nil {
		return nil, &Failure{Kind: errkind.Internal,
			Message: "routing a call: no service given"}
	}
	var w walk
	w.prepare(r, &req, nil)
	if req.Pin != nil {
		trial := r.breakers.force(req.Pin)
		return w.finish(w.try(ctx, req.Pin, trial, ""))
	}
	offers := req.Chain()
	if len(offers) == 0 {
		return nil, &Failure{Kind: errkind.ServiceNotAvailable,
			Message: fmt.Sprintf("%s has no live offer yet; see the catalogue for callable services.", req.Service.Key)}
	}
	return w.over(ctx, offers)
}

// Resume finishes a call an earlier process began: the attempt of
// from.Offer runs again as it ran then (the same batches, capped to the
// same records, normalized, checked, limited and reported as any
// attempt), except that a batch whose upstream work was started waits
// for that work (sources.Resumer.Resume) instead of starting it again;
// batches with no recorded work start now. If the attempt fails, the walk
// fails over to the offers after from.Offer, as Run would have. An offer
// no longer in the call's chain cannot be resumed: its recorded work is
// aborted and the call runs afresh.
func (r *Router) Resume(ctx context.Context, req Request, from Resumed) (*Result, error) {
	if req.Service == nil {
		return r.Run(ctx, req)
	}
	offers := req.Chain()
	at := slices.IndexFunc(offers, func(o *registry.Offer) bool { return o.ID == from.Offer })
	if at < 0 {
		r.logger.Warn("resuming a call: its offer is no longer in the chain; its upstream work is aborted and the call runs again",
			zap.String("service", req.Service.Key), zap.String("offer", from.Offer))
		r.Abort(ctx, req.Service, from)
		return withBefore(from.Before)(r.Run(ctx, req))
	}
	o := offers[at]
	var w walk
	w.prepare(r, &req, slices.Clone(from.Before))
	res, fail, done := w.tryResumed(ctx, o, r.breakers.force(o), from)
	rest := offers[at+1:]
	if done || w.pinned || len(rest) == 0 {
		return w.finish(res, fail, done)
	}
	// The resumed attempt failed, or served only some of its batches: the
	// same walk goes on with the offers after it (those before it failed
	// in the earlier process), keeping what it served.
	return w.over(ctx, rest)
}

// withBefore puts the attempts before ahead of a walk's own.
func withBefore(before []runs.Attempt) func(*Result, error) (*Result, error) {
	return func(res *Result, err error) (*Result, error) {
		if len(before) == 0 {
			return res, err
		}
		var f *Failure
		switch {
		case res != nil:
			res.Attempts = append(slices.Clip(before), res.Attempts...)
		case errors.As(err, &f):
			f.Attempts = append(slices.Clip(before), f.Attempts...)
		}
		return res, err
	}
}

// Started is paid upstream work one batch of an attempt started, as
// Request.OnHandle reports it: the offer, the batch (its index in the
// attempt, its inputs and limit) and the work's handle
// (sources.Handle.String). A durable caller stores it and gives it back
// to Resume after a restart.
type Started struct {
	Offer  string   `json:"offer"`
	Batch  int      `json:"batch"`
	Inputs []string `json:"inputs,omitempty"`
	Limit  int      `json:"limit,omitempty"`
	Handle string   `json:"handle"`
	// Batches is how many batches the attempt has: once each reported
	// its work, the whole attempt waits upstream and a durable caller
	// may stop waiting (park) and resume it later. 0 in records written
	// before it was kept.
	Batches int `json:"batches,omitempty"`
}

// Begun is an offer attempt as it begins, as Request.OnAttempt is told
// of it: the offer and the records its money holds (the Budget's covered;
// without a Budget, the most it may ask for, 0 for no limit), or that the
// money pays not one record of it (Unpayable: the offer is passed over,
// Note says why).
type Begun struct {
	Offer     *registry.Offer
	Records   int
	Unpayable bool
	Note      string
	// Partial: the walk keeps records earlier offers served, and this
	// attempt runs only the inputs they failed (a chunk failover): its
	// upstream work alone does not resume the call.
	Partial bool
}

// Resumed is an attempt an earlier process began and did not finish
// (it died): its offer, the records its money covered when it began,
// the attempts made before it, and the upstream work its batches
// started.
type Resumed struct {
	Offer   string
	Records int
	Before  []runs.Attempt
	Started []Started
}

// work returns the work batch i of offer started (the last one, should a
// batch have reported twice); nil-safe.
func (rs *Resumed) work(offer string, i int) (Started, bool) {
	if rs == nil {
		return Started{}, false
	}
	for k := len(rs.Started) - 1; k >= 0; k-- {
		if s := rs.Started[k]; s.Offer == offer && s.Batch == i {
			return s, true
		}
	}
	return Started{}, false
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
