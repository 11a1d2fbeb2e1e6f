package sources

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"socialrouter/internal/jsonscan"
)

// ProtocolActorRun is the name actor_run sources declare in their config.
const ProtocolActorRun = "actor_run"

// MaxWaitForFinish is the longest waitForFinish the run API honours: a
// run poll is answered within it, so every poll is a sign of life.
const MaxWaitForFinish = 60 * time.Second

// itemsPage is the page size of dataset item reads.
const itemsPage = 1000

// ChargePerItemParam is an offer param (not sent upstream) giving the
// upstream's charge per item in USD of a pay-per-event actor: the run is
// started with maxTotalChargeUsd = it × maxItems, so the upstream charges
// no more than the reserved items cost.
const ChargePerItemParam = "charge_per_item_usd"

func init() {
	Register(ProtocolActorRun, func(cfg Config) (Client, error) { return NewActorRun(cfg) })
}

// ActorRun speaks the actor platform's run API: start a run
// (POST /v2/acts/{actor}/runs with timeout and maxItems), wait for it with
// GET /v2/actor-runs/{id}?waitForFinish= (each answer within a minute),
// read its dataset (GET /v2/datasets/{id}/items, paginated), and abort it
// (POST /v2/actor-runs/{id}/abort) whenever the call stops waiting first.
// The synchronous endpoint is not used: it holds a silent connection for
// up to 300 s and its run cannot be aborted (its id is unknown until the
// end). It is safe for concurrent use.
type ActorRun struct {
	base
}

var _ Resumer = (*ActorRun)(nil)

// NewActorRun builds an actor_run client; the base URL is required.
func NewActorRun(cfg Config) (*ActorRun, error) {
	b, err := newBase(ProtocolActorRun, cfg)
	if err != nil {
		return nil, err
	}
	return &ActorRun{base: b}, nil
}

// Do starts the actor c.Target with c.Body as its input, waits for the run
// and returns its dataset items. Failures are *Error; a run the call
// stops waiting for is aborted.
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
	w := a.callback(c)
	if w != nil {
		defer w.Close()
	}
	h, err := a.start(ctx, c, body, w)
	if err != nil {
		return nil, err
	}
	c.started(h)
	return a.resume(ctx, c, h, w)
}

// start starts the run and returns its handle.
func (a *ActorRun) start(ctx context.Context, c Call, body []byte, w Wait) (Handle, error) {
	ans, err := a.exchange(ctx, http.MethodPost, a.startURL(ctx, c, w != nil), body, c.Activity)
	if err != nil {
		return Handle{}, err
	}
	if ans.status != http.StatusCreated && ans.status != http.StatusOK {
		if ans.status < 300 {
			return Handle{}, malformed(ans, fmt.Errorf("unexpected status %d starting a run", ans.status))
		}
		return Handle{}, statusError(ans)
	}
	h := Handle{Protocol: ProtocolActorRun, RunID: jsonscan.Field(ans.body, "data", "id"),
		DatasetID: jsonscan.Field(ans.body, "data", "defaultDatasetId")}
	if h.RunID == "" || h.DatasetID == "" {
		return Handle{}, malformed(ans, errors.New("run answer without data.id and data.defaultDatasetId"))
	}
	ans.release()
	if w != nil {
		w.Bind(h)
	}
	return h, nil
}

// startURL is the run-start endpoint of call c: the offer's params, the
// run's timeout (the call's remaining time) and its caps, and with
// callback its ad-hoc webhook.
func (a *ActorRun) startURL(ctx context.Context, c Call, callback bool) string {
	q := url.Values{}
	perItem := 0.0
	for k, v := range c.Params {
		if k == ChargePerItemParam {
			perItem, _ = strconv.ParseFloat(v, 64)
			continue
		}
		q.Set(k, v)
	}
	if secs := runTimeoutSeconds(ctx, c.Timeout); secs > 0 {
		q.Set("timeout", strconv.Itoa(secs))
	}
	if c.Limit > 0 {
		q.Set("maxItems", strconv.Itoa(c.Limit))
		if perItem > 0 {
			q.Set("maxTotalChargeUsd", strconv.FormatFloat(perItem*float64(c.Limit), 'f', -1, 64))
		}
	}
	if callback {
		q.Set("webhooks", actorWebhooks(a.cfg.Callbacks.url(c.RunID, c.Batch)))
	}
	return a.baseURL + "/v2/acts/" + url.PathEscape(c.Target) + "/runs?" + q.Encode()
}

