package dashboard

import (
	"context"
	"encoding/json"
	"fmt"

	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
)

// inFlightShown bounds the async runs in flight the runs page lists
// (newest first): an account may have async_max_per_account of them.
const inFlightShown = 100

// inFlight returns the account's async runs in flight as the runs page
// lists them: their running documents (status running, no completion),
// which the API serves for GET /v1/extractions/{id} meanwhile.
func (h *Handler) inFlight(ctx context.Context, accountID string) ([]runs.Run, error) {
	ars, err := h.Store.ListAsyncRuns(ctx, accountID, inFlightShown)
	if err != nil {
		return nil, err
	}
	out := make([]runs.Run, 0, len(ars))
	for _, ar := range ars {
		run, err := runningRun(ar)
		if err != nil {
			return nil, err
		}
		out = append(out, run)
	}
	return out, nil
}

// runningRun decodes an async run's document as it stands.
func runningRun(ar store.AsyncRun) (runs.Run, error) {
	var run runs.Run
	if err := json.Unmarshal(ar.Doc, &run); err != nil {
		return runs.Run{}, fmt.Errorf("decoding async run %s: %v", ar.ID, err)
	}
	run.ID, run.Status = ar.ID, runs.Queued.Status() // an async run in flight, whatever its state
	if run.CreatedAt.IsZero() {
		run.CreatedAt = ar.CreatedAt
	}
	return run, nil
}
