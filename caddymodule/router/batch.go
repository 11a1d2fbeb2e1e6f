package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"socialrouter/caddymodule/normalize"
	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/sources"
	"socialrouter/internal/jsonscan"
)

// One batch: its upstream request built, sent as one upstream job
// (job.go), and its items matched to their inputs, normalized and checked
// against the record schema; the batch's outcome goes to the batchSet its
// attempt assembles.

// batchSet is what one attempt's batches share: the attempt's context,
// and each batch's output or failure and the upstream work it started.
type batchSet struct {
	actx   context.Context
	cancel context.CancelCauseFunc

	mu     sync.Mutex
	closed bool // the attempt has been assembled; late batches are ignored
	// failure is a final failure (the upstream rejected the input): it
	// ends the attempt and cancels the other batches.
	failure *batchFailure
	// failed holds, per batch, a failure the next offer may cure: the
	// other batches run on and are kept, only this batch's inputs fail
	// over.
	failed  []*batchFailure
	handles []string
	outs    []batchOut
}

// started records the handle of upstream work as soon as a client reports
// it (sources.Call.OnHandle), so a failed, cancelled or abandoned attempt
// still names the work it paid for.
func (bs *batchSet) started(h sources.Handle) {
	bs.mu.Lock()
	bs.handles = sources.MergeHandles(bs.handles, h.String())
	bs.mu.Unlock()
}

// fail records the failure of batch i. A final failure (not retryable:
// another offer would fail the same way) is the attempt's and cancels the
// siblings; a retryable one is the batch's alone: the siblings run on and
// what they serve is kept while this batch's inputs fail over. A failure
// seen after the attempt's context ended is a consequence of that
// (deadline, soft timeout, final failure, caller gone) and the cause
// decides instead.
func (bs *batchSet) fail(i int, f *batchFailure, handles []string) {
	bs.mu.Lock()
	final := !f.retryable
	if !bs.closed {
		bs.handles = sources.MergeHandles(bs.handles, handles...)
		switch {
		case bs.actx.Err() != nil:
		case final && bs.failure == nil:
			bs.failure = f
		case !final && bs.failed[i] == nil:
			bs.failed[i] = f
		}
	}
	bs.mu.Unlock()
	if final {
		bs.cancel(errBatchFailed)
	}
}

// succeed stores a batch's output.
func (bs *batchSet) succeed(i int, out batchOut, handles []string) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if bs.closed {
		return
	}
	bs.handles = sources.MergeHandles(bs.handles, handles...)
	out.done = true
	bs.outs[i] = out
}

// batchFailure is a failed upstream call of one batch.
type batchFailure struct {
	outcome    string
	status     int
	retryable  bool
	retryAfter time.Duration
	message    string
	verdict    verdict
}

// batchOut is what one successful batch produced.
type batchOut struct {
	done bool
	// perInput holds the records of each of the batch's inputs, in item order.
	perInput   [][]json.RawMessage
	items      int
	errorItems int
	// deadItems are the error items saying the input's page is gone.
	deadItems int
	// deadInputs counts the inputs they answer.
	deadInputs int
	status     int
	// skipped counts items the normalize program failed on; skipErr is the
	// first such error.
	skipped int
	skipErr error
	// invalid counts records off the record schema (keepRecord);
	// invalidMsg describes the first.
	invalid    int
	invalidMsg string
	// dropped counts data items (not error rows) the normalize program
	// made no record of.
	dropped int
	// unmatched counts records of a batch of several inputs whose item
	// named none of them (placed under the first): they cannot be kept
	// input by input (RunInputs).
	unmatched int
}

// batch runs one upstream call and normalizes its items.
func (r *Router) batch(bs *batchSet, p *pulse, client sources.Client, o *registry.Offer, req *Request,
	inputs []string, limit int, opts map[string]any, nowISO string, i int) {
	res, body := r.call(bs, p, client, o, req, inputs, limit, opts, nowISO, i)
	if res != nil {
		r.collect(bs, o, inputs, body, nowISO, i, res)
	}
}

