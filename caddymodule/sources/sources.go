// Package sources speaks the upstream protocols. There is one Go type per
// protocol (actor_run, dataset_scrape); a new source that speaks an existing
// protocol is configuration only. A Client knows nothing of services or
// billing: it sends one upstream request for one batch of inputs and returns
// the raw items, read once.
package sources

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"time"

	"go.uber.org/zap"

	"socialrouter/internal/jsonscan"
)

// Call is one upstream call of an offer attempt for one batch of inputs.
type Call struct {
	// Target is the actor id (actor_run) or dataset id (dataset_scrape).
	Target string
	// Params are extra query parameters declared by the offer.
	Params map[string]string
	// Body is the request body built by the offer's request program: the
	// actor input (actor_run), or {"input": [...], ...} (dataset_scrape,
	// which sends at most 20 inputs per scrape and batches beyond that).
	Body any
	// Limit caps the items the upstream collects and charges: maxItems of
	// an actor run, limit_multiple_results of a collection. 0: no cap.
	Limit int
	// PerInput caps the records of one input (limit_per_input of a
	// discovery); 0: no cap.
	PerInput int
	// Timeout is the attempt's remaining deadline, passed to the upstream as
	// the run's own timeout where the protocol has one.
	Timeout time.Duration
	// Activity, if set, is called whenever the upstream shows a sign of life
	// (bytes received, a poll answered); the router's soft timeout uses it.
	Activity func()
	// Waiting, if set, is called before a wait the upstream documents (a
	// sync wait, waitForFinish, the pause between polls) with its longest
	// length: silence within it is not a stall. Safe for concurrent use.
	Waiting func(d time.Duration)
	// OnHandle, if set, is called as soon as the upstream has started paid
	// work for the call (a run, a snapshot), with its handle, so the caller
	// can record it before the work ends (and abort or resume it later).
	OnHandle func(Handle)
	// RunID and Batch name the run and batch the call serves: with a
	// source whose Config.Callbacks is set, the upstream is asked to call
	// back to a URL naming them (callback.go). An empty RunID: polling.
	RunID string
	Batch int
}

// waiting tells c's caller a documented wait of up to d begins.
func (c *Call) waiting(d time.Duration) {
	if c.Waiting != nil {
		c.Waiting(d)
	}
}

// started tells c's caller the upstream work h exists.
func (c *Call) started(h Handle) {
	if c.OnHandle != nil {
		c.OnHandle(h)
	}
}

// Result is the successful answer of one call.
type Result struct {
	// Items are the upstream items in order, raw.
	Items []json.RawMessage
	// ErrorItems counts items that are per-input error or warning records
	// (they carry error/error_code or warning_code instead of data).
	ErrorItems int
	// DeadItems counts the error items whose code is dead_page: the input
	// names a page that is gone, an empty answer rather than a failure.
	DeadItems int
	// Checked says every item passed jsonscan's strict check (the body was checked as it
	// was split), so the normalizer need not check them again.
	Checked bool
	// Members are, for a checked body, where each object item's own
	// members lie (jsonscan.MemberAt), as the check found them: the
	// normalizer's index of the item, without a pass of its own. Members[k]
	// is Items[k]'s, nil when unknown; Members is nil when none are.
	Members [][]jsonscan.Member
	// Handles are the upstream run or snapshot ids, for tracing paid work.
	Handles []string
	// Status is the final HTTP status of the upstream.
	Status int

	buf   *[]byte            // the pooled buffer Items point into, or nil
	index *[]jsonscan.Member // the pooled buffer Members point into, or nil
}

// Release hands the buffer the items point into back for reuse by a later
// call, once nothing reads the items any more (they are normalized into
// fresh records). Items is nil afterwards. Not calling it is safe: the
// buffer is then left to the garbage collector.
func (r *Result) Release() {
	r.Items, r.Members = nil, nil
	bodyBufs.Put(r.buf)
	r.buf = nil
	if r.index != nil && cap(*r.index) <= maxPooledMembers {
		memberBufs.Put(r.index)
	}
	r.index = nil
}

// maxPooledMembers bounds the members' index kept for reuse: a body of
// many thousand items is rare, its index left to the collector.
const maxPooledMembers = 1 << 14

