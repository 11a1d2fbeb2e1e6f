package sources

import (
	"context"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// ProtocolActorRun is the name actor_run sources declare in their config.
const ProtocolActorRun = "actor_run"

// MaxActorSyncWait is the upstream's own cap on a synchronous run; asking for
// more is pointless, the run would answer 408 anyway.
const MaxActorSyncWait = 300 * time.Second

func init() {
	Register(ProtocolActorRun, func(cfg Config) (Client, error) { return NewActorRun(cfg) })
}

// ActorRun speaks the actor-run protocol: one synchronous
// run-sync-get-dataset-items request per call, answered with the run's
// dataset items. It is safe for concurrent use.
type ActorRun struct {
	base
}

// NewActorRun builds an actor_run client; the base URL is required.
func NewActorRun(cfg Config) (*ActorRun, error) {
	b, err := newBase(ProtocolActorRun, cfg)
	if err != nil {
		return nil, err
	}
	return &ActorRun{base: b}, nil
}

// Do runs the actor c.Target synchronously with c.Body as its input and
// returns its dataset items. Failures are *Error.
func (a *ActorRun) Do(ctx context.Context, c Call) (*Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, transportError(ctx, "before upstream request", err)
	}
	body, err := encodeBody(c.Body)
	if err != nil {
		return nil, invalidBody(err)
	}
	if string(body) == "null" {
		body = []byte("{}")
	}
	ans, err := a.exchange(ctx, http.MethodPost, a.runURL(ctx, c), body, c.Activity)
	if err != nil {
		return nil, err
	}
	return ranSync(ans)
}

// runURL is the synchronous run endpoint of call c.
func (a *ActorRun) runURL(ctx context.Context, c Call) string {
	q := url.Values{}
	for k, v := range c.Params {
		q.Set(k, v)
	}
	q.Set("timeout", strconv.Itoa(syncWaitSeconds(ctx, c.Timeout)))
	if c.Limit > 0 {
		q.Set("maxItems", strconv.Itoa(c.Limit))
	}
	return a.baseURL + "/v2/acts/" + url.PathEscape(c.Target) + "/run-sync-get-dataset-items?" + q.Encode()
}

// ranSync reads a synchronous run's answer: its dataset items.
func ranSync(ans *answer) (*Result, error) {
	if ans.status != http.StatusOK && ans.status != http.StatusCreated {
		if ans.status >= 200 && ans.status < 300 {
			return nil, &Error{Outcome: OutcomeMalformed, Status: ans.status, Retryable: true, Handles: ans.handles,
				Message: "unexpected success status " + strconv.Itoa(ans.status) + " for a synchronous run"}
		}
		return nil, statusError(ans)
	}
	return itemsResult(ans)
}

// syncWaitSeconds is the upstream's sync wait: the call's timeout, else the
// context's remaining time, capped at MaxActorSyncWait, at least 1 s.
func syncWaitSeconds(ctx context.Context, timeout time.Duration) int {
	if timeout <= 0 {
		timeout = MaxActorSyncWait
		if dl, ok := ctx.Deadline(); ok {
			timeout = time.Until(dl)
		}
	}
	timeout = min(timeout, MaxActorSyncWait)
	return max(1, int(math.Ceil(timeout.Seconds())))
}
