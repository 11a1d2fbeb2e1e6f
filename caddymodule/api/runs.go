package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"go.uber.org/zap"

	"socialrouter/caddymodule/store"
)

// getRun serves GET /v1/extractions/{id}, scoped to the caller's account.
func (a *API) getRun(w http.ResponseWriter, r *http.Request) {
	key, apiErr := a.Authenticate(r)
	if apiErr != nil {
		apiErr.write(w)
		return
	}
	buf := runBufs.Get(0)
	defer runBufs.Put(buf)
	b, apiErr := a.RunJSON(r.Context(), (*buf)[:0], key, r.PathValue("id"))
	*buf = b
	if apiErr != nil {
		apiErr.write(w)
		return
	}
	// The stored document is the answer: served as stored, not decoded and
	// encoded again.
	writeRaw(w, http.StatusOK, b)
}

// RunJSON appends to dst the stored document of the key's account's run
// id, as GET /v1/extractions/{id} answers it; an id of another account is
// not_found like an unknown one.
func (a *API) RunJSON(ctx context.Context, dst []byte, key store.Key, id string) ([]byte, *Error) {
	if !strings.HasPrefix(id, "ext_") {
		return dst, newError(http.StatusNotFound, "not_found", typeNotFound, fmt.Sprintf("no run %q in this account", id))
	}
	b, err := a.Store.GetRunJSON(ctx, dst, key.AccountID, id)
	if errors.Is(err, store.ErrNotFound) {
		// An async run in flight; or, settled between the two reads, the
		// stored run after all.
		ar, aerr := a.Store.GetAsyncRun(ctx, key.AccountID, id)
		if aerr == nil {
			return append(b, ar.Doc...), nil
		}
		if errors.Is(aerr, store.ErrNotFound) {
			b, err = a.Store.GetRunJSON(ctx, dst, key.AccountID, id)
		} else {
			err = aerr
		}
	}
	if errors.Is(err, store.ErrNotFound) {
		return b, newError(http.StatusNotFound, "not_found", typeNotFound, fmt.Sprintf("no run %q in this account", id))
	}
	if err != nil {
		a.Logger.Error("reading run", zap.Error(err))
		return b, storeUnavailable()
	}
	return b, nil
}
