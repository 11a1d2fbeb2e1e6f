package api

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"go.uber.org/zap"

	"socialrouter/caddymodule/store"
)

// getRun serves GET /v1/extractions/{id}, scoped to the caller's account.
func (a *API) getRun(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	key, apiErr := a.Authenticate(r)
	if apiErr != nil {
		apiErr.write(w)
		return
	}
	notFound := func() {
		newError(http.StatusNotFound, "not_found", typeNotFound, fmt.Sprintf("no run %q in this account", id)).write(w)
	}
	if !strings.HasPrefix(id, "ext_") {
		notFound()
		return
	}
	buf := runBufs.Get(0)
	defer runBufs.Put(buf)
	b, err := a.Store.GetRunJSON(r.Context(), (*buf)[:0], key.AccountID, id)
	*buf = b
	if errors.Is(err, store.ErrNotFound) {
		notFound()
		return
	}
	if err != nil {
		a.Logger.Error("reading run", zap.Error(err))
		storeUnavailable().write(w)
		return
	}
	// The stored document is the answer: served as stored, not decoded and
	// encoded again.
	writeRaw(w, http.StatusOK, b)
}
