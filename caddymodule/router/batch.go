package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"socialrouter/caddymodule/normalize"
	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/sources"
)

// batch runs one upstream call and normalizes its items.
func (r *Router) batch(rn *run, wd *watchdog, client sources.Client, o *registry.Offer, req *Request,
	inputs []string, limit int, opts map[string]any, nowISO string, i int) {
	res := r.call(rn, wd, client, o, req, inputs, limit, opts, nowISO, i)
	if res != nil {
		r.collect(rn, o, inputs, nowISO, i, res)
	}
}

// call sends one batch's upstream request and returns its answer, or nil
// when it failed (recorded in rn). A held call waits in here: its frame,
// and those of its callers, stay on the goroutine's stack for the whole
// wait, so what runs before and after the wait is in functions of its own
// (buildBody, failCall, collect), and a call held by a slow upstream fits
// the stack size that Caddy's own reverse_proxy needs.
func (r *Router) call(rn *run, wd *watchdog, client sources.Client, o *registry.Offer, req *Request,
	inputs []string, limit int, opts map[string]any, nowISO string, i int) *sources.Result {
	ctx := rn.actx
	wd.touch()
	body, err := buildBody(ctx, o, inputs, opts, limit, nowISO)
	if err != nil {
		failRequest(rn, i, err)
		return nil
	}
	callLimit := limit
	if callLimit > 0 && req.scope() == registry.ScopePerInput {
		callLimit *= max(1, len(inputs))
	}
	c := sources.Call{Target: o.Target, Params: o.Params, Body: body, Limit: callLimit, PerInput: limit, OnHandle: rn.started}
	if req.OnHandle != nil {
		c.OnHandle = func(h sources.Handle) {
			rn.started(h)
			req.OnHandle(o, Started{Offer: o.ID, Batch: i, Inputs: inputs, Limit: limit, Handle: h.String()})
		}
	}
	c.Activity, c.Waiting = wd.batch(i)
	if dl, ok := ctx.Deadline(); ok {
		c.Timeout = time.Until(dl)
	}
	res, err := r.job(ctx, client, c, req, o, inputs, i)
	if err != nil || res == nil {
		failCall(rn, i, err)
		return nil
	}
	wd.touch()
	return res
}

// failRequest records batch i whose request program failed.
func failRequest(rn *run, i int, err error) {
	rn.fail(i, &batchFailure{outcome: OutcomeRequestError, retryable: true, verdict: neutral,
		message: fmt.Sprintf("building the upstream request: %v", err)}, nil)
}

// failCall records batch i's failed client call (err) or a client that returned
// neither a result nor an error.
func failCall(rn *run, i int, err error) {
	if err != nil {
		rn.fail(i, callFailure(err), errHandles(err))
		return
	}
	rn.fail(i, &batchFailure{outcome: sources.OutcomeMalformed, retryable: true, verdict: failure,
		message: "the source client returned no result"}, nil)
}

// collect normalizes the items of a batch's answer into records per input.
func (r *Router) collect(rn *run, o *registry.Offer, inputs []string, nowISO string, i int, res *sources.Result) {
	ctx := rn.actx
	out := batchOut{items: len(res.Items), errorItems: res.ErrorItems, deadItems: res.DeadItems, status: res.Status,
		perInput: make([][]json.RawMessage, max(1, len(inputs)))}
	m := newInputMatcher(inputs)
	normalizeItem := o.Normalize.NormalizeItem
	if res.Checked { // the splitter checked the body: no second check of each item
		normalizeItem = o.Normalize.NormalizeCheckedItem
	}
	for _, item := range res.Items {
		k := m.match(item)
		if o.Normalize == nil {
			out.perInput[k] = append(out.perInput[k], item)
			continue
		}
		in := ""
		if len(inputs) > 0 {
			in = inputs[k]
		}
		rec, ok, err := normalizeItem(ctx, item, in, nowISO)
		if err != nil {
			if ctx.Err() != nil {
				return // the attempt is ending; its cause decides
			}
			out.skipped++
			if out.skipErr == nil {
				out.skipErr = err
			}
			continue
		}
		switch {
		case !ok:
			if !normalize.IsErrorItem(item) { // error rows are counted by the source
				out.dropped++
			}
		case r.keepRecord(o, rec, &out):
			out.perInput[k] = append(out.perInput[k], rec)
		}
	}
	if o.Normalize != nil {
		// The records are fresh bytes; the raw items are read no more.
		res.Release()
	}
	if ctx.Err() != nil {
		return
	}
	rn.succeed(i, out, res.Handles)
}

// callFailure classifies a failed client call.
func callFailure(err error) *batchFailure {
	var se *sources.Error
	if errors.As(err, &se) {
		f := &batchFailure{outcome: se.Outcome, status: se.Status, retryable: se.Retryable,
			retryAfter: se.RetryAfter, message: se.Message, verdict: failure}
		if !se.Retryable {
			// The upstream answered coherently: it is healthy, the input is not.
			f.verdict = success
		}
		if f.outcome == "" {
			f.outcome = sources.OutcomeNetwork
		}
		return f
	}
	return &batchFailure{outcome: sources.OutcomeNetwork, retryable: true, verdict: failure,
		message: fmt.Sprintf("calling the source: %v", err)}
}

// errHandles returns the upstream handles a failed call carries.
func errHandles(err error) []string {
	var se *sources.Error
	if errors.As(err, &se) {
		return se.Handles
	}
	return nil
}

// buildBody runs the offer's request program over one batch; without a
// program the body is {"inputs": [...]}.
func buildBody(ctx context.Context, o *registry.Offer, inputs []string, opts map[string]any, limit int, nowISO string) (any, error) {
	ins := make([]any, len(inputs)) // gojq takes []any, not []string
	for i, s := range inputs {
		ins[i] = s
	}
	if o.Request == nil {
		return map[string]any{"inputs": ins}, nil
	}
	// $input is meaningless for a request (it sees every input of the batch).
	outs, err := o.Request.Run(ctx, map[string]any{"inputs": ins, "options": opts, "limit": limit}, "", nowISO)
	if err != nil {
		return nil, fmt.Errorf("running the request program of %s: %w", o.ID, err)
	}
	if len(outs) == 0 {
		return nil, fmt.Errorf("the request program of %s yielded nothing", o.ID)
	}
	if body, ok := outs[0].(map[string]any); ok {
		// A top-level null is not sent (an option the caller left out):
		// declarations need no with_entries(select(.value != null)), which
		// cost gojq 4 KiB per call, for what a record's nulls get too.
		return normalize.WithoutNulls(body), nil
	}
	return outs[0], nil
}

// split cuts inputs into batches of at most size (one empty batch when
// there are no inputs, so the upstream is still called once).
func split(inputs []string, size int) [][]string {
	if size <= 0 {
		size = len(inputs)
	}
	if len(inputs) == 0 {
		return [][]string{nil}
	}
	var out [][]string
	for len(inputs) > size {
		out = append(out, inputs[:size:size])
		inputs = inputs[size:]
	}
	return append(out, inputs)
}

// joinMsg joins two message parts with "; ", skipping empty ones.
func joinMsg(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}
