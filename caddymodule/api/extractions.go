package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
)

// Paging of GET /v1/extractions/{id}/records.
const (
	recordsPageDefault = 100
	recordsPageMax     = 1000
	ndjsonType         = "application/x-ndjson"
)

// recordsPage is the JSON answer of GET /v1/extractions/{id}/records.
type recordsPage struct {
	RunID      string            `json:"run_id"`
	Data       []json.RawMessage `json:"data"`
	Total      int               `json:"total"`
	NextCursor *string           `json:"next_cursor"`
}

// getRecords serves GET /v1/extractions/{id}/records: a settled run's
// records a page at a time (cursor, limit), as JSON or, with Accept:
// application/x-ndjson, one record a line with the next page in a Link
// header; a run still running is 409 run_not_finished.
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
	run, apiErr := a.settledRun(r, key, id)
	if apiErr != nil {
		apiErr.write(w)
		return
	}
	end := min(offset+limit, len(run.Data))
	page := recordsPage{RunID: id, Data: []json.RawMessage{}, Total: len(run.Data)}
	if offset < len(run.Data) {
		page.Data = run.Data[offset:end]
	}
	if end < len(run.Data) {
		c := base64.RawURLEncoding.EncodeToString([]byte(id + ":" + strconv.Itoa(end)))
		page.NextCursor = &c
		w.Header().Set("Link", fmt.Sprintf(`</v1/extractions/%s/records?cursor=%s&limit=%d>; rel="next"`, id, c, limit))
	}
	if strings.Contains(r.Header.Get("Accept"), ndjsonType) {
		w.Header().Set("Content-Type", ndjsonType)
		w.Header().Set("X-Total-Count", strconv.Itoa(page.Total))
		w.WriteHeader(http.StatusOK)
		for _, rec := range page.Data {
			w.Write(rec)
			w.Write([]byte{'\n'})
		}
		return
	}
	writeJSON(w, http.StatusOK, page)
}

// settledRun reads a settled run of the key's account; 409
// run_not_finished while it runs, 404 for an id the account lacks.
func (a *API) settledRun(r *http.Request, key store.Key, id string) (runs.Run, *Error) {
	if !strings.HasPrefix(id, "ext_") {
		return runs.Run{}, asyncNotFound(id)
	}
	run, err := a.Store.GetRun(r.Context(), key.AccountID, id)
	if errors.Is(err, store.ErrNotFound) {
		if _, aerr := a.Store.GetAsyncRun(r.Context(), key.AccountID, id); aerr == nil {
			return runs.Run{}, newError(http.StatusConflict, "run_not_finished", typeValidation,
				"the run is still running: its records are served once it completed; follow GET /v1/extractions/"+id).
				with("run_id", id)
		}
		run, err = a.Store.GetRun(r.Context(), key.AccountID, id)
	}
	if errors.Is(err, store.ErrNotFound) {
		return runs.Run{}, asyncNotFound(id)
	}
	if err != nil {
		a.Logger.Error("reading run", zap.Error(err))
		return runs.Run{}, storeUnavailable()
	}
	return run, nil
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
	finished := func(doc []byte) {
		newError(http.StatusConflict, "run_finished", typeValidation,
			fmt.Sprintf("the run is already %s: only a running run can be cancelled", statusOf(doc))).with("run_id", id).write(w)
	}
	if doc, err := a.Store.GetRunJSON(ctx, nil, key.AccountID, id); err == nil {
		finished(doc)
		return
	}
	ar, err := a.Store.CancelAsyncRun(ctx, key.AccountID, id)
	if errors.Is(err, store.ErrNotFound) {
		if doc, err := a.Store.GetRunJSON(ctx, nil, key.AccountID, id); err == nil {
			finished(doc)
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
		doc, err := a.Store.GetRunJSON(ctx, nil, key.AccountID, id)
		if err == nil {
			if statusOf(doc) != runs.StatusCancelled {
				finished(doc)
				return
			}
			writeRaw(w, http.StatusOK, doc)
			return
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
