package api

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
	"socialrouter/internal/jsonstr"
)

// Paging of GET /v1/extractions/{id}/records.
const (
	recordsPageDefault = 100
	recordsPageMax     = 1000
	ndjsonType         = "application/x-ndjson"
)

// getRecords serves GET /v1/extractions/{id}/records: a settled run's
// records a page at a time (cursor, limit), as JSON or, with Accept:
// application/x-ndjson, one record a line with the next page in a Link
// header; a run still running is 409 run_not_finished. The page is cut
// out of the stored document's bytes (runs.Records), never decoded.
func (a *API) getRecords(w http.ResponseWriter, r *http.Request) {
	key, apiErr := a.Authenticate(r)
	if apiErr != nil {
		apiErr.write(w)
		return
	}
	id := r.PathValue("id")
	q := r.URL.Query()
	limit := recordsPageDefault
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > recordsPageMax {
			newError(http.StatusBadRequest, "invalid_limit", typeValidation,
				fmt.Sprintf("limit must be an integer from 1 to %d (default %d)", recordsPageMax, recordsPageDefault)).write(w)
			return
		}
		limit = n
	}
	offset := 0
	if s := q.Get("cursor"); s != "" {
		b, err := base64.RawURLEncoding.DecodeString(s)
		n, cerr := strconv.Atoi(strings.TrimPrefix(string(b), id+":"))
		if err != nil || cerr != nil || n < 0 || !strings.HasPrefix(string(b), id+":") {
			newError(http.StatusBadRequest, "invalid_cursor", typeValidation,
				"cursor is not one this run's records answered: send next_cursor as it came").write(w)
			return
		}
		offset = n
	}
	buf := runBufs.Get(0)
	defer runBufs.Put(buf)
	doc, apiErr := a.settledRunJSON(r, key, id, (*buf)[:0])
	*buf = doc
	if apiErr != nil {
		apiErr.write(w)
		return
	}
	recs, ok := runs.Records(doc)
	if !ok {
		a.Logger.Error("reading run", zap.String("run_id", id), zap.String("error", "stored document without a data array"))
		storeUnavailable().write(w)
		return
	}
	total := len(recs)
	end := min(offset+limit, total)
	page := recs[min(offset, total):end]
	var cursor string
	if end < total {
		cursor = base64.RawURLEncoding.EncodeToString([]byte(id + ":" + strconv.Itoa(end)))
		w.Header().Set("Link", fmt.Sprintf(`</v1/extractions/%s/records?cursor=%s&limit=%d>; rel="next"`, id, cursor, limit))
	}
	if strings.Contains(r.Header.Get("Accept"), ndjsonType) {
		w.Header().Set("Content-Type", ndjsonType)
		w.Header().Set("X-Total-Count", strconv.Itoa(total))
		w.WriteHeader(http.StatusOK)
		for _, rec := range page {
			w.Write(rec)
			w.Write([]byte{'\n'})
		}
		return
	}
	out := runBufs.Get(recordsPageSize(page))
	defer runBufs.Put(out)
	*out = appendRecordsPage((*out)[:0], id, page, total, cursor)
	writeRaw(w, http.StatusOK, *out)
}

// appendRecordsPage appends the JSON answer of a records page:
// {"run_id","data","total","next_cursor"}, the bytes encoding/json gave
// for it (no HTML escaping; the records, compact already, as they are;
// next_cursor null on the last page).
func appendRecordsPage(b []byte, id string, page [][]byte, total int, cursor string) []byte {
	b = append(b, `{"run_id":`...)
	b = jsonstr.Append(b, id, false)
	b = append(b, `,"data":[`...)
	for i, rec := range page {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, rec...)
	}
	b = append(b, `],"total":`...)
	b = strconv.AppendInt(b, int64(total), 10)
	b = append(b, `,"next_cursor":`...)
	if cursor == "" {
		b = append(b, "null"...)
	} else {
		b = jsonstr.Append(b, cursor, false)
	}
	return append(b, '}')
}

// recordsPageSize is about what a page of recs takes as JSON.
func recordsPageSize(recs [][]byte) int {
	n := 256
	for _, r := range recs {
		n += len(r) + 1
	}
	return n
}