// call sends one batch's upstream request and returns its answer, or nil
// when it failed (recorded in bs). A held call waits in here: its frame,
// and those of its callers, stay on the goroutine's stack for the whole
// wait, so what runs before and after the wait is in functions of its own
// (buildBody, failCall, collect), and a call held by a slow upstream fits
// the stack size that Caddy's own reverse_proxy needs. body is the request
// sent, which the items may echo (inputMatcher.sent).
func (r *Router) call(bs *batchSet, p *pulse, client sources.Client, o *registry.Offer, req *Request,
	inputs []string, limit int, opts map[string]any, nowISO string, i int) (*sources.Result, any) {
	ctx := bs.actx
	p.activity() // the batch begins: silence counts from here
	body, err := buildBody(ctx, o, inputs, opts, limit, nowISO)
	if err != nil {
		failRequest(bs, i, err)
		return nil, nil
	}
	callLimit := limit
	if callLimit > 0 && req.scope() == registry.ScopePerInput {
		callLimit *= max(1, len(inputs))
	}
	c := sources.Call{Target: o.Target, Params: o.Params, Body: body, Limit: callLimit, PerInput: limit, OnHandle: bs.started,
		RunID: req.RunID, Batch: i}
	if req.OnHandle != nil {
		c.OnHandle = func(h sources.Handle) {
			bs.started(h)
			req.OnHandle(o, Started{Offer: o.ID, Batch: i, Inputs: inputs, Limit: limit, Handle: h.String(), Batches: len(bs.outs)})
		}
	}
	c.Activity, c.Waiting = p.activity, p.waiting
	if dl, ok := ctx.Deadline(); ok {
		c.Timeout = time.Until(dl)
	}
	res, err := r.job(ctx, client, c, req, o, inputs, i)
	if err != nil || res == nil {
		failCall(bs, i, err)
		return nil, nil
	}
	p.activity()
	return res, body
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

// failRequest records batch i whose request program failed.
func failRequest(bs *batchSet, i int, err error) {
	bs.fail(i, &batchFailure{outcome: OutcomeRequestError, retryable: true, verdict: neutral,
		message: fmt.Sprintf("building the upstream request: %v", err)}, nil)
}

// failCall records batch i's failed client call (err) or a client that returned
// neither a result nor an error.
func failCall(bs *batchSet, i int, err error) {
	if err != nil {
		bs.fail(i, callFailure(err), errHandles(err))
		return
	}
	bs.fail(i, &batchFailure{outcome: sources.OutcomeMalformed, retryable: true, verdict: failure,
		message: "the source client returned no result"}, nil)
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

// collect normalizes the items of a batch's answer into records per input.
func (r *Router) collect(bs *batchSet, o *registry.Offer, inputs []string, body any, nowISO string, i int, res *sources.Result) {
	ctx := bs.actx
	out := batchOut{items: len(res.Items), errorItems: res.ErrorItems, deadItems: res.DeadItems, status: res.Status,
		perInput: make([][]json.RawMessage, max(1, len(inputs)))}
	m := newInputMatcher(inputs)
	m.sent(body)
	// The records of a checked body (the splitter checked it: no second
	// check of each item) are written one after the other into a scratch
	// buffer, then copied into one allocation of their size (records.go):
	// one allocation for the batch, where a record each cost its own and
	// a copy out of the normalizer's buffer.
	var recs *records
	if res.Checked && o.Normalize != nil {
		recs = newRecords()
		defer recs.release() // a return before place
	}
	gone := map[int]bool{}
	for idx, item := range res.Items {
		k, placed := m.place(item)
		if !placed {
			out.unmatched++ // counted per item: an upper bound of its records
		}
		if o.Normalize == nil {
			out.perInput[k] = append(out.perInput[k], item)
			continue
		}
		in := ""
		if len(inputs) > 0 {
			in = inputs[k]
		}
		var rec []byte
		var ok bool
		var err error
		start := 0
		if recs != nil {
			start = recs.at()
			var members []jsonscan.Member
			if res.Members != nil {
				members = res.Members[idx]
			}
			*recs.buf, ok, err = o.Normalize.AppendIndexedItem(ctx, *recs.buf, item, members, in, nowISO)
			rec = recs.record(start)
		} else {
			rec, ok, err = o.Normalize.NormalizeItem(ctx, item, in, nowISO)
		}
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
			} else if dead := sources.DeadRow(item); dead || o.GoneRow(item) {
				// A page gone (dead_page, or a row the offer's
				// error_rows declares gone or private): counted per
				// input, for the attempt's message.
				if !dead {
					out.deadItems++ // the source counted its dead_page rows
				}
				gone[k] = true
			}
		case !r.keepRecord(o, rec, &out):
			if recs != nil {
				recs.drop(start)
			}
		case recs != nil:
			recs.keep(k, start)
		default:
			out.perInput[k] = append(out.perInput[k], rec)
		}
	}
	if recs != nil {
		recs.place(out.perInput)
	}
	out.deadInputs = len(gone)
	if o.Normalize != nil {
		// The records are fresh bytes; the raw items are read no more.
		res.Release()
	}
	if ctx.Err() != nil {
		return
	}
	bs.succeed(i, out, res.Handles)
}

