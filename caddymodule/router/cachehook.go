package router

import (
	"context"
	"encoding/json"
)

// What the freshness cache (caddymodule/cache, used by the API around
// Run) needs of the router: which input each record answers, and the
// limit applied exactly as a call's over records merged from cache and
// from live work.

// RunInputs is Run that also returns, for each record of the result, the
// index in req.Inputs of the input it answers, as the walk matched each
// upstream item to its input (batch.go), so a caller can keep records
// input by input. inputs is nil when a record cannot be placed: an item of
// a batch of several inputs named none of them.
//
// req is by pointer, and Run's call by value in a function of its own: a
// held call waits in here, and a Request passed by value takes its size
// twice on the waiting stack (docs/perf-log.md, issue 38's in-flight
// round).
func (r *Router) RunInputs(ctx context.Context, req *Request) (res *Result, inputs []int, err error) {
	if req.Service == nil || req.Pin == nil && len(req.Chain()) == 0 {
		res, err = r.runCopy(ctx, req) // the failures Run answers
		return res, nil, err
	}
	var w walk
	w.prepare(r, req, nil)
	if req.Pin != nil {
		res, err = w.finish(w.try(ctx, req.Pin, r.breakers.force(req.Pin), ""))
	} else {
		res, err = w.over(ctx, req.Chain())
	}
	if err != nil {
		return nil, nil, err
	}
	return res, w.inputsOf(res), nil
}

// runCopy is Run on a copy of *req.
//
//go:noinline
func (r *Router) runCopy(ctx context.Context, req *Request) (*Result, error) {
	return r.Run(ctx, *req)
}

// inputsOf places each record of res by identity: records are the very
// slices the serving attempt (or the records kept across offers) holds
// per input.
func (w *walk) inputsOf(res *Result) []int {
	at := map[*byte]int{}
	add := func(per [][]json.RawMessage) {
		for i, recs := range per {
			for _, rec := range recs {
				if len(rec) > 0 {
					at[&rec[0]] = i
				}
			}
		}
	}
	if w.keep != nil {
		add(w.keep.perInput)
	} else {
		for _, a := range w.tried {
			if a.ok {
				add(a.perInput)
			}
		}
	}
	for _, a := range w.tried {
		if a.unmatched > 0 {
			return nil
		}
	}
	out := make([]int, len(res.Records))
	for j, rec := range res.Records {
		i, ok := 0, false
		if len(rec) > 0 {
			i, ok = at[&rec[0]]
		}
		if !ok || i >= len(w.req.Inputs) {
			return nil
		}
		out[j] = i
	}
	return out
}

// ApplyLimit is the router's cut of per-input records by scope (see
// applyLimit), for callers that merge records around Run.
func ApplyLimit[T any](perInput [][]T, limit, skip int, scope string) (records []T, total int, more bool) {
	return applyLimit(perInput, limit, skip, scope)
}

// Scope is the limit scope in force for the request.
func (req *Request) Scope() string { return req.scope() }