// settledRunJSON appends to dst the API form of a settled run of the
// key's account; 409 run_not_finished while it runs, 404 for an id the
// account lacks.
func (a *API) settledRunJSON(r *http.Request, key store.Key, id string, dst []byte) ([]byte, *Error) {
	if !strings.HasPrefix(id, "ext_") {
		return dst, asyncNotFound(id)
	}
	doc, err := a.Store.GetRunJSON(r.Context(), dst, key.AccountID, id)
	if errors.Is(err, store.ErrNotFound) {
		if _, aerr := a.Store.GetAsyncRun(r.Context(), key.AccountID, id); aerr == nil {
			return dst, newError(http.StatusConflict, "run_not_finished", typeValidation,
				"the run is still running: its records are served once it completed; follow GET /v1/extractions/"+id).
				with("run_id", id)
		}
		doc, err = a.Store.GetRunJSON(r.Context(), dst, key.AccountID, id)
	}
	if errors.Is(err, store.ErrNotFound) {
		return dst, asyncNotFound(id)
	}
	if err != nil {
		a.Logger.Error("reading run", zap.Error(err))
		return dst, storeUnavailable()
	}
	return doc, nil
}

// cancelWait bounds how long POST /v1/extractions/{id}/cancel waits for
// the run's worker to stop the upstream work and settle the run.
const cancelWait = 20 * time.Second

// cancelRun serves POST /v1/extractions/{id}/cancel: it marks the async
// run cancelled (its worker, on this node at once or on another at its
// next lease renewal, aborts the upstream work and settles the run with
// no charge, releasing its hold) and answers the cancelled run once
// settled; 202 with the run as it stands if that takes longer than
// cancelWait. A settled run is 409 run_finished.
func (a *API) cancelRun(w http.ResponseWriter, r *http.Request) {
	key, apiErr := a.Authenticate(r)
	if apiErr != nil {
		apiErr.write(w)
		return
	}
	id := r.PathValue("id")
	if !strings.HasPrefix(id, "ext_") {
		asyncNotFound(id).write(w)
		return
	}
	ctx := r.Context()
	finished := func(st runs.Status) {
		newError(http.StatusConflict, "run_finished", typeValidation,
			fmt.Sprintf("the run is already %s: only a running run can be cancelled", st)).with("run_id", id).write(w)
	}
	if run, err := a.Store.GetRun(ctx, key.AccountID, id); err == nil {
		finished(run.Status)
		return
	}
	ar, err := a.Store.CancelAsyncRun(ctx, key.AccountID, id)
	if errors.Is(err, store.ErrNotFound) {
		if run, err := a.Store.GetRun(ctx, key.AccountID, id); err == nil {
			finished(run.Status)
			return
		}
		asyncNotFound(id).write(w)
		return
	}
	if err != nil {
		a.Logger.Error("cancelling an async run", zap.Error(err))
		storeUnavailable().write(w)
		return
	}
	from := runs.Queued
	if ar.Owner != "" {
		from = runs.Leased // or further: a worker holds it
	}
	if err := runs.Check(from, runs.CancelRequested, runs.Canceller); err != nil {
		a.Logger.Error("cancelling an async run", zap.Error(err))
	}
	var done <-chan struct{}
	if a.Async != nil {
		done = a.Async.Cancel(id)
	}
	if done == nil {
		// No worker here runs it: its node is gone, or the worker there
		// sees the cancel at its next renewal. Its upstream work stops now.
		a.abortRecorded(context.WithoutCancel(ctx), ar)
	} else {
		select {
		case <-done:
		case <-time.After(cancelWait):
		case <-ctx.Done():
			return
		}
	}
	// Another node's worker, or none yet: wait for the settle.
	deadline := time.Now().Add(cancelWait)
	for {
		run, err := a.Store.GetRun(ctx, key.AccountID, id)
		if err == nil {
			if run.Status.Settled() != runs.Cancelled {
				finished(run.Status)
				return
			}
			doc, err := a.Store.GetRunJSON(ctx, nil, key.AccountID, id)
			if err == nil {
				writeRaw(w, http.StatusOK, doc)
				return
			}
		}
		if !errors.Is(err, store.ErrNotFound) || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
	writeAccepted(w, id, ar.Doc)
}