// inputMatcher finds which input of a batch an upstream item answers, so
// records come back in input order and $input is the right one. Upstreams
// answer a batch in their own order; they echo the input in an `input`
// object (dataset_scrape) or carry it in a top-level field (url, query…).
type inputMatcher struct {
	n     int
	index map[string]int // matchKey(input) → first position in the batch
}

// newInputMatcher indexes a batch's inputs.
func newInputMatcher(inputs []string) *inputMatcher {
	m := &inputMatcher{n: len(inputs)}
	if len(inputs) > 1 {
		m.index = make(map[string]int, len(inputs))
		for i, in := range inputs {
			k := matchKey(in)
			if _, dup := m.index[k]; !dup {
				m.index[k] = i
			}
		}
	}
	return m
}

// matchKey is the form inputs and item fields are compared in: case and a
// trailing slash do not matter.
func matchKey(s string) string {
	return strings.ToLower(strings.TrimSuffix(strings.TrimSpace(s), "/"))
}

// sent also indexes what the request body sent for each input, when it
// holds an array of one element per input (a request program that sends
// a place id as the URL that names it: the upstream echoes the URL, not
// the id). A string element, or each string member of an object element,
// names its input, unless the input itself or another element holds that
// string too (a constant such as a country is no one input's).
func (m *inputMatcher) sent(body any) {
	obj, ok := body.(map[string]any)
	if !ok || m.n <= 1 {
		return
	}
	var elems []any
	for _, v := range obj {
		if a, ok := v.([]any); ok && len(a) == m.n {
			if elems != nil {
				return // two arrays of n: which one is per input is unknown
			}
			elems = a
		}
	}
	owner := map[string]int{}
	for i, e := range elems {
		var strs []string
		switch e := e.(type) {
		case string:
			strs = []string{e}
		case map[string]any:
			for _, v := range e {
				if s, ok := v.(string); ok {
					strs = append(strs, s)
				}
			}
		}
		for _, s := range strs {
			k := matchKey(s)
			if j, seen := owner[k]; seen && j != i {
				owner[k] = -1
			} else if !seen {
				owner[k] = i
			}
		}
	}
	for k, i := range owner {
		if _, taken := m.index[k]; !taken && i >= 0 {
			m.index[k] = i
		}
	}
}

// match returns the position in the batch of the input item answers: the
// only input; else one equal to a string field of the item's `input` object,
// then to a top-level string field; else the first input. The raw item
// (valid JSON: the splitter checked the body) is scanned in place rather
// than decoded again.
func (m *inputMatcher) match(item json.RawMessage) int {
	i, _ := m.place(item)
	return i
}

// place is match, and whether the item named its input (always, in a
// batch of one input).
func (m *inputMatcher) place(item json.RawMessage) (int, bool) {
	if m.n <= 1 {
		return 0, true
	}
	doc := jsonscan.TrimSpace(jsonscan.Bytes(item))
	if doc == "" || doc[0] != '{' {
		return 0, false
	}
	if in, ok := jsonscan.Lookup(doc, "input"); ok && in[0] == '{' {
		if i := m.lookup(in); i >= 0 {
			return i, true
		}
	}
	i := m.lookup(doc)
	return max(0, i), i >= 0
}

// lookup returns the position of the input equal to the first string
// member of object obj that is one, or -1.
func (m *inputMatcher) lookup(obj string) int {
	for i := 1; ; {
		_, v, next, ok := jsonscan.NextMember(obj, i)
		if !ok {
			return -1
		}
		if v[0] == '"' {
			if p, ok := m.index[matchKey(jsonscan.Text(v))]; ok {
				return p
			}
		}
		i = next
	}
}

// keepRecord reports whether rec, produced by o's normalizer, is on its
// service's record schema. A record off it is never served nor billed: it
// is logged with the offer, field and reason, and counted in out as a
// failed item of the attempt, as an upstream error record is.
func (r *Router) keepRecord(o *registry.Offer, rec []byte, out *batchOut) bool {
	v := o.Service.CheckRecord(rec)
	if v == nil {
		return true
	}
	out.invalid++
	if r.cfg.Observer != nil {
		r.cfg.Observer.RecordRefused(o.ID)
	}
	if out.invalidMsg == "" {
		out.invalidMsg = v.Error()
	}
	r.logger.Warn("record off its declared schema dropped",
		zap.String("service", o.Service.Key), zap.String("offer", o.ID),
		zap.String("field", v.Field), zap.String("reason", v.Reason))
	return false
}