// Resume waits for run h to end and reads its dataset (at most c.Limit
// items). When it stops waiting first (ctx done, a failure), it aborts
// the run from a detached context. It polls, never waits for the run's
// webhook, as DatasetScrape.Resume does: a resumed batch is a parked run
// its poller found ended (or its webhook woke), whose poll answers at
// once, or a run taken over after a crash, whose webhook went to the dead
// node or was lost, so waiting for it would cost the whole fallback.
func (a *ActorRun) Resume(ctx context.Context, c Call, h Handle) (*Result, error) {
	return a.resume(ctx, c, h, nil)
}

// resume is Resume with the callback wait w (nil: none).
func (a *ActorRun) resume(ctx context.Context, c Call, h Handle, w Wait) (*Result, error) {
	res, err := a.wait(ctx, c, h, w)
	if err != nil {
		var e *Error
		if !errors.As(err, &e) || e.Outcome != OutcomeRunFailed {
			AbortDetached(ctx, h, a.Abort, a.log)
		}
		return nil, withHandles(err, []string{h.String()})
	}
	res.Handles = MergeHandles([]string{h.String()}, res.Handles...)
	return res, nil
}

// wait waits for the run's callback (w) or polls the run until it ends,
// then reads its items. A callback that reports success is not checked by
// a poll: the items are read at once.
func (a *ActorRun) wait(ctx context.Context, c Call, h Handle, w Wait) (*Result, error) {
	if st, ok := a.awaitCallback(ctx, c, w); ok {
		switch st {
		case JobSucceeded:
			return a.items(ctx, c, h)
		case JobTimedOut:
			return a.timedOut(ctx, c, h, 0)
		default:
			return nil, &Error{Outcome: OutcomeRunFailed, Retryable: true,
				Message: fmt.Sprintf("run %s ended %s upstream (reported by its webhook)", h.RunID, strings.ToUpper(string(st)))}
		}
	}
	runURL := a.baseURL + "/v2/actor-runs/" + url.PathEscape(h.RunID)
	errs := 0
	for {
		if err := ctx.Err(); err != nil {
			return nil, transportError(ctx, "waiting for run "+h.RunID, err)
		}
		w := waitForFinish(ctx)
		c.waiting(w)
		ans, err := a.exchange(ctx, http.MethodGet, runURL+"?waitForFinish="+strconv.Itoa(int(w/time.Second)), nil, c.Activity)
		if err == nil && ans.status != http.StatusOK {
			err = statusError(ans)
		}
		if err != nil {
			if transient(err) && ctx.Err() == nil && errs < maxPollErrors {
				errs++
				continue
			}
			return nil, err
		}
		errs = 0
		st := jsonscan.Field(ans.body, "data", "status")
		if st == "" {
			return nil, malformed(ans, fmt.Errorf("run %s answer without data.status", h.RunID))
		}
		ans.release()
		switch st {
		case "SUCCEEDED":
			return a.items(ctx, c, h)
		case "TIMED-OUT":
			return a.timedOut(ctx, c, h, ans.status)
		case "FAILED", "ABORTED":
			return nil, &Error{Outcome: OutcomeRunFailed, Status: ans.status, Retryable: true,
				Message: fmt.Sprintf("run %s ended %s upstream", h.RunID, st)}
		case "READY", "RUNNING", "ABORTING", "TIMING-OUT":
		default:
			return nil, &Error{Outcome: OutcomeMalformed, Status: ans.status, Retryable: true,
				Message: fmt.Sprintf("run %s has status %q", h.RunID, st)}
		}
	}
}

