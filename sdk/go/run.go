package sdr

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// extract is a synchronous call of an extract service: the completed run
// with its records typed T.
func extract[T any](ctx context.Context, c *Client, path string, body any, opts []CallOption) (*Run[T], error) {
	return send[Run[T]](ctx, c, http.MethodPost, path, body, newCallConfig(opts))
}

// extractAsync submits a call with Prefer: respond-async and returns the
// handle of its run.
func extractAsync[T any](ctx context.Context, c *Client, path string, body any, opts []CallOption) (*RunHandle[T], error) {
	opts = append([]CallOption{WithHeader("Prefer", "respond-async")}, opts...)
	run, err := extract[T](ctx, c, path, body, opts)
	if err != nil {
		return nil, err
	}
	return &RunHandle[T]{ID: run.ID, Run: run, c: c, PollInterval: time.Second}, nil
}

// ExtractRaw calls POST /v1/extract/{platform}/{service} with any body, its
// records left as JSON: for a service newer than this SDK.
func (c *Client) ExtractRaw(ctx context.Context, platform, service string, body any, opts ...CallOption) (*Run[json.RawMessage], error) {
	return extract[json.RawMessage](ctx, c, extractPath(platform, service), body, opts)
}

// ExtractAsync submits POST /v1/extract/{platform}/{service} with
// Prefer: respond-async and returns the run's handle; the typed form is
// client.Extract.<Platform>.<Service>Async.
func (c *Client) ExtractAsync(ctx context.Context, platform, service string, body any, opts ...CallOption) (*RunHandle[json.RawMessage], error) {
	return extractAsync[json.RawMessage](ctx, c, extractPath(platform, service), body, opts)
}

func extractPath(platform, service string) string {
	return "/v1/extract/" + url.PathEscape(platform) + "/" + url.PathEscape(service)
}

// Handle returns the handle of a run by its id (ext_…), for a run submitted
// earlier or elsewhere.
func Handle[T any](c *Client, id string) *RunHandle[T] {
	return &RunHandle[T]{ID: id, c: c, PollInterval: time.Second}
}

// RunHandle follows an async run: Wait until it settles, Cancel it, and
// range over its Records.
type RunHandle[T any] struct {
	ID string
	// Run is the run as last read.
	Run *Run[T]
	// PollInterval is the pause between two reads of the run in Wait.
	PollInterval time.Duration
	c            *Client
}

// Status reads the run as it stands (GET /v1/extractions/{id}).
func (h *RunHandle[T]) Status(ctx context.Context) (*Run[T], error) {
	var run Run[T]
	if err := h.c.get(ctx, "/v1/extractions/"+url.PathEscape(h.ID), &run); err != nil {
		return nil, err
	}
	h.Run = &run
	return &run, nil
}

// Wait reads the run until it is no longer running and returns it:
// completed, failed (its Error says why) or cancelled. ctx bounds the wait.
func (h *RunHandle[T]) Wait(ctx context.Context) (*Run[T], error) {
	for {
		run, err := h.Status(ctx)
		if err != nil {
			return nil, err
		}
		if run.Status != "running" {
			return run, nil
		}
		t := time.NewTimer(h.PollInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// Cancel cancels the run (POST /v1/extractions/{id}/cancel) and returns it
// as the gateway answered: cancelled, or still running when its worker on
// another node has not settled it yet. A settled run is 409 run_finished.
func (h *RunHandle[T]) Cancel(ctx context.Context) (*Run[T], error) {
	run, err := send[Run[T]](ctx, h.c, http.MethodPost, "/v1/extractions/"+url.PathEscape(h.ID)+"/cancel", nil, callConfig{})
	if err != nil {
		return nil, err
	}
	h.Run = run
	return run, nil
}

// Page reads one page of a settled run's records (limit 1–1000, cursor ""
// for the first page).
func (h *RunHandle[T]) Page(ctx context.Context, limit int, cursor string) (*RecordsPage[T], error) {
	q := url.Values{"limit": {strconv.Itoa(limit)}}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	var page RecordsPage[T]
	if err := h.c.get(ctx, "/v1/extractions/"+url.PathEscape(h.ID)+"/records?"+q.Encode(), &page); err != nil {
		return nil, err
	}
	return &page, nil
}

// RecordsPageSize is the page size Records reads.
const RecordsPageSize = 1000

// Records iterates over a settled run's records, a page of 1,000 at a
// time; an error ends the iteration with it (a run still running is 409
// run_not_finished: Wait first).
//
//	for rec, err := range h.Records(ctx) { … }
func (h *RunHandle[T]) Records(ctx context.Context) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		cursor := ""
		for {
			page, err := h.Page(ctx, RecordsPageSize, cursor)
			if err != nil {
				yield(zero, err)
				return
			}
			for _, rec := range page.Data {
				if !yield(rec, nil) {
					return
				}
			}
			if page.NextCursor == nil || *page.NextCursor == "" {
				return
			}
			cursor = *page.NextCursor
		}
	}
}
