package dashboard

import (
	"errors"
	"net/http"
	"slices"

	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
)

type runsData struct {
	// InFlight are the async runs not settled yet, newest first (none
	// when the status filter asks for settled runs only).
	InFlight []runs.Run
	Runs     []store.RunSummary
	Filter   map[string]string
	Services []string
	Error    string
}

// runsPage serves GET /runs?service=&status=&from=&to=: the account's
// async runs in flight, then its latest settled runs, newest first.
func (h *Handler) runsPage(w http.ResponseWriter, r *http.Request, s *Session) {
	f, vals, err := runFilter(r)
	d := runsData{Filter: vals}
	status := http.StatusOK
	if err != nil {
		d.Error, status = err.Error(), http.StatusBadRequest
	} else if d.Runs, err = h.Store.ListRuns(r.Context(), s.AccountID, f); err != nil {
		h.failed(w, r, s, "listing runs", err)
		return
	} else if vals["status"] == "" {
		if d.InFlight, err = h.inFlight(r.Context(), s.AccountID); err != nil {
			h.failed(w, r, s, "listing async runs", err)
			return
		}
	}
	if reg := h.Registry(); reg != nil {
		for _, e := range catalogue(reg) {
			// platform/service: profile.info alone names two services.
			if k := e.Platform + "/" + e.Service; !slices.Contains(d.Services, k) {
				d.Services = append(d.Services, k)
			}
		}
	}
	h.render(w, status, "runs", s, view{Title: "Runs", Nav: "runs", Data: d})
}

// runPage serves GET /runs/{id}; another account's run is not found. An
// async run in flight shows as it stands (status running).
func (h *Handler) runPage(w http.ResponseWriter, r *http.Request, s *Session) {
	run, err := h.Store.GetRun(r.Context(), s.AccountID, r.PathValue("id"))
	if errors.Is(err, store.ErrNotFound) {
		var ar store.AsyncRun
		if ar, err = h.Store.GetAsyncRun(r.Context(), s.AccountID, r.PathValue("id")); err == nil {
			run, err = runningRun(ar)
		}
	}
	if err != nil {
		h.runError(w, r, s, err)
		return
	}
	h.render(w, http.StatusOK, "run", s, view{Title: "Run " + run.ID, Nav: "runs", Data: run})
}

// downloadRun serves GET /runs/{id}/download: the run as the API answers
// GET /v1/extractions/{id}, as a file.
func (h *Handler) downloadRun(w http.ResponseWriter, r *http.Request, s *Session) {
	id := r.PathValue("id")
	b, err := h.Store.GetRunJSON(r.Context(), nil, s.AccountID, id)
	if errors.Is(err, store.ErrNotFound) { // in flight: the document as it stands
		var ar store.AsyncRun
		if ar, err = h.Store.GetAsyncRun(r.Context(), s.AccountID, id); err == nil {
			b = ar.Doc
		}
	}
	if err != nil {
		h.runError(w, r, s, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Disposition", `attachment; filename="`+id+`.json"`)
	w.Write(b)
}

// runError answers a failed run lookup: 404 for a missing run or another
// account's (the store scopes the lookup).
func (h *Handler) runError(w http.ResponseWriter, r *http.Request, s *Session, err error) {
	if errors.Is(err, store.ErrNotFound) {
		h.notFound(w, r, s)
		return
	}
	h.failed(w, r, s, "reading run", err)
}