// timedOut serves a run that timed out upstream: it keeps (and was
// charged for) what it collected; without any it is a timeout.
func (a *ActorRun) timedOut(ctx context.Context, c Call, h Handle, status int) (*Result, error) {
	res, err := a.items(ctx, c, h)
	if err == nil && len(res.Items) == 0 {
		return nil, &Error{Outcome: OutcomeTimeout, Status: status, Retryable: true,
			Message: fmt.Sprintf("run %s timed out upstream before collecting anything", h.RunID)}
	}
	return res, err
}

// items reads the run's dataset, page by page, up to c.Limit items.
func (a *ActorRun) items(ctx context.Context, c Call, h Handle) (*Result, error) {
	itemsURL := a.baseURL + "/v2/datasets/" + url.PathEscape(h.DatasetID) + "/items?format=json&clean=true"
	var out *Result
	for offset := 0; ; {
		page := itemsPage
		if c.Limit > 0 {
			page = min(page, c.Limit-offset)
		}
		ans, err := a.exchange(ctx, http.MethodGet, itemsURL+"&offset="+strconv.Itoa(offset)+"&limit="+strconv.Itoa(page), nil, c.Activity)
		if err != nil {
			return nil, err
		}
		if ans.status != http.StatusOK {
			return nil, statusError(ans)
		}
		r, err := itemsResult(ans)
		if err != nil {
			return nil, err
		}
		n := len(r.Items)
		if out == nil {
			out = r
		} else {
			out.merge(r)
		}
		offset += n
		if n < page || (c.Limit > 0 && offset >= c.Limit) {
			return out, nil
		}
	}
}

// merge appends r's items to res; the buffer of r stays with the garbage
// collector (res keeps only its first page's pooled buffer), and so does
// its members' index, kept beside its items while both pages have one.
func (res *Result) merge(r *Result) {
	if res.Members != nil && r.Members != nil {
		res.Members = append(res.Members, r.Members...)
	} else {
		res.Members = nil
	}
	res.Items = append(res.Items, r.Items...)
	res.ErrorItems += r.ErrorItems
	res.DeadItems += r.DeadItems
	res.Checked = res.Checked && r.Checked
	res.Handles = MergeHandles(res.Handles, r.Handles...)
}

// Abort stops run h (POST /v2/actor-runs/{id}/abort); a run that already
// ended is left as it is, as the API documents.
func (a *ActorRun) Abort(ctx context.Context, h Handle) error {
	if h.RunID == "" {
		return errors.New("abort: handle has no run id")
	}
	ans, err := a.exchange(ctx, http.MethodPost, a.baseURL+"/v2/actor-runs/"+url.PathEscape(h.RunID)+"/abort", nil, nil)
	if err != nil {
		return err
	}
	if ans.status != http.StatusOK {
		return statusError(ans)
	}
	return nil
}

// waitForFinish is the wait of one run poll: a minute, or the call's
// remaining time (at least a second).
func waitForFinish(ctx context.Context) time.Duration {
	w := MaxWaitForFinish
	if dl, ok := ctx.Deadline(); ok {
		w = min(w, time.Until(dl).Truncate(time.Second))
	}
	return max(w, time.Second)
}

// runTimeoutSeconds is the run's own upstream timeout: the call's
// timeout, else the context's remaining time, at least 1 s; 0 (the actor's
// default) when neither is known. A run that outlives its caller is
// aborted anyway; the timeout also bounds it if the abort is lost.
func runTimeoutSeconds(ctx context.Context, timeout time.Duration) int {
	if timeout <= 0 {
		dl, ok := ctx.Deadline()
		if !ok {
			return 0
		}
		timeout = time.Until(dl)
	}
	return max(1, int(math.Ceil(timeout.Seconds())))
}

// transient reports a failed exchange worth repeating while waiting on
// work that exists: a network error, a 5xx, a 429.
func transient(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Outcome {
	case OutcomeNetwork, OutcomeUpstream5xx, OutcomeRateLimited:
		return true
	}
	return false
}