// Outcomes of a failed call, as recorded in a run's attempts.
const (
	OutcomeNetwork      = "network_error"
	OutcomeUpstream5xx  = "upstream_5xx"
	OutcomeUpstream4xx  = "upstream_4xx"
	OutcomeRateLimited  = "rate_limited"
	OutcomeTimeout      = "timeout"
	OutcomeSoftTimeout  = "soft_timeout"
	OutcomeMalformed    = "malformed_response"
	OutcomeInvalidInput = "invalid_input"
	OutcomeAuth         = "upstream_auth"
	OutcomePayment      = "upstream_payment"
	OutcomeSnapshot     = "snapshot_failed"
	// OutcomeRunFailed is an actor run that ended FAILED or ABORTED
	// upstream (not by us).
	OutcomeRunFailed = "run_failed"
	// OutcomeInternal is a bug of the gateway (a panic) while calling the
	// upstream: the attempt fails, retryably, and the process lives on.
	OutcomeInternal = "internal_error"
)

// Recovered turns a panic recovered while running an upstream call into
// the call's failure (nil when p is nil).
func Recovered(p any) *Error {
	if p == nil {
		return nil
	}
	return &Error{Outcome: OutcomeInternal, Retryable: true, Message: fmt.Sprintf("internal error while calling the upstream: %v", p)}
}

// Error is a failed upstream call.
type Error struct {
	Outcome string
	// Status is the upstream HTTP status (0 when none was received).
	Status int
	// RetryAfter is the upstream's Retry-After, if it sent one.
	RetryAfter time.Duration
	// Retryable says whether another offer may be tried: network errors,
	// 5xx, 408/504, 429, malformed JSON are; an input the upstream reports
	// invalid is not.
	Retryable bool
	Handles   []string
	Message   string
}

func (e *Error) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("%s (HTTP %d): %s", e.Outcome, e.Status, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.Outcome, e.Message)
}

// Client sends calls to one source.
type Client interface {
	Do(ctx context.Context, c Call) (*Result, error)
}

// Resumer is a Client whose upstream work outlives one wait: a gateway
// that recorded a call's Handle (Call.OnHandle) can wait for that same
// work again, or stop it, without starting paid work twice. Both
// protocols implement it.
type Resumer interface {
	Client
	// Resume waits for the work h to end and collects its items, as Do
	// does after starting it (c supplies the caps, Activity and Waiting;
	// its Body is not sent). When it stops waiting before the work ends
	// (ctx done, a failure), it aborts the work, from a context detached
	// from ctx.
	Resume(ctx context.Context, c Call, h Handle) (*Result, error)
	// Abort stops the work h upstream (a run abort, a snapshot cancel);
	// work already ended is left as it is. Callers pass a context that
	// outlives the call that gave up (see AbortTimeout).
	Abort(ctx context.Context, h Handle) error
}

// AbortTimeout bounds an abort sent after a call stopped waiting.
const AbortTimeout = 10 * time.Second

// ReturnsOnCancel is implemented by a Client whose Do returns as soon as
// its context ends (every wait selects on it, every exchange is net/http
// with it). The router runs such a client's lone batch on the caller's
// goroutine: a call held for minutes by a slow upstream then costs one
// goroutine and its stack, not two. A client without the promise keeps a
// goroutine of its own, so the router can abandon it after a grace period.
type ReturnsOnCancel interface {
	Client
	ReturnsOnCancel()
}

// Config configures a Client of any protocol.
type Config struct {
	// BaseURL of the source, e.g. http://127.0.0.1:9101.
	BaseURL string
	// Token is sent as Authorization: Bearer; it is never logged.
	Token string
	// HTTPClient defaults to a client with no overall timeout (deadlines
	// come from the context).
	HTTPClient *http.Client
	// PollInterval is the first wait between snapshot progress polls
	// (dataset_scrape); later waits grow to MaxPollFactor times it. Default
	// 2s.
	PollInterval time.Duration
	// Callbacks, if set, has the upstream call the gateway back when a
	// call's work ends, instead of being polled (callback.go).
	Callbacks *CallbackConfig
	Logger    *zap.Logger
}

// Constructor builds a Client of one protocol.
type Constructor func(Config) (Client, error)

var protocols = map[string]Constructor{}

// Register makes a protocol available by name; called from init.
func Register(name string, c Constructor) { protocols[name] = c }

// New builds a client for the named protocol.
func New(protocol string, cfg Config) (Client, error) {
	c, ok := protocols[protocol]
	if !ok {
		return nil, fmt.Errorf("unknown protocol %q (known: %v)", protocol, Protocols())
	}
	return c(cfg)
}

// Protocols lists the registered protocol names.
func Protocols() []string {
	var out []string
	for n := range protocols {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
